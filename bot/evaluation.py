"""`mindie-help eval`: each retriever alone and the hybrid, side by side, on labelled sets.

Two kinds of set: FAQ-written sets (`expected` entry ids; they show regressions) and real-world sets (reports
copied from public threads, labelled from the thread's resolution with `markers` a right answer must contain;
they show what a support channel would see)."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Literal, TypeVar

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from bot.corpus.schema import Entry
from bot.engine.calibration import reliability
from bot.engine.engine import RETRIEVERS, Engine
from bot.engine.models import Answer

ORDER = ("signatures", "lexical", "dense", "hybrid")


class LabelledQuery(BaseModel):
    id: str
    kind: str
    query: str
    expected: list[str] = Field(default_factory=list)


class RealCase(BaseModel):
    """A real report from a public thread, labelled from that thread's resolution (never from the corpus)."""

    id: str
    url: str
    kind: Literal["diagnosable", "undiagnosable", "offtopic"]
    theme: str
    family: str | None = None
    lang: Literal["en", "zh"]
    query: str = Field(min_length=1)
    markers: list[str] = Field(default_factory=list, description="any one in the top answer makes it right")
    resolution: str = ""


Item = TypeVar("Item", LabelledQuery, RealCase)


def _load(path: Path, model: type[Item]) -> list[Item]:
    """Raises OSError when unreadable, ValueError naming the file and line when malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                items.append(model.model_validate_json(line))
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())
                raise ValueError(f"{path}:{n}: {problems}") from None
    return items


def load_queries(path: Path) -> list[LabelledQuery]:
    return _load(path, LabelledQuery)


def load_cases(path: Path) -> list[RealCase]:
    return _load(path, RealCase)


def is_real_world(path: Path) -> bool:
    return path.name.startswith("realworld")


def load_set(path: Path) -> list[LabelledQuery] | list[RealCase]:
    return load_cases(path) if is_real_world(path) else load_queries(path)


def entry_text(entry: Entry) -> str:
    """Everything a reply built from this entry can show, in both languages, for marker matching."""
    parts = [entry.title.en, entry.title.zh, entry.symptom.en, entry.symptom.zh, entry.cause.en, entry.cause.zh,
             *entry.fix.en, *entry.fix.zh]
    for command in entry.commands:
        parts += [command.run, command.explain.en, command.explain.zh]
    return "\n".join(parts).lower()


def has_marker(text: str, markers: list[str]) -> bool:
    return any(m.lower() in text for m in markers)


def top_candidate(answer: Answer) -> str | None:
    """The entry the engine ranks first, whether or not it was confident enough to answer."""
    if answer.results:
        return answer.results[0].id
    return answer.candidates[0] if answer.candidates else None


def evaluate_retriever(engine: Engine, queries: list[LabelledQuery], retriever: str) -> dict:
    engine.answer("warm up", retriever=retriever)
    top1 = top3 = rr = wrong_abstain = on = off = off_abstain = triage_top1 = 0.0
    latencies: list[float] = []
    misses: list[dict] = []
    for q in queries:
        started = time.perf_counter()
        answer = engine.answer(q.query, top_k=10, retriever=retriever)
        latencies.append((time.perf_counter() - started) * 1000)
        # The entry a reply leads with: the answer's, or the symptom a triage reply recognised and shows in full
        # ("recognised, cause not determined" + that entry's steps). Such replies are counted apart too.
        ranked = [h.id for h in answer.results] or ([answer.recognised.id] if answer.recognised else [])
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
        triage_top1 += rank == 1 and not answer.answered
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
        "top1_triage": triage_top1 / on if on else 0.0,
        "offtopic_abstention": off_abstain / off if off else 0.0,
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "misses": misses,
    }


def evaluate_real(engine: Engine, cases: list[RealCase], retriever: str) -> dict:
    """helps: the top answer has a marker; misleads: an answer without one (any answer, off-topic); top-3; the
    not-recognised replies that name the right family; per theme."""
    engine.answer("warm up", retriever=retriever)
    texts = {e.id: entry_text(e) for e in engine.entries}
    covered_by_corpus = lambda c: any(has_marker(t, c.markers) for t in texts.values())  # noqa: E731
    counts: dict[str, float] = defaultdict(float)
    themes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    latencies: list[float] = []
    outcomes: list[dict] = []
    for case in cases:
        started = time.perf_counter()
        answer = engine.answer(case.query, top_k=3, retriever=retriever)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = [h.id for h in answer.results]
        helps = answer.answered and bool(ranked) and has_marker(texts[ranked[0]], case.markers)
        top3 = answer.answered and any(has_marker(texts[r], case.markers) for r in ranked[:3])
        misleads = answer.answered and not helps
        family_named = (not answer.answered) and answer.family is not None and answer.family.id == case.family
        covered = case.kind == "diagnosable" and covered_by_corpus(case)
        counts["all"] += 1
        counts[case.kind] += 1
        counts["misleads"] += misleads
        # Misleads split by what they are: a wrong fix for a report whose thread found the cause, an answer to a thread
        # that never found one (the entry for its exact error, often), an answer to another stack's problem.
        counts[f"misleads_{case.kind}"] += misleads
        counts["covered"] += covered
        if case.kind == "diagnosable":
            counts["helps"] += helps
            counts["top3"] += top3
            counts["covered_helps"] += helps and covered
            if not answer.answered:
                # A not-recognised reply still leads with one entry to read (the recognised symptom's first steps, else
                # the closest topic): whether that entry holds the thread's fix says how useful the reply was.
                counts["not_answered"] += 1
                lead = answer.recognised or answer.closest
                counts["suggestion_right"] += lead is not None and has_marker(texts[lead.id], case.markers)
        if case.kind == "offtopic":
            counts["offtopic_abstained"] += not answer.answered
        # A recognised symptom (triage entry) is not an answer; how often it is given, and to which kind of report.
        counts[f"triage_{case.kind}"] += answer.recognised is not None
        if not answer.answered and case.family:
            counts["family_evident"] += 1
            counts["family_named"] += family_named
        theme = themes[case.theme]
        theme["n"] += 1
        theme["helps"] += helps
        theme["misleads"] += misleads
        theme["abstained"] += not answer.answered
        top = top_candidate(answer)
        outcomes.append({"id": case.id, "kind": case.kind, "theme": case.theme, "answered": answer.answered,
                         "top": top, "confidence": answer.confidence, "helps": helps, "misleads": misleads,
                         "family": answer.family.id if answer.family else None, "expected_family": case.family,
                         "recognised": answer.recognised.id if answer.recognised else None,
                         "correct_top": bool(top) and has_marker(texts.get(top, ""), case.markers)})
    lat = np.asarray(latencies) if latencies else np.zeros(1)
    share = lambda a, b: counts[a] / counts[b] if counts[b] else 0.0  # noqa: E731
    return {
        "retriever": retriever,
        "cases": int(counts["all"]),
        "diagnosable": int(counts["diagnosable"]),
        "undiagnosable": int(counts["undiagnosable"]),
        "offtopic": int(counts["offtopic"]),
        "covered": int(counts["covered"]),
        "helps": share("helps", "diagnosable"),
        "top3": share("top3", "diagnosable"),
        "helps_covered": share("covered_helps", "covered"),
        "misleads": share("misleads", "all"),
        "misleads_wrong": share("misleads_diagnosable", "all"),
        "misleads_unresolved": share("misleads_undiagnosable", "all"),
        "misleads_offtopic": share("misleads_offtopic", "all"),
        "offtopic_abstention": share("offtopic_abstained", "offtopic"),
        "family_named": share("family_named", "family_evident"),
        "not_answered_diagnosable": int(counts["not_answered"]),
        "suggestion_right": share("suggestion_right", "not_answered"),
        "triage_replies": {kind: int(counts[f"triage_{kind}"]) for kind in ("diagnosable", "undiagnosable", "offtopic")},
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "themes": {k: dict(v) for k, v in sorted(themes.items())},
        "outcomes": outcomes,
    }


def calibration_of(engine: Engine, items: list[LabelledQuery]) -> dict:
    """Reliability of the hybrid's top-1 confidence on a FAQ-written set: bins -> observed accuracy, and the ECE."""
    confidences, correct = [], []
    for item in items:
        answer = engine.answer(item.query, top_k=3)
        top = top_candidate(answer)
        confidences.append(answer.confidence)
        correct.append(bool(top) and top in item.expected)
    rows, ece = reliability(confidences, correct)
    return {"bins": rows, "ece": ece}


