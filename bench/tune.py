"""Grid-search the fusion parameters and threshold on the development set only (eval/queries.jsonl).

No other set in eval/ is read here; eval/README.md says which of them is still an honest estimate.
Usage: python bench/tune.py
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.engine.engine import Engine  # noqa: E402
from bot.engine.fusion import DEFAULT_PARAMS, dense_evidence, fuse, lexical_evidence  # noqa: E402
from bot.engine.normalize import prepare  # noqa: E402
from bot.evaluation import load_queries  # noqa: E402
from bot.settings import Settings  # noqa: E402


def raw_scores(engine: Engine, text: str):
    """What tuning varies over: raw BM25 scores and cosines (before they become evidence)."""
    p = prepare(text)
    n = len(engine.entries)
    sig = np.zeros(n, dtype=np.float32)
    matches = engine.signatures.match(p.lines)
    engine._add_code_matches(matches, engine.codes.find(p.lines))
    for eid, m in matches.items():
        sig[engine.position[eid]] = m.score
    lex = engine.lexical.scores(p.focus)
    readable = engine.dense.embedder.readability(p.focus)
    cos = engine.dense.index.scores(engine.embed(p.focus)) if readable > 0 else np.full(n, -1.0, dtype=np.float32)
    return p, sig, lex, cos, readable


def main() -> None:
    engine = Engine.from_settings(Settings())
    queries = load_queries(Path("eval/queries.jsonl"))
    cached = []
    for q in queries:
        cached.append((q, *raw_scores(engine, q.query)))
    ids = [e.id for e in engine.entries]
    grid = {
        "lexical_half": [3.0, 5.0, 7.0],
        "relative_lexical": [0.5, 0.8],
        "dense_floor": [0.35, 0.4, 0.45],
        "dense_ceiling": [0.7, 0.8, 0.9],
        "w_lexical": [0.6, 0.75, 0.9],
        "w_dense": [0.75, 0.9],
        "w_lexical_alone": [0.75, 0.85, 0.95],
    }
    best = []
    for values in itertools.product(*grid.values()):
        params = replace(DEFAULT_PARAMS, **dict(zip(grid, values)))
        fused_all = []
        for q, prepared, sig, lex, cos, readable in cached:
            fused = fuse(sig, lexical_evidence(lex, params), dense_evidence(cos, params) * readable, params, readable=readable)
            fused = engine._adjust(fused, sig, engine.scope.foreign_label(prepared.text), [])
            fused_all.append((q, fused))
        for threshold in (0.35, 0.4, 0.45, 0.5, 0.55, 0.6):
            on = top1 = off = off_ok = abst = 0
            for q, fused in fused_all:
                top = int(np.argmax(fused))
                answered = fused[top] >= threshold
                if q.expected:
                    on += 1
                    top1 += answered and ids[top] in q.expected
                    abst += not answered
                else:
                    off += 1
                    off_ok += not answered
            score = top1 / on + 0.5 * off_ok / off - 2 * max(0.0, abst / on - 0.02)
            best.append((score, top1 / on, off_ok / off, abst / on, threshold, values))
    best.sort(reverse=True)
    print("keys:", list(grid))
    for row in best[:15]:
        print(f"score {row[0]:.3f} top1 {row[1]:.3f} offtopic-abstain {row[2]:.3f} wrongly-abstained {row[3]:.3f} threshold {row[4]} {row[5]}")


if __name__ == "__main__":
    main()
