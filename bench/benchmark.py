"""Speed and memory figures for the README. Prints a table; asserts nothing.

Usage: .venv/bin/python bench/benchmark.py [--skip-scale]
Measures: warm per-query latency against embedding the query alone, whole-corpus index build, start-up to
first answer (a fresh process), peak memory, a 1 MB pasted log, and a synthetic corpus 1,000x the real one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bot.corpus.loader import Corpus, load_corpus  # noqa: E402
from bot.engine import dense as dense_mod  # noqa: E402
from bot.engine.embedders import OnnxEmbedder, ONNX_DIR, SentenceTransformerEmbedder  # noqa: E402
from bot.engine.engine import DenseState, Engine  # noqa: E402
from bot.engine.normalize import prepare  # noqa: E402
from bot.evaluation import load_queries  # noqa: E402
from bot.settings import Settings  # noqa: E402


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


def warm_latency(engine: Engine, queries: list[str]) -> dict:
    for q in queries[:5]:
        engine.answer(q)
    answer_ms, embed_ms = [], []
    for q in queries:
        answer_ms.append(timed(engine.answer, q)[0])
        focus = prepare(q).focus
        embed_ms.append(timed(engine.embed, focus)[0])
    return {"answer_p50": pct(answer_ms, 50), "answer_p95": pct(answer_ms, 95), "embed_p50": pct(embed_ms, 50), "embed_p95": pct(embed_ms, 95)}


# The child reports its own high-water mark (VmHWM belongs to the process image, so the benchmark's own
# memory, shared with the child by fork before exec, is not counted as getrusage(RUSAGE_CHILDREN) would).
_CHILD = """
import runpy, sys
sys.argv = ["mindie-help", "ask", "--format", "json", "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"]
try:
    runpy.run_module("bot", run_name="__main__")
finally:
    hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
    print(hwm, file=sys.stderr)
