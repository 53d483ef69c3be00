"""Which family of problems a log belongs to (HCCL, device visibility, NPU memory, ...), for the triage the bot
offers when it cannot name the exact error."""

from __future__ import annotations

from collections import Counter

import re2

from bot.corpus.loader import re2_options
from bot.corpus.schema import Family
from bot.engine.codes import CodeSighting
from bot.engine.root import RootAnalysis

MAX_LINE = 8_000


class FamilyDetector:
    def __init__(self, families: list[Family]):
        self.families = families
        self.by_id = {f.id: f for f in families}
        self._owner: list[str] = []
        self._set = re2.Set.SearchSet(re2_options())
        for family in families:
            for pattern in family.detect:
                self._set.Add(pattern)
                self._owner.append(family.id)
        self._set.Compile()

    def of_line(self, line: str) -> list[str]:
        if not self._owner:
            return []
        hits = self._set.Match(line[:MAX_LINE]) or ()
        return list(dict.fromkeys(self._owner[i] for i in sorted(hits)))

    def detect(self, lines: list[str], error_lines: list[int], analysis: RootAnalysis, sightings: list[CodeSighting]) -> Family | None:
        """The root line's family first (its code, then its text); otherwise the family most error lines share,
        the earliest winning ties."""
        root = analysis.root
        if root is not None:
            for sighting in sightings:
                if sighting.line_no == root.line_no and sighting.family in self.by_id:
                    return self.by_id[sighting.family]
            for text in (root.cause, root.text):
                found = self.of_line(text)
                if found:
                    return self.by_id[found[0]]
        votes: Counter[str] = Counter()
        first_seen: dict[str, int] = {}
        for i in error_lines:
            if i in analysis.consequences:
                continue
            for fid in self.of_line(lines[i]):
                votes[fid] += 1
                first_seen.setdefault(fid, i)
        for sighting in sightings:
            if sighting.family in self.by_id:
                votes[sighting.family] += 1
                first_seen.setdefault(sighting.family, sighting.line_no)
        if not votes:
            return None
        best = max(votes, key=lambda fid: (votes[fid], -first_seen[fid]))
        return self.by_id[best]