def run_evaluation(engine: Engine, sets: dict[Path, list[LabelledQuery] | list[RealCase]]) -> dict:
    report: dict = {"status": engine.status(), "sets": []}
    for path, items in sets.items():
        if is_real_world(path):
            rows = [evaluate_real(engine, items, r) for r in ORDER if r in RETRIEVERS]
            # the hybrid's outcomes already hold each report's top-1 confidence and whether it was right
            hybrid = next(r for r in rows if r["retriever"] == "hybrid")["outcomes"]
            bins, ece = reliability([o["confidence"] for o in hybrid], [o["correct_top"] for o in hybrid])
            calibration = {"bins": bins, "ece": ece}
        else:
            rows = [evaluate_retriever(engine, items, r) for r in ORDER if r in RETRIEVERS]
            calibration = calibration_of(engine, items)
        report["sets"].append({"file": str(path), "kind": "real" if is_real_world(path) else "faq", "rows": rows,
                               "calibration": calibration})
    return report


def _format_real(block: dict, blind: bool = False) -> list[str]:
    """`blind`: figures only, no theme names, report ids or entry ids, for a held-out set whose contents must stay
    unread until the work is done (a per-theme line names what the set is about)."""
    rows = block["rows"]
    r0 = rows[0]
    lines = [f"{Path(block['file']).name} (real reports): {r0['diagnosable']} diagnosable ({r0['covered']} covered by the corpus) "
             f"+ {r0['undiagnosable']} undiagnosable + {r0['offtopic']} off-topic",
             "| retriever  | helps  | top-3  | helps (covered) | misleads | off-topic abstention | family named | p50 ms | p95 ms |",
             "|------------|--------|--------|-----------------|----------|----------------------|--------------|--------|--------|"]
    for r in rows:
        lines.append(f"| {r['retriever']:<10} | {r['helps']:6.1%} | {r['top3']:6.1%} | {r['helps_covered']:15.1%} | {r['misleads']:8.1%} "
                     f"| {r['offtopic_abstention']:20.1%} | {r['family_named']:12.1%} | {r['p50_ms']:6.1f} | {r['p95_ms']:6.1f} |")
    hybrid = next(r for r in rows if r["retriever"] == "hybrid")
    lines.append(f"hybrid misleads {hybrid['misleads']:.1%} of all reports = wrong fix for a resolved report "
                 f"{hybrid['misleads_wrong']:.1%} + an answer to a never-resolved thread {hybrid['misleads_unresolved']:.1%} "
                 f"+ an answer to an off-topic paste {hybrid['misleads_offtopic']:.1%}")
    lines.append(f"hybrid not-recognised replies to resolved reports: {hybrid['not_answered_diagnosable']}; the entry they lead "
                 f"with (recognised symptom or closest topic) holds the fix in {hybrid['suggestion_right']:.1%}")
    triage = hybrid["triage_replies"]
    lines.append(f"hybrid 'recognised, cause not determined' (triage) replies: {triage['diagnosable']} to resolved reports, "
                 f"{triage['undiagnosable']} to never-resolved threads, {triage['offtopic']} to off-topic pastes")
    if blind:
        return lines
    lines.append("hybrid per theme (n / helps / misleads / abstained): " + "; ".join(
        f"{theme} {t['n']}/{t.get('helps', 0)}/{t.get('misleads', 0)}/{t.get('abstained', 0)}" for theme, t in hybrid["themes"].items()))
    wrong = [o for o in hybrid["outcomes"] if o["misleads"]]
    if wrong:
        lines.append("hybrid misleads: " + "; ".join(f"{o['id']} -> {o['top']} ({o['confidence']:.2f})" for o in wrong))
    catch_alls = catch_all_entries(hybrid["outcomes"])
    lines.append("catch-all entries (wrong answer to 3+ reports): " + (", ".join(f"{e} x{n}" for e, n in catch_alls) or "none"))
    return lines


