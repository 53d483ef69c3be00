"""The lexical retriever: BM25 (bm25s) over both languages' text of every entry."""

from __future__ import annotations

import bm25s
import numpy as np

from bot.corpus.schema import Entry
from bot.engine.documents import lexical_document
from bot.engine.text import tokenize


class LexicalIndex:
    def __init__(self, entries: list[Entry]):
        self.ids = [e.id for e in entries]
        self._bm25 = bm25s.BM25()
        corpus_tokens = [tokenize(lexical_document(e)) or ["_empty_"] for e in entries]
        self._bm25.index(corpus_tokens, show_progress=False)
        self._vocab = set(self._bm25.vocab_dict)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every entry, in corpus order (zeros when no query term is known)."""
        # Each term counts once: a log repeating one line ten thousand times must not outweigh a real error.
        tokens = list(dict.fromkeys(t for t in tokenize(query) if t in self._vocab))
        if not tokens:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)
