"""One parser per format a user pastes. Each reads the paste's lines and returns what it recognised; none of them
ever raises on odd input (a partial table, a wrapped line, a different locale): what it cannot read it skips.

Trust levels decide between two readings of the same component:
  TOOL   output of a tool (npu-smi, pip, *_install.info, version.cfg, python --version)
  TEXT   a "name: version" line the user typed or a script printed
  HINT   an image tag, a package file name or an install command: what the user meant to install
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.environment.models import NpuCard, NpuProcess

TOOL, TEXT, HINT = 3, 2, 1
MAX_LINE = 500  # environment lines are short (an npu-smi row is ~120 characters); longer ones are log noise


def worth(line: str, words: tuple[str, ...]) -> bool:
    """A cheap gate before a parser's regexes: plain substring tests keep a 1 MB log fast."""
    low = line.lower()
    return any(word in low for word in words)


@dataclass(frozen=True)
class RawFact:
    component: str
    value: str
    source: str
    line: int  # 0-based
    trust: int


@dataclass(frozen=True)
class Signal:
    """A line that says something is wrong by itself (npu-smi could not start, firmware and driver disagree)."""

    kind: str
    line: int
    detail: str


@dataclass
class Parsed:
    facts: list[RawFact] = field(default_factory=list)
    cards: list[NpuCard] = field(default_factory=list)
    processes: list[NpuProcess] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    consumed: set[int] = field(default_factory=set)  # lines recognised as environment output

    def add(self, component: str, value: str | None, source: str, line: int, trust: int) -> None:
        if value:
            self.facts.append(RawFact(component, value.strip(), source, line, trust))
        self.consumed.add(line)

    def merge(self, other: "Parsed") -> None:
        self.facts += other.facts
        self.cards += other.cards
        self.processes += other.processes
        self.signals += other.signals
        self.consumed |= other.consumed
