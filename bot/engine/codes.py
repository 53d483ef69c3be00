"""Recognise vendor error codes in a log: MindIE (MIE0xE…, every module), CANN (EE1001, EZ9999, …) and ACL return
codes (107001, 507011, …), resolved against the corpus tables; a code that no table lists still gets its module
and family from its prefix."""

from __future__ import annotations

from dataclasses import dataclass

import re2

from bot.corpus.loader import Corpus, re2_options
from bot.corpus.schema import Bilingual, CatalogueCode, CodePrefix, ErrorCodeRow

MAX_LINE = 8_000
_MINDIE = r"MIE\d{2}[EWI][0-9A-F]{6,7}"
_NAME = r"(?:TEXT_GENERATOR|ATB_MODELS|BACKEND|LLM_MANAGER)_[A-Z0-9_]+"
# CANN codes are E + a letter or digit + four digits (EE1001, EZ9999, E39999). glog's "E0603 11:02:19" has only four
# digits after the E, so it never matches.
_CANN = r"E[A-Z0-9]\d{4}"
# ACL return codes are bare six-digit numbers: only read next to words that introduce a return code.
_ACL = (r"(?:error[ _]?code|errorcode|err[ _]?no|ret(?:urn)?(?:[ _]?code)?|result|status|acl[A-Za-z]*(?: failed)?)"
        r"[^0-9\n]{0,12}?\b([1-5]\d{5})\b")


@dataclass
class CodeSighting:
    """One code found in the user's text, and everything the corpus knows about it."""

    code: str
    system: str  # "mindie" | "cann" | "acl"
    line_no: int
    row: ErrorCodeRow | None = None  # the MindIE LLM table (error-codes.yaml)
    known: CatalogueCode | None = None  # a catalogue row
    prefix: CodePrefix | None = None  # what the code's leading characters say when no row lists it

    @property
    def entry(self) -> str | None:
        if self.row is not None:
            return self.row.entry
        return self.known.entry if self.known is not None else None

    @property
    def family(self) -> str | None:
        if self.known is not None and self.known.family:
            return self.known.family
        if self.prefix is not None:
            return self.prefix.family
        return "mindie-error" if self.system == "mindie" else None

    @property
    def listed(self) -> bool:
        return self.row is not None or self.known is not None

    def name(self) -> str:
        if self.row is not None:
            return self.row.name
        return (self.known.name or "") if self.known is not None else ""

    def module(self, lang: str) -> str:
        if self.row is not None:
            return f"MindIE LLM {self.row.group}"
        if self.known is not None:
            return self.known.module
        if self.prefix is not None:
            return self.prefix.module.get(lang)
        return ""

    def meaning(self, lang: str) -> str | None:
        if self.row is not None:
            return self.row.meaning.get(lang)
        return self.known.meaning.get(lang) if self.known is not None else None


class CodeResolver:
    def __init__(self, corpus: Corpus):
        self._by_key: dict[str, ErrorCodeRow] = {}
        for row in corpus.codes:
            self._by_key[row.code] = row
            self._by_key[row.name] = row
            for alias in row.aliases:
                self._by_key[alias.upper()] = row
        self._known: dict[tuple[str, str], CatalogueCode] = {}
        self._prefixes: dict[str, list[CodePrefix]] = {}
        for catalogue in corpus.catalogues:
            for code in catalogue.codes:
                self._known[(catalogue.system, code.code.upper())] = code
            # longest prefix first, so "MIE04" wins over "MIE"
            self._prefixes[catalogue.system] = sorted(catalogue.prefixes, key=lambda p: -len(p.prefix))
        aliases = "|".join(re2.escape(a) for r in corpus.codes for a in r.aliases)
        options = re2_options()
        self._named = re2.compile(rf"(?i)\b({_MINDIE}|{_NAME}{'|' + aliases if aliases else ''})\b", options)
        self._cann = re2.compile(rf"\b({_CANN})\b", options)
        self._acl = re2.compile(rf"(?i){_ACL}", options)

    def _prefix(self, system: str, code: str) -> CodePrefix | None:
        return next((p for p in self._prefixes.get(system, []) if code.startswith(p.prefix.upper())), None)

    def _resolve(self, token: str, system: str, line_no: int) -> CodeSighting | None:
        upper = token.upper()
        if system == "mindie":
            row = self._by_key.get(token) or self._by_key.get(upper)
            if row is not None:
                return CodeSighting(row.code, "mindie", line_no, row=row)
            if not re2.fullmatch(_MINDIE, upper):
                return None
        known = self._known.get((system, upper))
        prefix = self._prefix(system, upper)
        if system != "mindie" and known is None and prefix is None:
            return None  # an unlisted E-code or number with no known prefix is more likely something else
        return CodeSighting(upper, system, line_no, known=known, prefix=prefix)

    def find(self, lines: list[str]) -> list[CodeSighting]:
        """Codes in order of first appearance, each once."""
        seen: dict[str, CodeSighting] = {}
        for line_no, raw in enumerate(lines):
            line = raw[:MAX_LINE]
            found: list[tuple[str, str]] = []
            upper = line.upper()
            if "MIE" in upper or "_" in line or "ECC" in upper:  # cheap skip for the common line
                found += [(m.group(1), "mindie") for m in self._named.finditer(line)]
            if "E" in line:
                found += [(m.group(1), "cann") for m in self._cann.finditer(line)]
            found += [(m.group(1), "acl") for m in self._acl.finditer(line)]
            for token, system in found:
                sighting = self._resolve(token, system, line_no)
                if sighting is not None and sighting.code not in seen:
                    seen[sighting.code] = sighting
        return list(seen.values())


def describe_unlisted(sighting: CodeSighting) -> Bilingual:
    """What the reply says of a code that no table lists."""
    module_en, module_zh = sighting.module("en"), sighting.module("zh")
    if module_en:
        return Bilingual(en=f"not in the code tables; by its prefix it comes from {module_en}",
                         zh=f"不在错误码表中；按前缀判断来自 {module_zh}")
    return Bilingual(en="not in the code tables", zh="不在错误码表中")