"""


def startup(settings: Settings) -> dict:
    env = dict(os.environ, MINDIE_HELP_INDEX_DIR=str(settings.index_dir), MINDIE_HELP_LOG_LEVEL="WARNING")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - started
    ok = json.loads(proc.stdout)["results"][0]["id"] == "npu-out-of-memory"
    peak_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
    return {"seconds": seconds, "ok": ok, "peak_rss_mb": peak_mb}


def megabyte_log(engine: Engine) -> dict:
    rng = random.Random(0)
    lines, size = [], 0
    while size < 1_000_000:
        line = f"[2025-01-01 00:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}] [{rng.randrange(99999)}] [INFO] [scheduler] waiting {rng.randrange(9)}, running {rng.randrange(64)}"
        lines.append(line)
        size += len(line) + 1
    mid = len(lines) // 2
    lines[mid] = "[2025-01-01 00:30:00.000] [4242] [ERROR] [server] Socket bind failed, ip 0.0.0.0 port 1025"
    text = "\n".join(lines)[:1_000_000]
    engine.answer(text)
    runs = [timed(engine.answer, text) for _ in range(3)]
    ok = runs[0][1].results[0].id == "socket-bind-failed"
    return {"bytes": len(text.encode()), "ms_p50": pct([r[0] for r in runs], 50), "ok": ok}


def scaled_engine(base: Engine, factor: int) -> tuple[Engine, float]:
    """A corpus `factor` times larger: each entry copied with a unique id, unique tokens and a unique signature.
    Embedding every synthetic text would take an hour on 2 cores, so each copy's vectors are its source's
    vectors plus noise (renormalised): the search structure and its cost are real, the semantics are not."""
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    entries = []
    for n in range(factor):
        for e in base.entries:
            tag = f"syn{n}x{e.id.replace('-', '')[:12]}"
            sigs = [s.model_copy(update={"pattern": f"{tag}\\s+{s.pattern}" if n else s.pattern}) for s in e.signatures]
            entries.append(e.model_copy(update={
                "id": f"{e.id}-{n}" if n else e.id,
                "keywords": [*e.keywords, tag],
                "signatures": sigs,
                "related": [],
            }))
    corpus = Corpus(root=base.corpus.root, entries=entries, files={e.id: "synthetic" for e in entries}, codes=[], scope=base.corpus.scope, digest="synthetic")
    src = base.dense.index
    vectors = src.index.reconstruct_n(0, src.index.ntotal)
    big_vectors, big_rows = [], []
    for n in range(factor):
        noise = rng.normal(0, 0.02, vectors.shape).astype(np.float32) if n else 0
        v = vectors + noise
        big_vectors.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        big_rows.append(src.rows + n * len(base.entries))
    stacked = np.ascontiguousarray(np.vstack(big_vectors), dtype=np.float32)
    index = dense_mod.make_faiss(stacked)
    manifest = src.manifest.model_copy(update={"rows": len(stacked), "entries": [e.id for e in entries]})
    dense = DenseState(embedder=base.dense.embedder, index=dense_mod.DenseIndex(index, np.concatenate(big_rows), len(entries), manifest), status="ready")
    engine = Engine(corpus, base.settings, dense, base.params)
    return engine, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--factor", type=int, default=1000)
    args = parser.parse_args()
    queries = [q.query for q in load_queries(ROOT / "eval" / "queries.jsonl")]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(index_dir=Path(tmp) / "emb")
        corpus = load_corpus(settings.corpus_dir)
        model = SentenceTransformerEmbedder(dense_mod.resolve_model(settings.model))
        export_s, _ = timed(model.export_onnx, settings.index_dir / ONNX_DIR, settings.model)
        onnx = OnnxEmbedder.load(settings.index_dir, settings.model)  # what the engine builds the index with
        build_s, _ = timed(dense_mod.build_index, corpus.entries, onnx or model, settings.model, corpus.digest, settings.index_dir)
        engine = Engine.from_settings(settings)
        rows = [("index build, whole corpus (embed + FAISS)", f"{build_s / 1000:.1f} s", f"{engine.dense.index.manifest.rows} texts of {len(corpus.entries)} entries")]
        rows.append(("ONNX export of the model (part of `mindie-help index`)", f"{export_s / 1000:.1f} s", f"query embedder: {engine.dense.embedder.backend}"))
        lat = warm_latency(engine, queries)
        rows.append(("warm answer p50 / p95 (hybrid, 211 queries)", f"{lat['answer_p50']:.1f} / {lat['answer_p95']:.1f} ms", ""))
        rows.append(("embedding the query alone p50 / p95", f"{lat['embed_p50']:.1f} / {lat['embed_p95']:.1f} ms", f"ratio p50 {lat['answer_p50'] / lat['embed_p50']:.2f}x"))
        up = startup(settings)
        rows.append(("start-up to first answer (fresh process)", f"{up['seconds']:.1f} s", "correct" if up["ok"] else "WRONG ANSWER"))
        rows.append(("peak memory of that process (RSS)", f"{up['peak_rss_mb']:.0f} MB", ""))
        mb = megabyte_log(engine)
        rows.append(("1 MB pasted log, warm", f"{mb['ms_p50']:.0f} ms", f"{mb['bytes']:,} bytes, {'found the error' if mb['ok'] else 'MISSED the error'}"))
        if not args.skip_scale:
            big, build = scaled_engine(engine, args.factor)
            big_lat = warm_latency(big, queries[:100])
            rows.append((f"synthetic corpus x{args.factor} ({len(big.entries):,} entries) set-up", f"{build:.0f} s", f"{big.dense.index.manifest.rows:,} vectors, {len(big.signatures):,} signatures"))
            rows.append((f"synthetic corpus x{args.factor} warm answer p50 / p95", f"{big_lat['answer_p50']:.1f} / {big_lat['answer_p95']:.1f} ms", ""))
        rows.append(("peak memory of this benchmark process", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", "includes the synthetic corpus" if not args.skip_scale else ""))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}} | value | note")
    for name, value, note in rows:
        print(f"{name:<{width}} | {value} | {note}")


if __name__ == "__main__":
    main()
