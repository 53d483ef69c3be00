"""Fit the confidence calibration (bot/engine/calibration.json) on the development sets only.

Training rows are the top candidates of every development query, labelled right or wrong: FAQ-written sets by their
expected entry ids, real-world reports by the thread's markers (an entry is right when its text holds one). Real
reports weigh more, because they are the traffic the bot meets. The honest sets (eval/unseen2.jsonl and
eval/realworld-heldout.jsonl) are never read here.

Usage: python bench/calibrate.py [--write]
"""

from __future__ import annotations

import argparse
import os
import json
import sys
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.engine.calibration import CALIBRATION_FILE, FEATURES, Calibrator, Features, Model, fit_signed, reliability  # noqa: E402
from bot.engine.engine import Engine  # noqa: E402
from bot.engine.normalize import prepare  # noqa: E402
from bot.evaluation import RealCase, entry_text, has_marker, load_set  # noqa: E402
from bot.settings import Settings  # noqa: E402

DEVELOPMENT = ("queries.jsonl", "dev2.jsonl", "holdout.jsonl", "unseen.jsonl", "realworld.jsonl", "realworld-dev2.jsonl")
CANDIDATES = 5  # per query: the answer and the runners-up the reply may show
REAL_WEIGHT = float(os.environ.get("CALIBRATE_REAL_WEIGHT", "2"))
L2 = 2.0


def rows_for(engine: Engine, items, texts: dict[str, str]):
    xs, ys, ws, tops = [], [], [], []
    for item in items:
        prepared = prepare(item.query, engine.settings.max_input_bytes)
        if not prepared.text.strip():
            continue
        ev = engine.evidence(prepared, {"signatures", "lexical", "dense"})
        fused = engine.fused(ev, prepared, [])
        features = engine.features(fused, ev, prepared).matrix
        real = isinstance(item, RealCase)
        for rank, i in enumerate(np.argsort(-fused, kind="stable")[:CANDIDATES]):
            entry_id = engine.entries[int(i)].id
            if real:
                right = item.kind == "diagnosable" and has_marker(texts[entry_id], item.markers)
            else:
                right = entry_id in item.expected
            xs.append(features[int(i)])
            ys.append(float(right))
            ws.append(REAL_WEIGHT if real else 1.0)
            if rank == 0:
                tops.append(len(xs) - 1)
    return xs, ys, ws, tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {CALIBRATION_FILE.relative_to(ROOT)}")
    args = parser.parse_args()
    engine = Engine.from_settings(Settings())
    engine.calibrator = Calibrator()  # features do not depend on it; start from the raw fused score
    texts = {e.id: entry_text(e) for e in engine.entries}
    x, y, w, tops = [], [], [], []
    for name in DEVELOPMENT:
        xs, ys, ws, ts = rows_for(engine, load_set(ROOT / "eval" / name), texts)
        tops += [t + len(x) for t in ts]
        x += xs
        y += ys
        w += ws
    X, Y, W = np.asarray(x), np.asarray(y), np.asarray(w)
    # Weighted fit by repeating rows (the weights are small integers).
    reps = np.repeat(np.arange(len(X)), W.astype(int))
    is_log = X[:, FEATURES.index("is_log")] > 0.5
    models = {}
    for name, rows in (("log", is_log[reps]), ("question", ~is_log[reps])):
        weights, bias = fit_signed(X[reps][rows], Y[reps][rows], l2=L2)
        models[name] = Model(weights, bias)
        print(f"{name} ({int(rows.sum())} weighted rows): " + ", ".join(f"{n}={v:+.2f}" for n, v in zip(FEATURES, weights) if v) + f", bias={bias:+.2f}")
    fitted = Calibrator(**models)
    conf = fitted.confidence(Features(X))
    rows, ece = reliability([float(conf[t]) for t in tops], [bool(Y[t]) for t in tops])
    print(f"{len(X)} candidate rows from {len(tops)} development queries; top-1 ECE after fitting {ece:.3f}")
    for r in rows:
        print(f"  {r['bin']}: {r['count']:4d} at {r['confidence']:.2f} -> {r['accuracy']:.0%}")
    if args.write:
        payload = {"features": list(FEATURES)}
        payload.update({k: {"weights": [round(float(v), 5) for v in m.weights], "bias": round(m.bias, 5)} for k, m in models.items()})
        payload.update({"real_weight": REAL_WEIGHT, "fitted_on": list(DEVELOPMENT), "fitted": date.today().isoformat(),
                        "corpus": engine.corpus.digest[:12]})
        CALIBRATION_FILE.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {CALIBRATION_FILE}")


if __name__ == "__main__":
    main()
