"""Questions about which releases go together ("which torch_npu does vllm-ascend 0.9.1 need?", "MindIE 2.1.RC1
配套哪个 CANN"): the compatibility table's row for each release the question names, with the table's source.

Only a question is looked up: a short text that asks which versions fit. In a pasted log, versions are facts of
the machine and the checker holds them against each other instead.
"""

from __future__ import annotations

import re2

from bot.corpus.compat import CompatTable
from bot.corpus.loader import re2_options
from bot.environment.models import Release, ReleasePart
from bot.environment.versions import parse_version

QUESTION_LINES = 8  # longer texts are pastes, whose versions the checker reads as facts
QUESTION_CHARS = 2_000

_OPTIONS = re2_options()
# Words that ask which versions fit together, in both languages.
_ASKS = re2.compile(
    r"(?i)\b(?:which|what)\b[^\n]{0,40}\b(?:versions?|releases?|cann|torch[-_ ]?npu|torch|vllm|driver|python|mindie)\b"
    r"|\bcompatib\w*|\bgo(?:es)? (?:together|with)\b|\bmatch(?:es|ing)?\b|\bcorrespond\w*"
    r"|\b(?:need|needs|require|requires|required)\b[^\n]{0,40}\bversions?\b|\bversions?\b[^\n]{0,40}\b(?:need|needs|require|requires|required)\b"
    r"|配套|对应|兼容|匹配|哪个版本|哪一?版|什么版本|几版本|需要[^\n]{0,12}版本|要求[^\n]{0,12}版本|版本[^\n]{0,8}(?:要求|多少)",
    _OPTIONS,
)
_VERSION = r"v?(?P<v>\d+\.\d+(?:\.\d+)?(?:\.?(?:RC|rc|T|alpha|beta|post|dev)\d+)*(?:\.\d+)?)"
# (component, pattern): the product's name, then its version with at most a "version"/"版本"/"==" between.
_MENTIONS: list[tuple[str, re2._Regexp]] = [
    (component, re2.compile(rf"(?i)(?:^|[^\w-]){name}(?:[\s:=]|版本|version){{0,12}}{_VERSION}\b", _OPTIONS))
    for component, name in (
        ("vllm_ascend", r"vllm[-_ ]?ascend"),
        ("mindie", r"mindie"),
        ("torch_npu", r"torch[-_ ]?npu"),
        ("cann", r"cann"),
    )
]
_LIMIT = 3  # a question names one or two releases; more is a list, not a question


def looks_like_question(text: str) -> bool:
    head = text[:QUESTION_CHARS]
    return head.count("\n") < QUESTION_LINES and _ASKS.search(head) is not None


def releases_asked(text: str, table: CompatTable) -> list[Release]:
    """The table rows of the releases a compatibility question names (none when it is not such a question, or when
    the table has no row for what it names: the bot never guesses a combination)."""
    if not looks_like_question(text):
        return []
    head = text[:QUESTION_CHARS]
    found: list[Release] = []
    for component, pattern in _MENTIONS:
        for match in pattern.finditer(head):
            release = _look_up(component, match.group("v"), table)
            if release is not None and release not in found:
                found.append(release)
            if len(found) >= _LIMIT:
                return found
    return found


def _look_up(component: str, raw: str, table: CompatTable) -> Release | None:
    version = parse_version(raw)
    # Each component has a list of rows of its own name in the table, keyed by a field of that name too.
    row = next(iter(table.find(getattr(table, component), component, version)), None)
    if row is None:
        return None
    if component == "vllm_ascend":
        parts = [("vllm", " / ".join(row.vllm)), ("cann", row.cann), ("torch", row.torch), ("torch_npu", row.torch_npu),
                 ("python", f">= {row.python_min}, < {row.python_below}")]
        if row.triton_ascend:
            parts.append(("triton_ascend", row.triton_ascend))
        return _release(component, row.vllm_ascend, parts, row.source)
    if component == "mindie":
        parts = [("cann", " / ".join(row.cann))]
        if row.torch:
            parts.append(("torch", " / ".join(row.torch)))
        if row.python:
            parts.append(("python", " / ".join(row.python)))
        if row.driver_min:
            parts.append(("driver", f">= {row.driver_min}"))
        if row.glibc_min:
            parts.append(("glibc", f">= {row.glibc_min}"))
        return _release(component, row.mindie, parts, row.source)
    if component == "torch_npu":
        return _release(component, row.torch_npu, [("torch", row.torch), ("cann", row.cann)], row.source)
    if row.driver_min and row.driver_paired:
        driver = f">= {row.driver_min} (HDK {row.driver_paired})"  # the oldest compatible, and the one released with it
    else:
        driver = f">= {row.driver_min}" if row.driver_min else f"HDK {row.driver_paired}"
    return _release(component, row.cann, [("driver", driver)], row.source)


def _release(component: str, version: str, parts: list[tuple[str, str]], source: str) -> Release:
    return Release(component=component, version=version,
                   goes_with=[ReleasePart(component=c, value=v) for c, v in parts], source=source)
