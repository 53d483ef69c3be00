"""Version strings as Ascend and PyPI write them, compared the way their release trains order them.

One scheme covers every component the environment check reads:
  CANN / MindIE   8.0.RC3 < 8.0.RC3.beta1 ... < 8.0.0 < 8.1.RC1   (an RC precedes the final of its minor)
  driver (HDK)    23.0.rc3 < 23.0.3 < 24.1.rc2 < 24.1.0 < 24.1.0.3 < 25.0.rc1.1
  pip packages    2.7.1rc1 < 2.7.1 < 2.5.1.post1.dev20250528 ... (PEP 440 order; "+cpu" local tags ignored)
Anything that does not fit returns None: a wrong version is worse than "unknown".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering

# Ranks of one component: pre-releases sort before the end of a version, numbers and post-releases after.
_PRE = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "t": 2, "rc": 3, "c": 3}
_END = 4
_NUM = 5
_POST = {"post": 6, "spc": 6, "p": 6}
_TOKEN = re.compile(r"[a-z]+|\d+")
_SHAPE = re.compile(r"^[0-9][0-9A-Za-z._-]*$")  # a plain character class: no backtracking on hostile input
_RC_GLUED = re.compile(r"^(\d+)\.(\d+)\.?rc(\d+)(.*)$", re.IGNORECASE)


@total_ordering
@dataclass(frozen=True)
class Version:
    text: str  # normalised spelling, e.g. "8.0.RC3", "2.5.1.post1", "24.1.rc3"
    key: tuple[tuple[int, int], ...] = field(repr=False, compare=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and _trim(self.key) == _trim(other.key)

    def __hash__(self) -> int:
        return hash(_trim(self.key))

    def __lt__(self, other: "Version") -> bool:
        return _padded(self.key, other.key) < _padded(other.key, self.key)

    def __str__(self) -> str:
        return self.text

    @property
    def numbers(self) -> tuple[int, ...]:
        """The leading run of plain numbers: (2, 5, 1) for 2.5.1.post1, (8, 0) for 8.0.RC3."""
        out = []
        for rank, value in self.key:
            if rank != _NUM:
                break
            out.append(value)
        return tuple(out)

    def base(self, n: int = 3) -> tuple[int, ...]:
        """The first n numbers (torch 2.10.0+cpu and torch_npu 2.10.0.post4 share base (2, 10, 0))."""
        return self.numbers[:n]

    def same_base(self, other: "Version", n: int = 3) -> bool:
        """Same release as far as both say: a typed "torch 2.1" matches 2.1.0, never 2.2.0."""
        mine, theirs = self.base(n), other.base(n)
        shortest = min(len(mine), len(theirs))
        return shortest > 0 and mine[:shortest] == theirs[:shortest]

    @property
    def is_dev(self) -> bool:
        """A development build (…dev1908, …dev20250724): not a release any table lists, unless listed exactly."""
        return any(rank == _PRE["dev"] for rank, _ in self.key)

    def series(self) -> str:
        """The release train a CANN / MindIE version belongs to: the first three components
        (8.0.RC3.beta1 -> 8.0.RC3, 8.5.0.alpha002 -> 8.5.0, 7.0.RC1.3 -> 7.0.RC1)."""
        parts: list[str] = []
        for rank, value in self.key[:3]:
            parts.append(str(value) if rank == _NUM else f"RC{value}" if rank == _PRE["rc"] else "?")
        return ".".join(parts)

    def same_series(self, other: "Version") -> bool:
        return self.series() == other.series() and "?" not in self.series()


def _trim(key: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Trailing zeros do not change a version (2.1 == 2.1.0)."""
    out = list(key)
    while out and out[-1] == (_NUM, 0):
        out.pop()
    return tuple(out)


def _padded(key: tuple[tuple[int, int], ...], other: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Missing trailing components count as 0 when the other side has a number there, else as the end."""
    out = list(key)
    for i in range(len(key), len(other)):
        out.append((_NUM, 0) if other[i][0] == _NUM else (_END, 0))
    return tuple(out + [(_END, 0)])


def parse_version(raw: str | None) -> Version | None:
    """Parse a version as written in a paste; None when it is not recognisably one."""
    if raw is None:
        return None
    text = raw.strip().strip("`'\"").split("+", 1)[0].strip()  # local tags (+cpu, +empty, +git4c901a4) say nothing
    if text[:1] in ("v", "V") and text[1:2].isdigit():
        text = text[1:]
    if not text or len(text) > 40 or not _SHAPE.match(text):
        return None
    key: list[tuple[int, int]] = []
    pending: str | None = None  # a word waiting for its number ("rc" then "1")
    for token in _TOKEN.findall(text.lower()):
        if token.isdigit():
            number = int(token[:9])
            if pending is None:
                key.append((_NUM, number))
            else:
                key.append((_rank(pending), number))
                pending = None
            continue
        if pending is not None or _rank(token) is None:
            return None  # an unknown word ("linux", "abc") or two words in a row
        pending = token
    if pending is not None:
        key.append((_rank(pending), 0))
    if not key or key[0][0] != _NUM:
        return None
    return Version(text=_spell(text), key=tuple(key))


def _rank(word: str) -> int | None:
    if word in _PRE:
        return _PRE[word]
    if word in _POST:
        return _POST[word]
    return None


def _spell(text: str) -> str:
    """Ascend writes release candidates as 8.1.RC1; pip shows them as 8.1rc1. Keep one spelling for display."""
    glued = _RC_GLUED.match(text)
    if glued:
        major, minor, n, rest = glued.groups()
        if int(major) < 20:  # CANN / MindIE style; drivers (24.1.rc3) keep their lower-case spelling
            return f"{major}.{minor}.RC{n}{rest}"
    return text


def python_series(raw: str | None) -> str | None:
    """'3.10.16' -> '3.10'; None unless it is a CPython 3.x version."""
    version = parse_version(raw)
    if version is None or len(version.numbers) < 2 or version.numbers[0] != 3:
        return None
    return f"{version.numbers[0]}.{version.numbers[1]}"
