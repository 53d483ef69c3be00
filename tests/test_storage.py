"""The storage layer on both back-ends (SQLite and a real PostgreSQL): migrations, votes, claims, escalations,
resolved marks, channel settings, activity, and what happens when the database goes away."""

from __future__ import annotations

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.feedback import FeedbackStore, fingerprint
from bot.storage import SCHEMA_VERSION, Database, DatabaseUnavailable, SharedState, StoreError, claims, replicas

FP = fingerprint("Socket bind failed, ip 127.0.0.1 port 1025")


def two_replicas(url: str, **kwargs) -> tuple[Database, Database]:
    """Two independent pools on one database, as two replica processes have."""
    return Database(url, **kwargs), Database(url, **kwargs)


# --- migrations -------------------------------------------------------------------------------------------


def test_migrations_run_once_and_are_idempotent(db_url):
    first = Database(db_url)
    assert first.schema_versions() == list(range(1, SCHEMA_VERSION + 1))
    first.close()
    again = Database(db_url)  # a restart: nothing to do, nothing fails
    assert again.schema_versions() == list(range(1, SCHEMA_VERSION + 1))
    again.close()


def test_replicas_starting_together_migrate_once(db_url):
    with ThreadPoolExecutor(4) as pool:
        dbs = list(pool.map(lambda _: Database(db_url), range(4)))
    assert all(db.schema_versions() == list(range(1, SCHEMA_VERSION + 1)) for db in dbs)
    for db in dbs:
        db.close()


def test_many_replicas_opening_a_fresh_sqlite_file_together_all_succeed(tmp_path: Path):
    # Switching a new file to WAL answered "database is locked" at once for about one round in fifteen under load.
    for round_no in range(20):
        url = f"sqlite:///{tmp_path / f'round{round_no}.sqlite3'}"
        with ThreadPoolExecutor(4) as pool:
            dbs = list(pool.map(lambda _: Database(url), range(4)))
        for db in dbs:
            db.close()


