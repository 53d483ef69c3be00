"""`mindie-help eval`: each retriever alone and the hybrid, side by side, on a labelled query set."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from bot.engine.engine import RETRIEVERS, Engine

ORDER = ("signatures", "lexical", "dense", "hybrid")


class LabelledQuery(BaseModel):
    id: str
    kind: str
    query: str
    expected: list[str] = Field(default_factory=list)


def load_queries(path: Path) -> list[LabelledQuery]:
    """Raises OSError when unreadable, ValueError naming the file and line when malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                items.append(LabelledQuery.model_validate_json(line))
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())
                raise ValueError(f"{path}:{n}: {problems}") from None
    return items


def evaluate_retriever(engine: Engine, queries: list[LabelledQuery], retriever: str) -> dict:
    engine.answer("warm up", retriever=retriever)
    top1 = top3 = rr = wrong_abstain = on = off = off_abstain = 0.0
    latencies: list[float] = []
    misses: list[dict] = []
    for q in queries:
        started = time.perf_counter()
        answer = engine.answer(q.query, top_k=10, retriever=retriever)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = [h.id for h in answer.results]
        if not q.expected:
            off += 1
            off_abstain += not answer.answered
            if answer.answered:
                misses.append({"id": q.id, "expected": [], "got": ranked[:1], "confidence": answer.confidence})
            continue
        on += 1
        if not answer.answered:
            wrong_abstain += 1
        rank = next((i for i, eid in enumerate(ranked, 1) if eid in q.expected), None)
        top1 += rank == 1
        top3 += rank is not None and rank <= 3
        rr += 1.0 / rank if rank else 0.0
        if rank != 1:
            misses.append({"id": q.id, "expected": q.expected, "got": ranked[:3], "confidence": answer.confidence})
    lat = np.asarray(latencies) if latencies else np.zeros(1)
    return {
        "retriever": retriever,
        "queries": len(queries),
        "on_topic": int(on),
        "off_topic": int(off),
        "top1": top1 / on if on else 0.0,
        "top3": top3 / on if on else 0.0,
        "mrr": rr / on if on else 0.0,
        "wrongly_abstained": wrong_abstain / on if on else 0.0,
        "offtopic_abstention": off_abstain / off if off else 0.0,
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "misses": misses,
    }


def run_evaluation(engine: Engine, sets: dict[Path, list[LabelledQuery]]) -> dict:
    report: dict = {"status": engine.status(), "sets": []}
    for path, queries in sets.items():
        rows = [evaluate_retriever(engine, queries, r) for r in ORDER if r in RETRIEVERS]
        report["sets"].append({"file": str(path), "rows": rows})
    return report


def format_table(report: dict) -> str:
    lines = []
    for block in report["sets"]:
        rows = block["rows"]
        lines.append(f"{Path(block['file']).name}: {rows[0]['on_topic']} on-topic + {rows[0]['off_topic']} off-topic queries")
        lines.append("| retriever  | top-1  | top-3  | MRR   | wrongly abstained | off-topic abstention | p50 ms | p95 ms |")
        lines.append("|------------|--------|--------|-------|-------------------|----------------------|--------|--------|")
        for r in rows:
            lines.append(
                f"| {r['retriever']:<10} | {r['top1']:6.1%} | {r['top3']:6.1%} | {r['mrr']:.3f} | {r['wrongly_abstained']:17.1%} "
                f"| {r['offtopic_abstention']:20.1%} | {r['p50_ms']:6.1f} | {r['p95_ms']:6.1f} |"
            )
        hybrid = next(r for r in rows if r["retriever"] == "hybrid")
        if hybrid["misses"]:
            lines.append("hybrid misses: " + "; ".join(
                f"{m['id']} expected {','.join(m['expected']) or 'abstain'} got {','.join(m['got']) or 'abstain'} ({m['confidence']:.2f})"
                for m in hybrid["misses"]))
        lines.append("")
    return "\n".join(lines)
