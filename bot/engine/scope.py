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

    def classify(self, text: str) -> tuple[bool, str | None]:
        """Whether the text names anything of MindIE / Ascend (a product, a package, a chip, a CANN code, or at least
        an NPU without naming another vendor's NPU stack); when it does not, the label of the other stack it plainly
        belongs to, or None. One pass over each pattern: the engine needs both answers for every query."""
        sample = text[:SCAN_CHARS]
        if any(p.search(sample) for p in self._domain):
            return True, None
        if any(p.search(sample) for p in self._weak_domain) and not any(p.search(sample) for p in self._outweighs_weak):
            return True, None
        return False, next((label for label, p in self._foreign if p.search(sample)), None)

    def foreign_label(self, text: str) -> str | None:
        """The label of the other stack this text is about, or None when it is (or may be) MindIE's."""
        return self.classify(text)[1]