class _Cursor:
    """Answers PRAGMA journal_mode with the given failures first."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.calls = 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.failures:
            raise sqlite3.OperationalError(self.failures.pop(0))


def test_switching_to_wal_retries_only_a_locked_database():
    from bot.storage import _switch_to_wal

    busy_twice = _Cursor("database is locked", "database is locked")
    _switch_to_wal(busy_twice)
    assert busy_twice.calls == 3
    with pytest.raises(sqlite3.OperationalError, match="not a database"):
        _switch_to_wal(not_db := _Cursor("file is not a database"))
    assert not_db.calls == 1
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _switch_to_wal(_Cursor(*["database is locked"] * 10_000), patience=0.2)
    assert time.monotonic() - started < 2


def test_the_original_sqlite_feedback_file_is_upgraded_in_place(tmp_path: Path):
    path = tmp_path / "feedback.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(
        """CREATE TABLE votes (answer_id TEXT NOT NULL, voter TEXT NOT NULL, entry_id TEXT NOT NULL, fingerprint TEXT NOT NULL,
            channel TEXT, vote INTEGER NOT NULL CHECK (vote IN (-1, 1)), created_at REAL NOT NULL, updated_at REAL NOT NULL,
            PRIMARY KEY (answer_id, voter));
           CREATE TABLE unanswered (id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, excerpt TEXT NOT NULL,
            lang TEXT, surface TEXT, channel TEXT, suggestions TEXT, created_at REAL NOT NULL);"""
    )
    old.close()
    with FeedbackStore(path) as store:
        # a vote written by the old code, then changed by the new one
        with store.db.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO votes (answer_id, voter, entry_id, fingerprint, channel, vote, created_at, updated_at)"
                " SELECT 'a', 'v', 'e1', 'fp', NULL, 1, 1.0, 1.0"
            )
        assert store.db.schema_versions() == list(range(1, SCHEMA_VERSION + 1))
        assert {v.entry_id: v.helpful for v in store.entry_votes()} == {"e1": 1}
        assert store.record_vote(user="U1", entry_id="socket-bind-failed", fingerprint=FP, helpful=True) == "new"


def test_a_database_newer_than_the_code_is_refused(db_url):
    Database(db_url).close()
    engine = sa.create_engine(Database(db_url).url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"INSERT INTO schema_version (version, description, applied_at) VALUES ({SCHEMA_VERSION + 1}, 'future', 0)")
    engine.dispose()
    with pytest.raises(StoreError, match="newer than this mindie-help knows"):
        Database(db_url)


def test_unreachable_or_wrong_databases_fail_at_once_with_one_clear_message(tmp_path: Path):
    from pg_server import free_port

    port = free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        Database(f"postgresql://bot:hunter2-secret@127.0.0.1:{port}/mindie_help")
    message = str(caught.value)
    assert time.monotonic() - started < 10
    assert message.startswith(f"cannot reach the database postgresql://bot:***@127.0.0.1:{port}/mindie_help")
    assert "hunter2" not in message and "\n" not in message
    with pytest.raises(StoreError, match="unsupported database"):
        Database("mysql://u@h/db")
    not_a_db = tmp_path / "notes.sqlite3"
    not_a_db.write_bytes(b"not a database\n" * 50)
    with pytest.raises(StoreError, match="cannot open the feedback store .*not a database"):
        Database(not_a_db)


# --- votes ----------------------------------------------------------------------------------------------


def test_one_vote_per_user_per_answer_in_one_upsert(db_url):
    with FeedbackStore(db_url) as store:
        vote = dict(entry_id="socket-bind-failed", fingerprint=FP, channel="C1")
        assert store.record_vote(user="U1", helpful=True, now=100.0, **vote) == "new"
        assert store.record_vote(user="U1", helpful=True, now=101.0, **vote) == "same"
        assert store.record_vote(user="U1", helpful=False, now=102.0, **vote) == "changed"
        assert store.record_vote(user="U2", helpful=True, now=103.0, **vote) == "new"
        # A click older than the stored one (a retried, queued write) never overwrites it.
        assert store.record_vote(user="U1", helpful=True, now=50.0, **vote) == "same"
        assert store.vote_of(user="U1", entry_id="socket-bind-failed", fingerprint=FP) == -1
        assert [(v.entry_id, v.helpful, v.unhelpful) for v in store.entry_votes()] == [("socket-bind-failed", 1, 1)]
        assert store.report_json()["entries"] == [{"id": "socket-bind-failed", "up": 1, "down": 1}]


def test_concurrent_voters_on_two_replicas_lose_nothing(db_url):
    a, b = two_replicas(db_url)
    stores = [FeedbackStore(db=a), FeedbackStore(db=b)]
    final: dict[str, int] = {}

    def voter(n: int) -> None:
        # each of 50 voters clicks 4 times, alternating replicas; the last click wins
        for k in range(4):
            helpful = (n + k) % 3 != 0
            stores[(n + k) % 2].record_vote(user=f"U{n}", entry_id=f"e{n % 5}", fingerprint=FP, helpful=helpful, now=1000.0 + k)
        final[f"U{n}"] = 1 if (n + 3) % 3 != 0 else -1

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(voter, range(50)))
    for n in range(50):
        assert stores[n % 2].vote_of(user=f"U{n}", entry_id=f"e{n % 5}", fingerprint=FP) == final[f"U{n}"]
    assert sum(v.helpful + v.unhelpful for v in stores[0].entry_votes()) == 50
    a.close()
    b.close()


# --- claims: de-duplication, cooldowns, threads -----------------------------------------------------------------


def test_exactly_one_replica_wins_a_claim(db_url):
    a, b = two_replicas(db_url)
    states = [SharedState(a), SharedState(b)]
    a.heartbeat()
    b.heartbeat()
    barrier = threading.Barrier(20)

    def attempt(n: int) -> bool:
        barrier.wait()
        return states[n % 2].claim("event", "Ev0RACE", 3600, processing=True)

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(attempt, range(20)))
    assert results.count(True) == 1
    a.close()
    b.close()


def test_claims_expire_finish_and_are_taken_over_only_from_a_dead_replica(db_url):
    a, b = two_replicas(db_url, replica_timeout=5.0)
    sa_, sb = SharedState(a), SharedState(b)
    a.heartbeat()
    b.heartbeat()
    now = time.time()
    # processing on a live replica: duplicates lose
    assert sa_.claim("event", "E1", 3600, processing=True, now=now)
    assert not sb.claim("event", "E1", 3600, processing=True, now=now + 1)
    assert sb.claim_outcome("event", "E1", 3600) == "busy"  # Slack should retry later
    assert sa_.claim_outcome("event", "E1", 3600) == "done"  # the holder's own repeat: just drop it
    # the replica holding it stops beating (killed): the claim is taken over
    with a.begin() as conn:
        conn.execute(sa.update(replicas).where(replicas.c.id == a.replica_id).values(heartbeat_at=now - 60))
    assert sb.claim_outcome("event", "E1", 3600) == "resumed"  # taken over: a's reply may already be out
    assert not sa_.claim("event", "E1", 3600, processing=True, now=now + 3)  # now b holds it, alive
    assert sa_.claim("event", "E3", 3600, processing=True, now=now)  # a fresh claim is "claimed", not "resumed"
    assert sb.claim_outcome("event", "E4", 3600) == "claimed"
    # a finished claim is never taken over, dead owner or not
    assert sa_.claim("event", "E2", 3600, processing=True, now=now)
    sa_.finish("event", "E2")
    assert not sb.claim("event", "E2", 3600, now=now + 10)
    assert sb.claim_outcome("event", "E2", 3600) == "done"
    # an expired claim is free again
    assert sb.claim("cooldown", "U1", 20, now=now)
    assert sb.live("cooldown", "U1", now=now + 19) and not sb.live("cooldown", "U1", now=now + 21)
    assert not sa_.claim("cooldown", "U1", 20, now=now + 19)
    assert sa_.claim("cooldown", "U1", 20, now=now + 21)
    # marks extend, release frees
    sa_.mark("thread", "C1:1.0", 100, now=now)
    assert sb.live("thread", "C1:1.0", now=now + 50)
    assert not sb.claim("thread", "C1:1.0", 100, now=now + 50)
    sa_.release("thread", "C1:1.0")
    assert sb.claim("thread", "C1:1.0", 100, now=now + 50)
    # cleanup removes what expired
    assert a.cleanup(now=now + 10_000) >= 3
    with a.begin() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(claims)).scalar_one() == 0
    a.close()
    b.close()


def test_cooldown_and_dedupe_hold_across_replicas_and_fall_back_to_memory(db_url):
    from bot.slack.dedupe import Cooldown, Deduper, SharedMarks

    a, b = two_replicas(db_url)
    a.heartbeat()
    b.heartbeat()
    da, db_ = Deduper(state=SharedState(a)), Deduper(state=SharedState(b))
    assert da.first_event("Ev1") and not db_.first_event("Ev1") and not da.first_event("Ev1")
    assert db_.claim_message("C1", "1.0") and not da.claim_message("C1", "1.0")
    assert da.first_request("command", "T1") and not db_.first_request("command", "T1")
    ca, cb = Cooldown(60, state=SharedState(a)), Cooldown(60, state=SharedState(b))
    assert ca.allow("U1") and cb.active("U1") and not cb.allow("U1")
    assert cb.allow("U2", seconds=0)  # a channel without cooldown
    ma, mb = SharedMarks("thread", 3600, state=SharedState(a)), SharedMarks("thread", 3600, state=SharedState(b))
    ma.set(("C1", "1.0"), time.time())
    assert ("C1", "1.0") in mb and not mb.claim(("C1", "1.0"))
    # database down: each replica de-duplicates in memory, and says so once
    a._mark_down(RuntimeError("gone"))
    started = time.monotonic()
    assert da.first_event("Ev2") and not da.first_event("Ev2")
    assert time.monotonic() - started < 0.5  # no waiting on a dead database
    with pytest.raises(DatabaseUnavailable):
        SharedState(a).claim("event", "x", 10)
    a.close()
    b.close()


# --- escalations, resolved marks, channel settings, activity ------------------------------------------------------


def test_one_escalation_per_thread(db_url):
    a, b = two_replicas(db_url)
    states = [SharedState(a), SharedState(b)]
    barrier = threading.Barrier(10)

    def click(n: int):
        barrier.wait()
        return states[n % 2].claim_escalation("C1", "1700000000.000100", user=f"U{n}")

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(click, range(10)))
    assert results.count(None) == 1
    first = next(f"U{n}" for n, r in enumerate(results) if r is None)
    assert {r.requested_by for r in results if r is not None} == {first}
    states[0].release_escalation("C1", "1700000000.000100")  # the post failed: the next click may try
    assert states[1].claim_escalation("C1", "1700000000.000100", user="U99") is None
    a.close()
    b.close()


def test_resolved_marks_and_channel_settings(db_url):
    db = Database(db_url)
    state = SharedState(db)
    assert state.mark_resolved("C1", "1.0", "U1") and not state.mark_resolved("C1", "1.0", "U2")
    assert state.is_resolved("C1", "1.0") and not state.is_resolved("C1", "2.0")
    assert state.channel_settings("C1") is None
    state.set_channel("C1", mode="mention")
    state.set_channel("C1", cooldown_seconds=60)
    found = state.channel_settings("C1")
    assert (found.mode, found.cooldown_seconds) == ("mention", 60)
    with pytest.raises(ValueError):
        state.set_channel("C1", mode="sometimes")
    with pytest.raises(sa.exc.IntegrityError):  # the constraint itself, not only the check in Python
        with db.begin() as conn:
            conn.exec_driver_sql("UPDATE channel_settings SET mode = 'sometimes'")
    assert [c.channel for c in state.all_channel_settings()] == ["C1"]
    state.set_channel("C1", clear=True)
    assert state.channel_settings("C1") is None
    db.close()


def test_activity_and_gaps_for_the_report(db_url):
    with FeedbackStore(db_url) as store:
        now = time.time()
        store.record_reply(surface="mention", channel="C1", fingerprint=FP, entry_id="e1", answered=True, confidence=0.9, lang="en")
        store.record_reply(surface="auto", channel="C1", fingerprint=FP, entry_id=None, answered=False, now=now - 10 * 86_400)
        store.record_vote(user="U1", entry_id="e1", fingerprint=FP, helpful=False)
        SharedState(store.db).claim_escalation("C1", "1.0", user="U1")
        store.record_unanswered("[ERROR] flux capacitor misaligned on 10.0.0.1", lang="en", surface="auto", channel="C1")
        week, month = store.activity(7), store.activity(30)
        assert (week.answered, week.abstained, week.unhelpful, week.escalations) == (1, 0, 1, 1)
        assert (month.answered, month.abstained) == (1, 1)
        report = store.report_json()
        assert set(report) == {"entries", "gaps"}
        assert report["gaps"][0]["count"] == 1 and "<ip>" in report["gaps"][0]["excerpt"]
        text = store.report()
        assert "last  7 days  answered 1  abstained 0" in text and "flux capacitor" in text


# --- the database going away during operation ----------------------------------------------------------------


def test_writes_are_queued_while_the_database_is_down_and_replayed_in_order(db_url):
    with FeedbackStore(db_url) as store:
        store.record_vote(user="U1", entry_id="e1", fingerprint=FP, helpful=True, now=100.0)
        store.db._mark_down(RuntimeError("simulated"))
        assert store.record_vote(user="U1", entry_id="e1", fingerprint=FP, helpful=False, now=101.0) == "queued"
        assert store.record_vote(user="U2", entry_id="e1", fingerprint=FP, helpful=True, now=102.0) == "queued"
        store.record_unanswered("[ERROR] something unknown", surface="dm")
        assert store.db.pending == 3
        assert store.db.probe()  # it is back
        store.record_vote(user="U1", entry_id="e1", fingerprint=FP, helpful=True, now=103.0)  # a newer click, direct
        assert store.db.flush_pending() == 3 and store.db.pending == 0
        assert store.vote_of(user="U1", entry_id="e1", fingerprint=FP) == 1  # the older queued click did not win
        assert store.vote_of(user="U2", entry_id="e1", fingerprint=FP) == 1
        assert store.gaps()[0].count == 1


def test_a_real_postgresql_outage_during_operation(postgres_server, tmp_path):
    """Stop the server under a running store: calls fail fast, votes queue; start it again: they land."""
    from pg_server import PostgresServer

    server = PostgresServer(postgres_server.bindir).start()  # its own server: this test stops it
    try:
        url = server.create_database()
        store = FeedbackStore(db=Database(url, replica_timeout=5.0))
        store.db.start_maintenance(interval=0.2)
        dedupe_state = SharedState(store.db)
        assert store.record_vote(user="U1", entry_id="e1", fingerprint=FP, helpful=True) == "new"
        server.stop(remove=False)
        outcomes = [store.record_vote(user=f"U{n}", entry_id="e1", fingerprint=FP, helpful=False) for n in range(1, 6)]
        assert outcomes == ["queued"] * 5
        assert not store.db.available
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable):
            dedupe_state.claim("event", "E1", 60)
        assert time.monotonic() - started < 0.5
        server.restart()
        deadline = time.monotonic() + 20
        while (store.db.pending or not store.db.available) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.db.available and store.db.pending == 0
        assert [(v.helpful, v.unhelpful) for v in store.entry_votes()] == [(0, 5)]  # U1 changed to 👎 too
        store.db.close()
    finally:
        server.stop()
