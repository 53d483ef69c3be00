"""The signature retriever: every entry's RE2 regexes over every log line, in linear time."""

from __future__ import annotations

from dataclasses import dataclass, field

import re2

from bot.corpus.loader import Corpus, re2_options
from bot.corpus.schema import Entry

MAX_LINE_CHARS = 8_000  # longer lines are matched on their head; RE2 is linear, this only bounds total work
CONTEXT_CHARS = 200_000  # a chip or product a context pattern looks for is named early; bound the work
SET_CHUNK = 512  # patterns per RE2 set: large sets blow the DFA memory budget


@dataclass
class LineMatch:
    line_no: int  # 0-based
    weight: float
    captures: dict[str, str]
    role: str = "root"  # "consequence" for signatures on aftermath lines


@dataclass
class EntryMatch:
    entry_id: str
    score: float = 0.0
    lines: list[LineMatch] = field(default_factory=list)

    @property
    def first_line(self) -> int:
        return min(m.line_no for m in self.lines)

    def captures(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for m in sorted(self.lines, key=lambda m: -m.weight):
            for key, value in m.captures.items():
                out.setdefault(key, value)
        return out


class SignatureIndex:
    def __init__(self, entries: list[Entry]):
        options = re2_options()
        self._patterns: list[tuple[str, float, str, re2._Regexp]] = []
        self._also: list[list[str]] = []
        self._context: list[list[re2._Regexp]] = []
        for entry in entries:
            for sig in entry.signatures:
                self._patterns.append((entry.id, sig.weight, sig.role, re2.compile(sig.pattern, options)))
                self._also.append(list(sig.also))
                self._context.append([re2.compile(c, options) for c in sig.context])
        self._sets: list[tuple[int, re2.Set]] = []
        for start in range(0, len(self._patterns), SET_CHUNK):
            rset = re2.Set.SearchSet(options)
            for _, _, _, compiled in self._patterns[start : start + SET_CHUNK]:
                rset.Add(compiled.pattern)
            rset.Compile()
            self._sets.append((start, rset))

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> "SignatureIndex":
        return cls(corpus.entries)

    def __len__(self) -> int:
        return len(self._patterns)

    def match(self, lines: list[str], numbers: list[int] | None = None, whole: str | None = None) -> dict[str, EntryMatch]:
        """Score each entry by its strongest matching signature; keep the lines and captured values.
        `numbers` gives each line's number when the lines are excerpts of a longer text, and `whole` the text a
        signature's `context` is looked for in (default: the lines themselves)."""
        results: dict[str, EntryMatch] = {}
        seen: dict[str, bool] = {}  # context pattern -> found in the paste, looked up once per call

        def in_paste(rx: re2._Regexp) -> bool:
            nonlocal whole
            if rx.pattern not in seen:
                if whole is None:
                    whole = "\n".join(lines)
                seen[rx.pattern] = rx.search(whole[:CONTEXT_CHARS]) is not None
            return seen[rx.pattern]

        for n, line in enumerate(lines):
            line_no = numbers[n] if numbers is not None else n
            if not line.strip():
                continue
            line = line[:MAX_LINE_CHARS]
            for start, rset in self._sets:
                hits = rset.Match(line) or ()  # RE2 returns None when nothing matches
                for local in hits:
                    entry_id, weight, role, compiled = self._patterns[start + local]
                    if any(text not in line for text in self._also[start + local]):
                        continue
                    if not all(in_paste(rx) for rx in self._context[start + local]):
                        continue
                    found = compiled.search(line)
                    captures = {k: v for k, v in (found.groupdict() if found else {}).items() if v}
                    em = results.setdefault(entry_id, EntryMatch(entry_id))
                    em.lines.append(LineMatch(line_no, weight, captures, role))
                    em.score = max(em.score, weight)
        return results
