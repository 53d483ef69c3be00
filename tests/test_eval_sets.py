"""The labelled sets behind `mindie-help eval` stay well-formed and point at real entries."""

from __future__ import annotations

from collections import Counter

import pytest

from bot.corpus.loader import load_corpus
from bot.evaluation import load_queries
from tests.conftest import CORPUS, ROOT

SETS = sorted(p.name for p in (ROOT / "eval").glob("*.jsonl"))


def test_eval_runs_every_set_by_default():
    from bot.cli import EVAL_SETS

    assert sorted(EVAL_SETS) == SETS


@pytest.mark.parametrize("name", SETS)
def test_labelled_set_is_well_formed(name: str):
    known = set(load_corpus(CORPUS).by_id)
    queries = load_queries(ROOT / "eval" / name)
    assert len({q.id for q in queries}) == len(queries)
    for q in queries:
        assert q.query.strip(), q.id
        assert set(q.expected) <= known, (q.id, q.expected)
        assert (q.kind == "offtopic") == (q.expected == []), q.id


def test_development_set_covers_what_the_issue_asks():
    queries = load_queries(ROOT / "eval" / "queries.jsonl")
    kinds = Counter(q.kind for q in queries)
    assert len(queries) >= 120 and kinds["offtopic"] >= 15
    assert {"log", "traceback", "question_en", "question_zh", "mixed_zh"} <= set(kinds)
    covered = Counter(e for q in queries for e in q.expected)
    assert set(covered) == set(load_corpus(CORPUS).by_id)  # every entry is asked for
