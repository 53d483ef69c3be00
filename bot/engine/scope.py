"""Recognise pastes that belong to another stack (CUDA, Java, databases, ...) rather than to MindIE."""

from __future__ import annotations

import re2

from bot.corpus.loader import re2_options
from bot.corpus.schema import Scope

SCAN_CHARS = 200_000  # scope markers show up early; bound the work on huge pastes


class ScopeFilter:
    def __init__(self, scope: Scope):
        options = re2_options()
        self._foreign = [(rule.label, re2.compile(rule.pattern, options)) for rule in scope.foreign]
        self._outweighs_weak = [re2.compile(rule.pattern, options) for rule in scope.foreign if rule.outweighs_weak]
        self._domain = [re2.compile(rule.pattern, options) for rule in scope.domain if not rule.weak]
        self._weak_domain = [re2.compile(rule.pattern, options) for rule in scope.domain if rule.weak]

    def names_domain(self, text: str) -> bool:
        """Whether the text names anything of MindIE / Ascend (a product, a package, a chip, a CANN code), or at
        least an NPU without naming another vendor's NPU stack."""
        sample = text[:SCAN_CHARS]
        if any(p.search(sample) for p in self._domain):
            return True
        return any(p.search(sample) for p in self._weak_domain) and not any(p.search(sample) for p in self._outweighs_weak)

    def foreign_label(self, text: str) -> str | None:
        """The label of the other stack this text is about, or None when it is (or may be) MindIE's."""
        sample = text[:SCAN_CHARS]
        if self.names_domain(sample):
            return None
        return next((label for label, p in self._foreign if p.search(sample)), None)
