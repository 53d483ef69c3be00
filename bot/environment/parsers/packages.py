"""Python packages: `pip list`, `pip freeze`, `conda list`, collect_env's "[pip3] torch==2.5.1" / "[conda] ..." lines,
and "name==version" wherever it is written (an install command only says what the user meant to install)."""

from __future__ import annotations

import re

from bot.environment.parsers import HINT, MAX_LINE, TEXT, TOOL, Parsed

# pip normalises names (PEP 503); the components the check knows about, by normalised name.
PACKAGES: dict[str, str] = {
    "torch": "torch",
    "torch-npu": "torch_npu",
    "torchvision": "torchvision",
    "transformers": "transformers",
    "vllm": "vllm",
    "vllm-ascend": "vllm_ascend",
    "mindie-llm": "mindie",
    "mindie-motor": "mindie",
    "mindie-turbo": "mindie_turbo",
    "atb-llm": "atb_models",
    "triton-ascend": "triton_ascend",
}

_NAME = r"[A-Za-z0-9][A-Za-z0-9._\-]*"
_VERSION = r"v?\d[\w.+\-!]*"
_PREFIX = re.compile(r"^\s*\[(pip3?|conda)\]\s+")
_ROW = re.compile(rf"^\s*({_NAME})\s+({_VERSION})(?:\s+(\S+)){{0,3}}\s*$")
_FREEZE = re.compile(rf"^\s*({_NAME})==({_VERSION})\s*$")  # pip writes no spaces; "torch ==2.1" was typed
_AT_WHEEL = re.compile(rf"^\s*({_NAME})\s+@\s+\S*?/({_NAME}?)-(\d[\w.+!]*?)-(?:cp|py)\d")
_INLINE = re.compile(rf"(?<![\w.\-])({_NAME})\s*==\s*({_VERSION})(?![\w.])")
_HEADER = re.compile(r"^\s*(?:#\s*)?(?:Package|Name)\s+Version\b", re.IGNORECASE)
_RULE = re.compile(r"^\s*-{3,}(?:\s+-{3,})+\s*$")
_INSTALL = re.compile(r"\bpip3?\s+install\b|\bconda\s+install\b|\buv\s+pip\b", re.IGNORECASE)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(lines: list[str]) -> Parsed:
    out = Parsed()
    listing: list[int] = []  # lines shaped like "name version": a listing when several follow one another
    for i, raw in enumerate(lines):
        if len(raw) > MAX_LINE or (len(raw.split()) > 6 and "==" not in raw):
            continue  # a listing row has a name, a version and at most a few more columns; log lines have more
        prefix = _PREFIX.match(raw)
        line = raw[prefix.end():] if prefix else raw
        source = f"collect_env ({prefix.group(1)})" if prefix else None
        if _HEADER.match(line) or _RULE.match(line):
            out.consumed.add(i)
            continue
        if (frozen := _FREEZE.match(line)) is not None:
            _add(out, frozen.group(1), frozen.group(2), source or "pip freeze", i, TOOL)
            continue
        if (wheel := _AT_WHEEL.match(line)) is not None:
            _add(out, wheel.group(1), wheel.group(3), "pip freeze", i, TOOL)
            continue
        if (row := _ROW.match(line)) is not None:
            listing.append(i)
            if normalise(row.group(1)) in PACKAGES:
                _add(out, row.group(1), row.group(2), source or "pip list", i, TOOL if prefix or _in_listing(lines, i) else TEXT)
            continue
        for inline in _INLINE.finditer(line):
            trust = HINT if _INSTALL.search(line) else TEXT
            _add(out, inline.group(1), inline.group(2), "install command" if trust == HINT else "text", i, trust)
    out.consumed |= _runs(listing)
    return out


def _add(out: Parsed, name: str, version: str, source: str, line: int, trust: int) -> None:
    component = PACKAGES.get(normalise(name))
    if component is None:
        return
    out.add(component, version.lstrip("vV"), source, line, trust)


def _in_listing(lines: list[str], i: int) -> bool:
    """A "torch 2.1.0" line is tool output when its neighbours are listing rows too (pip list, conda list, grep)."""
    near = [j for j in (i - 2, i - 1, i + 1, i + 2) if 0 <= j < len(lines)]
    shaped = sum(1 for j in near if len(lines[j]) <= MAX_LINE and (_ROW.match(_PREFIX.sub("", lines[j])) or _HEADER.match(lines[j])))
    return shaped >= 1


def _runs(rows: list[int]) -> set[int]:
    """Rows that belong to a run of at least three consecutive listing rows."""
    out: set[int] = set()
    run: list[int] = []
    for i in rows + [-10]:
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if len(run) >= 3:
            out.update(run)
        run = [i]
    return out
