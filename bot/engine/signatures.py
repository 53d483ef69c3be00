"""The signature retriever: every entry's RE2 regexes over every log line, in linear time (RE2 sets pick the few
patterns a paste can match, then only those are run line by line)."""

from __future__ import annotations

from dataclasses import dataclass, field

import re2

from bot.corpus.loader import Corpus, re2_options
from bot.corpus.schema import Entry
from bot.engine.normalize import JoinedLines

MAX_LINE_CHARS = 8_000  # longer lines are matched on their head; RE2 is linear, this only bounds total work
CONTEXT_CHARS = 200_000  # a chip or product a context pattern looks for is named early; bound the work
# Patterns per RE2 set, and each set's memory budget. A set's DFA caches the states it has met; one 512-pattern set
# outgrew its 8 MB and rebuilt its cache on nearly every line (2 ms of a 4 ms answer). Sets of 64 with 8 MB each stay
# warm: the sets read a paste's text once, then only the patterns they name are run line by line (0.1 ms an answer
# on text the DFAs have met, about 0.3 ms on new text, whose states they build; 26 ms for 1 MB of log); 12 sets at
# 707 signatures bound their DFAs together to about 100 MB.
SET_CHUNK = 64
SET_MAX_MEM = 8 << 20


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
        self._multiline: list[re2._Regexp] = []  # the same patterns, on bytes, with ^ and $ at every line of a joined text
        self._also: list[list[str]] = []
        self._context: list[list[re2._Regexp]] = []
        for entry in entries:
            for sig in entry.signatures:
                self._patterns.append((entry.id, sig.weight, sig.role, re2.compile(sig.pattern, options)))
                self._multiline.append(re2.compile(("(?m)" + sig.pattern).encode(), options))
                self._also.append(list(sig.also))
                self._context.append([re2.compile(c, options) for c in sig.context])
        self._sets: list[tuple[int, re2.Set]] = []
        set_options = re2_options()
        set_options.max_mem = SET_MAX_MEM
        for start in range(0, len(self._patterns), SET_CHUNK):
            rset = re2.Set.SearchSet(set_options)
            for multiline in self._multiline[start : start + SET_CHUNK]:
                rset.Add(multiline.pattern)  # bytes: the sets read the joined text as bytes
            rset.Compile()  # the wrapper reports nothing; tests/test_corpus.py checks the sets against each pattern
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

        text = JoinedLines([line[:MAX_LINE_CHARS] for line in lines])
        # The sets read the whole text once, their patterns in multi-line mode (a line's ^ and $ still hold), and name
        # the few patterns that match somewhere; only those are then looked for line by line. A multi-line match
        # may run across lines, so each candidate line is confirmed by the pattern on that line alone.
        for index in sorted(self._candidates(text.data)):
            entry_id, weight, role, compiled = self._patterns[index]
            if not all(in_paste(rx) for rx in self._context[index]):
                continue
            for n in text.matching(self._multiline[index]):
                line = text.lines[n]
                if not line.strip() or any(needed not in line for needed in self._also[index]):
                    continue
                found = compiled.search(line)
                if found is None:
                    continue
                captures = {k: v for k, v in found.groupdict().items() if v}
                em = results.setdefault(entry_id, EntryMatch(entry_id))
                em.lines.append(LineMatch(numbers[n] if numbers is not None else n, weight, captures, role))
                em.score = max(em.score, weight)
        for em in results.values():
            em.lines.sort(key=lambda m: m.line_no)
        return results

    def _candidates(self, joined: bytes) -> set[int]:
        found: set[int] = set()
        for start, rset in self._sets:
            found.update(start + local for local in (rset.Match(joined) or ()))
        return found

