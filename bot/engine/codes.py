"""Resolve MindIE error codes (MIE05E…), their enum names and aliases found in a log."""

from __future__ import annotations

from dataclasses import dataclass

import re2

from bot.corpus.loader import Corpus, re2_options
from bot.corpus.schema import ErrorCodeRow

_CODE = r"MIE\d{2}[EWI][0-9A-F]{6,7}"
_NAME = r"(?:TEXT_GENERATOR|ATB_MODELS|BACKEND|LLM_MANAGER)_[A-Z0-9_]+"


@dataclass
class CodeSighting:
    row: ErrorCodeRow
    line_no: int


class CodeResolver:
    def __init__(self, corpus: Corpus):
        self._rows = corpus.codes
        self._by_key: dict[str, ErrorCodeRow] = {}
        for row in self._rows:
            self._by_key[row.code] = row
            self._by_key[row.name] = row
            for alias in row.aliases:
                self._by_key[alias.upper()] = row
        alias_alt = "|".join(re2.escape(a) for r in self._rows for a in r.aliases)
        pattern = rf"(?i)\b({_CODE}|{_NAME}{'|' + alias_alt if alias_alt else ''})\b"
        self._finder = re2.compile(pattern, re2_options())

    def find(self, lines: list[str]) -> list[CodeSighting]:
        """Known codes in order of first appearance, each once."""
        seen: dict[str, CodeSighting] = {}
        for line_no, line in enumerate(lines):
            upper = line.upper()
            if "MIE" not in upper and "_" not in line and "ECC" not in upper:  # cheap skip for the common line
                continue
            for found in self._finder.finditer(line[:8000]):
                token = found.group(1)
                row = self._by_key.get(token) or self._by_key.get(token.upper())
                if row is not None and row.code not in seen:
                    seen[row.code] = CodeSighting(row, line_no)
        return list(seen.values())
