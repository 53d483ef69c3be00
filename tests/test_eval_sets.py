"""The labelled sets behind `mindie-help eval` stay well-formed and point at real entries and families."""

from __future__ import annotations

from collections import Counter

import pytest

from bot.corpus.loader import load_corpus
from bot.evaluation import is_real_world, load_cases, load_queries
from tests.conftest import CORPUS, ROOT

SETS = sorted(p.name for p in (ROOT / "eval").glob("*.jsonl"))
HELD_OUT = "realworld-heldout.jsonl"  # measured once, after the work: never in the default run
HELD_OUT_SETS = sorted(s for s in SETS if s.startswith("realworld-heldout"))


def test_eval_runs_every_development_set_by_default():
    from bot.cli import EVAL_SETS

    assert sorted(EVAL_SETS) == [s for s in SETS if s not in HELD_OUT_SETS]


@pytest.mark.parametrize("name", [s for s in SETS if not is_real_world(ROOT / "eval" / s)])
def test_faq_written_set_is_well_formed(name: str):
    known = set(load_corpus(CORPUS).by_id)
    queries = load_queries(ROOT / "eval" / name)
    assert len({q.id for q in queries}) == len(queries)
    for q in queries:
        assert q.query.strip(), q.id
        assert set(q.expected) <= known, (q.id, q.expected)
        assert (q.kind == "offtopic") == (q.expected == []), q.id


@pytest.mark.parametrize("name", [s for s in SETS if is_real_world(ROOT / "eval" / s)])
def test_real_world_set_is_well_formed(name: str):
    families = {f.id for f in load_corpus(CORPUS).families}
    cases = load_cases(ROOT / "eval" / name)
    assert len({c.id for c in cases}) == len(cases)
    assert len({c.url for c in cases}) == len(cases)  # one case per thread
    for c in cases:
        assert c.url.startswith("https://"), c.id
        assert bool(c.markers) == (c.kind == "diagnosable"), c.id  # labelled from a resolution, or not at all
        assert all(len(m.strip()) >= 2 for m in c.markers), c.id
        assert c.family is None or c.family in families, (c.id, c.family)
        assert (c.kind == "offtopic") == (c.theme == "offtopic"), c.id


def test_real_world_sets_are_large_enough_and_disjoint():
    dev = [c for name in SETS if name.startswith("realworld") and name not in HELD_OUT_SETS for c in load_cases(ROOT / "eval" / name)]
    held = [c for name in HELD_OUT_SETS for c in load_cases(ROOT / "eval" / name)]
    assert len(dev) + len(held) >= 100 and len(held) >= 30
    assert not {c.url for c in dev} & {c.url for c in held}
    kinds = Counter(c.kind for c in dev + held)
    assert kinds["offtopic"] >= 10 and kinds["diagnosable"] >= 60
    assert Counter(c.lang for c in dev + held)["zh"] >= 20


def test_development_set_covers_what_the_issue_asks():
    queries = load_queries(ROOT / "eval" / "queries.jsonl")
    kinds = Counter(q.kind for q in queries)
    assert len(queries) >= 120 and kinds["offtopic"] >= 15
    assert {"log", "traceback", "question_en", "question_zh", "mixed_zh"} <= set(kinds)
    covered = Counter(e for q in queries for e in q.expected)
    faq_entries = {e.id for e in load_corpus(CORPUS).entries if e.source.startswith("faq") or e.id == "mindie-error-code"}
    assert faq_entries <= set(covered)  # every FAQ entry is asked for


def test_held_out_threads_were_not_used_to_write_entries():
    """A held-out report whose thread is also a corpus example measures memory, not diagnosis."""
    examples = {ex.url.split("#")[0].rstrip("/") for e in load_corpus(CORPUS).entries for ex in e.real_examples}
    held = {c.url for name in HELD_OUT_SETS for c in load_cases(ROOT / "eval" / name)}
    assert not examples & held
