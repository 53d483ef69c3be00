"""Which family of problems a log belongs to (HCCL, device visibility, NPU memory, ...), for the triage the bot
offers when it cannot name the exact error."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import chain

import re2

from bot.corpus.loader import re2_options
from bot.corpus.schema import Family
from bot.engine.codes import CodeSighting
from bot.engine.root import RootAnalysis

MAX_LINE = 8_000
GENERIC_CODE_FAMILY = "cann-error"  # the family of any CANN / ACL code, whatever failed
PROSE_LINES = 300  # a paste's own description sits at its top; bound the work on long logs


class FamilyDetector:
    def __init__(self, families: list[Family]):
        self.families = families
        self.by_id = {f.id: f for f in families}
        self._owner, self._set = self._compile(families, ("detect",))
        self._prose_owner, self._prose_set = self._compile(families, ("detect", "mentions"))

    @staticmethod
    def _compile(families: list[Family], kinds: tuple[str, ...]) -> tuple[list[str], re2.Set]:
        owner: list[str] = []
        regex_set = re2.Set.SearchSet(re2_options())
        for family in families:
            for kind in kinds:
                for pattern in getattr(family, kind):
                    regex_set.Add(pattern)
                    owner.append(family.id)
        regex_set.Compile()
        return owner, regex_set

    def of_line(self, line: str) -> list[str]:
        return self._families_of(line, self._owner, self._set)

    @staticmethod
    def _families_of(line: str, owner: list[str], regex_set: re2.Set) -> list[str]:
        if not owner:
            return []
        hits = regex_set.Match(line[:MAX_LINE]) or ()
        return list(dict.fromkeys(owner[i] for i in sorted(hits)))

    def from_prose(self, lines: list[str]) -> Family | None:
        """For a not-recognised reply whose error lines named no family: the family the person's own words
        describe ("310P 不支持 bf16", "returns garbled text"), over the top of the paste; most lines win, then the
        earliest."""
        return self._most_voted((i, fid) for i, line in enumerate(lines[:PROSE_LINES])
                                for fid in self._families_of(line, self._prose_owner, self._prose_set))

    def _most_voted(self, votes_in: Iterable[tuple[int, str]]) -> Family | None:
        """The family named by the most (line, family) votes, the earliest line winning ties."""
        votes: Counter[str] = Counter()
        first_seen: dict[str, int] = {}
        for line_no, fid in votes_in:
            votes[fid] += 1
            first_seen.setdefault(fid, line_no)
        if not votes:
            return None
        return self.by_id[max(votes, key=lambda fid: (votes[fid], -first_seen[fid]))]

    def detect(self, lines: list[str], error_lines: list[int], analysis: RootAnalysis, sightings: list[CodeSighting]) -> Family | None:
        """The root line's family first (its code, then its text); otherwise the family most error lines share,
        the earliest winning ties."""
        root = analysis.root
        if root is not None:
            named = next((found[0] for text in (root.cause, root.text) if (found := self.of_line(text))), None)
            # A generic CANN code on the line says less than what its words name: "HCCL function error: ... EZ9999",
            # "call aclnnMoeDistributeDispatchV4 failed ... EZ9999" are HCCL's, "NPU out of memory ... EL0004" memory's.
            if named is not None and named != GENERIC_CODE_FAMILY:
                return self.by_id[named]
            for sighting in sightings:
                if sighting.line_no == root.line_no and sighting.family in self.by_id:
                    return self.by_id[sighting.family]
            if named is not None:
                return self.by_id[named]
        from_lines = ((i, fid) for i in error_lines if i not in analysis.consequences for fid in self.of_line(lines[i]))
        from_codes = ((s.line_no, s.family) for s in sightings if s.family in self.by_id)
        return self._most_voted(chain(from_lines, from_codes))
