"""FeedbackStore: one vote per user per answer, durable across restarts, knowledge gaps redacted."""

from __future__ import annotations

import sqlite3
import threading

from bot.feedback import FeedbackStore, excerpt, fingerprint, normalise_query, redact

FP = fingerprint("Socket bind failed, ip 127.0.0.1 port 1025")


def test_one_vote_per_user_second_click_changes_it(tmp_path):
    path = tmp_path / "fb.sqlite3"
    store = FeedbackStore(path)
    assert store.record_vote(user="U1", entry_id="socket-bind-failed", fingerprint=FP, helpful=True, channel="C1") == "new"
    assert store.record_vote(user="U1", entry_id="socket-bind-failed", fingerprint=FP, helpful=True, channel="C1") == "same"
    assert store.record_vote(user="U1", entry_id="socket-bind-failed", fingerprint=FP, helpful=False, channel="C1") == "changed"
    assert store.record_vote(user="U2", entry_id="socket-bind-failed", fingerprint=FP, helpful=True) == "new"
    votes = {v.entry_id: v for v in store.entry_votes()}
    assert (votes["socket-bind-failed"].helpful, votes["socket-bind-failed"].unhelpful) == (1, 1)
    store.close()

    # A new store on the same file (a restart) sees every committed vote.
    again = FeedbackStore(path)
    assert again.vote_of(user="U1", entry_id="socket-bind-failed", fingerprint=FP) == -1
    assert again.vote_of(user="U2", entry_id="socket-bind-failed", fingerprint=FP) == 1
    report = again.report()
    assert "socket-bind-failed" in report and "helpful" in report
    again.close()


def test_no_raw_query_or_user_id_is_stored(tmp_path):
    path = tmp_path / "fb.sqlite3"
    with FeedbackStore(path) as store:
        store.record_vote(user="UALICE123", entry_id="e1", fingerprint=FP, helpful=True, channel="C1")
    dump = "\n".join(sqlite3.connect(path).iterdump())
    assert "UALICE123" not in dump and "Socket bind failed" not in dump
    assert FP in dump


def test_wal_and_writes_visible_to_other_connections_immediately(tmp_path):
    path = tmp_path / "fb.sqlite3"
    store = FeedbackStore(path)
    store.record_vote(user="U1", entry_id="e1", fingerprint=FP, helpful=True)
    other = sqlite3.connect(path)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert other.execute("SELECT COUNT(*) FROM votes").fetchone()[0] == 1  # committed, not pending
    store.close()


def test_concurrent_votes_are_all_kept(tmp_path):
    store = FeedbackStore(tmp_path / "fb.sqlite3")

    def vote(n: int) -> None:
        for k in range(20):
            store.record_vote(user=f"U{n}", entry_id=f"e{k % 3}", fingerprint=f"{k:064d}", helpful=k % 2 == 0)

    threads = [threading.Thread(target=vote, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(v.helpful + v.unhelpful for v in store.entry_votes())
    assert total == 8 * 20
    store.close()


def test_knowledge_gaps_grouped_and_redacted(tmp_path):
    store = FeedbackStore(tmp_path / "fb.sqlite3")
    q1 = "[2025-01-01 10:00:00] ERROR weird thing on 10.1.2.3 token=abc123 for bob@example.com in /home/bob/run xoxb-1234-5678-abcdef"
    q2 = "[2025-01-02 11:00:00] ERROR weird thing on 10.9.9.9 token=zzz999 for bob@example.com in /home/bob/run xoxb-1234-5678-abcdef"
    fp1 = store.record_unanswered(q1, lang="en", surface="mention", channel="C1", suggestions=["Socket bind failed"])
    fp2 = store.record_unanswered(q2, lang="en", surface="auto", channel="C1")
    assert fp1 != fp2  # the token values differ in letters, which masking keeps
    q3 = q1.replace("2025-01-01 10:00:00", "2025-03-04 05:06:07").replace("10.1.2.3", "172.16.0.9")
    assert store.record_unanswered(q3, lang="en", surface="dm", channel="C2") == fp1  # same error, other time and host
    gaps = store.gaps()
    assert sorted(g.count for g in gaps) == [1, 2]
    report = store.report()
    assert "Knowledge gaps" in report
    for secret in ("10.1.2.3", "abc123", "bob@example.com", "/home/bob", "xoxb-1234"):
        assert secret not in report
    assert "<ip>" in gaps[0].excerpt and "token=<redacted>" in gaps[0].excerpt
    assert len(gaps[0].excerpt) <= 200
    store.close()


def test_fingerprint_normalisation():
    assert fingerprint("Socket  bind FAILED port 1025") == fingerprint("socket bind failed port 1026")
    assert fingerprint("<@U123> Socket bind failed") == fingerprint("Socket bind failed")
    assert fingerprint("a") != fingerprint("b")
    assert len(FP) == 64
    assert normalise_query("  ＡＢＣ\tdef ") == "abc def"


def test_excerpt_prefers_error_lines():
    text = "hello team\nsome context\n[ERROR] thing failed at 192.168.0.1\nmore"
    out = excerpt(text)
    assert out.startswith("[ERROR] thing failed at <ip>")
    assert redact("password: hunter2") == "password: <redacted>"


def test_empty_report(tmp_path):
    with FeedbackStore(tmp_path / "fb.sqlite3") as store:
        report = store.report()
    assert "no votes yet" in report and "none recorded" in report