def catch_all_entries(outcomes: list[dict], at_least: int = 3) -> list[tuple[str, int]]:
    """Entries that answered several reports they do not fit: the sign of a signature or text that matches too much."""
    counts: dict[str, int] = {}
    for o in outcomes:
        if o["misleads"] and o["top"]:
            counts[o["top"]] = counts.get(o["top"], 0) + 1
    return sorted(((e, n) for e, n in counts.items() if n >= at_least), key=lambda x: -x[1])


def _format_calibration(block: dict) -> list[str]:
    cal = block["calibration"]
    cells = ", ".join(f"{b['bin']}: {b['count']} at {b['confidence']:.2f} -> {b['accuracy']:.0%}" for b in cal["bins"])
    return [f"hybrid top-1 reliability (bin: n at mean confidence -> accuracy): {cells}; ECE {cal['ece']:.3f}"]


def format_table(report: dict, blind: bool = False) -> str:
    lines = []
    for block in report["sets"]:
        if block.get("kind") == "real":
            lines += _format_real(block, blind) + _format_calibration(block) + [""]
            continue
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
        lines.append(f"hybrid top-1 includes {hybrid['top1_triage']:.1%} given as a triage reply (recognised, cause not "
                     f"determined); answered top-1 {hybrid['top1'] - hybrid['top1_triage']:.1%}")
        if hybrid["misses"]:
            lines.append("hybrid misses: " + "; ".join(
                f"{m['id']} expected {','.join(m['expected']) or 'abstain'} got {','.join(m['got']) or 'abstain'} ({m['confidence']:.2f})"
                for m in hybrid["misses"]))
        lines += _format_calibration(block) + [""]
    return "\n".join(lines)
