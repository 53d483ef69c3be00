"""Calibrated confidence: the chance that a candidate answer is right, from what the retrievers and the root-error
analysis say about it.

The fused noisy-OR score ranks well but does not mean a probability: on real reports wrong answers scored 0.46-0.73.
A logistic model over a few features (fused score, signature on the root line, family agreement, margin to the
runner-up...) is fitted on labelled development queries by `bench/calibrate.py` and stored as data next to this
module; without that file the fused score is used as it is.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
FEATURES = ("fused", "signature", "lexical", "dense", "on_root", "family_agrees", "family_differs", "margin",
            "is_log", "consequence_only", "foreign", "no_root_match", "length", "error_lines", "fused_x_length",
            "signature_x_log")
# The direction each feature may push confidence (0: either). A fitted weight against its direction is an
# artefact of correlated features, so fitting drops that feature rather than keep a rule nobody could defend.
SIGNS = {"fused": 1, "signature": 1, "lexical": 1, "dense": 1, "on_root": 1, "family_agrees": 1, "family_differs": -1,
         "margin": 1, "is_log": 0, "consequence_only": -1, "foreign": -1, "no_root_match": -1, "length": 0,
         "error_lines": 0, "fused_x_length": 0, "signature_x_log": 0}


@dataclass
class Features:
    """One row per entry; column order is FEATURES."""

    matrix: np.ndarray

    @classmethod
    def build(cls, **columns: np.ndarray) -> "Features":
        missing = [name for name in FEATURES if name not in columns]
        if missing:
            raise ValueError(f"missing features: {missing}")
        return cls(np.stack([np.asarray(columns[name], dtype=np.float64) for name in FEATURES], axis=1))


@dataclass(frozen=True)
class Model:
    weights: np.ndarray
    bias: float

    def apply(self, matrix: np.ndarray) -> np.ndarray:
        z = matrix @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


@dataclass(frozen=True)
class Calibrator:
    """One logistic model for pasted logs and one for questions: the same evidence means different things in a
    long real log (generic lines match symptom-level entries) and in a short question."""

    log: Model | None = None  # None: confidence = fused score
    question: Model | None = None

    @property
    def weights(self) -> np.ndarray | None:
        return self.log.weights if self.log is not None else None

    @classmethod
    def load(cls, path: Path = CALIBRATION_FILE) -> "Calibrator":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if list(data["features"]) != list(FEATURES):
                raise ValueError(f"fitted on features {data['features']}, the engine computes {list(FEATURES)}")
            models = {k: Model(np.asarray(data[k]["weights"], dtype=np.float64), float(data[k]["bias"])) for k in ("log", "question")}
            return cls(**models)
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("calibration_unusable path=%s reason=%s", path, exc)
            return cls()

    def confidence(self, features: Features) -> np.ndarray:
        matrix = features.matrix
        if self.log is None or self.question is None:
            return matrix[:, 0].astype(np.float32)
        is_log = matrix[:, FEATURES.index("is_log")] > 0.5
        return np.where(is_log, self.log.apply(matrix), self.question.apply(matrix)).astype(np.float32)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 50) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method (IRLS); small and dependency-free."""
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    penalty = np.eye(d + 1) * l2
    penalty[-1, -1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ w, -30, 30)))
        gradient = design.T @ (p - y) + penalty @ w
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


def fit_signed(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> tuple[np.ndarray, float]:
    """fit_logistic with every weight in the direction SIGNS allows: features that come out the wrong way are
    dropped (weight 0) one at a time, the worst first, and the rest refitted."""
    active = list(range(x.shape[1]))
    while True:
        weights, bias = fit_logistic(x[:, active], y, l2=l2)
        wrong = [(abs(w), j) for w, j in zip(weights, active) if SIGNS[FEATURES[j]] * w < 0]
        if not wrong:
            full = np.zeros(x.shape[1])
            full[active] = weights
            return full, bias
        active.remove(max(wrong)[1])


def reliability(confidences: list[float], correct: list[bool], bins: int = 10) -> tuple[list[dict], float]:
    """Confidence bins -> observed accuracy, and the expected calibration error (weighted mean gap)."""
    conf = np.asarray(confidences, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    rows: list[dict] = []
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = (conf >= lo) & ((conf < hi) if b < bins - 1 else (conf <= hi))
        count = int(inside.sum())
        if not count:
            continue
        mean_conf, accuracy = float(conf[inside].mean()), float(hit[inside].mean())
        rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "count": count, "confidence": mean_conf, "accuracy": accuracy})
        ece += count / len(conf) * abs(mean_conf - accuracy)
    return rows, float(ece)
