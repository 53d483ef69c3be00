"""Fuse the three retrievers into one calibrated confidence per entry.

Each retriever's raw score becomes evidence in [0, 1]; evidence is combined as a noisy-OR, so one strong
retriever is enough, agreement raises confidence, and the result reads as a probability-like confidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FusionParams:
    # Tuned on eval/queries.jsonl only (bench/tune.py); eval/README.md says which set is still an honest estimate.
    lexical_half: float = 5.0  # BM25 score at which lexical evidence reaches 0.5
    dense_floor: float = 0.40  # cosine at or below which dense evidence is 0
    dense_ceiling: float = 0.90  # cosine at or above which dense evidence is 1
    w_signatures: float = 1.0
    w_lexical: float = 0.75
    w_dense: float = 0.75
    relative_lexical: float = 0.8  # share of lexical evidence that depends on rank within this query
    # When the embedding model cannot read the query (Chinese under an English model), lexical search is the
    # only retriever that understands it, so its evidence weighs more: w_lexical at full readability,
    # w_lexical_alone at none.
    w_lexical_alone: float = 0.9


DEFAULT_PARAMS = FusionParams()


def lexical_evidence(bm25: np.ndarray, params: FusionParams = DEFAULT_PARAMS) -> np.ndarray:
    if not len(bm25) or float(bm25.max()) <= 0.0:
        return np.zeros_like(bm25)
    absolute = bm25 / (bm25 + params.lexical_half)
    relative = bm25 / float(bm25.max())
    # The best lexical match keeps its absolute strength; weaker ones fade by how far they trail it.
    return absolute * ((1.0 - params.relative_lexical) + params.relative_lexical * relative)


def dense_evidence(cosine: np.ndarray, params: FusionParams = DEFAULT_PARAMS) -> np.ndarray:
    span = params.dense_ceiling - params.dense_floor
    return np.clip((cosine - params.dense_floor) / span, 0.0, 1.0)


def fuse(
    signatures: np.ndarray, lexical: np.ndarray, dense: np.ndarray, params: FusionParams = DEFAULT_PARAMS, readable: float = 1.0
) -> np.ndarray:
    """Noisy-OR of the weighted evidence: every input and output lies in [0, 1]."""
    w_lexical = params.w_lexical + (params.w_lexical_alone - params.w_lexical) * (1.0 - readable)
    miss = (1.0 - params.w_signatures * signatures) * (1.0 - w_lexical * lexical) * (1.0 - params.w_dense * dense)
    return np.clip(1.0 - miss, 0.0, 1.0)
