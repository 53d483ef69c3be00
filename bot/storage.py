"""Shared storage for every replica of the bot: SQLAlchemy 2 Core over SQLite (one replica, the default) or
PostgreSQL (several replicas, `MINDIE_HELP_DATABASE_URL=postgresql://...`).

Why SQLAlchemy Core rather than psycopg alone: the same statements (upserts with `ON CONFLICT`, `RETURNING`)
run on both back-ends through one API, with a connection pool, pre-ping and one error hierarchy; psycopg 3 is
the PostgreSQL driver underneath. No ORM: every write is one statement whose constraint decides (no
read-then-write), so replicas cannot race each other.

* Migrations are numbered, run at start inside one transaction (PostgreSQL: under an advisory lock, so two
  replicas starting together do not both migrate) and recorded in `schema_version`: running them again is a no-op.
* `Database.begin()` fails fast with `DatabaseUnavailable` while the database is known to be down; a background
  thread probes it, beats this replica's heartbeat, replays queued writes and deletes expired claims.
* `SharedState` holds what the Slack layer shares between replicas: claims (event / message / command
  de-duplication, cooldowns, answered threads), escalations, resolved marks and per-channel settings.
"""

from __future__ import annotations

import os
import random
import socket
import sqlite3
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import StaticPool

from bot.logs import get_logger, kv, register_secret

log = get_logger()

# --- schema ------------------------------------------------------------------------------------------
# Each migration is a list of DDL statements; {float} and {id} are filled per dialect (SQLite keeps the REAL and
# AUTOINCREMENT of the original feedback file). Never edit a released migration: add the next one.

MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "votes and knowledge gaps (the original feedback file)", [
        """CREATE TABLE IF NOT EXISTS votes (
            answer_id   TEXT NOT NULL,
            voter       TEXT NOT NULL,
            entry_id    TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            channel     TEXT,
            vote        INTEGER NOT NULL CHECK (vote IN (-1, 1)),
            created_at  {float} NOT NULL,
            updated_at  {float} NOT NULL,
            PRIMARY KEY (answer_id, voter))""",
        "CREATE INDEX IF NOT EXISTS votes_entry ON votes (entry_id)",
        """CREATE TABLE IF NOT EXISTS unanswered (
            id          {id},
            fingerprint TEXT NOT NULL,
            excerpt     TEXT NOT NULL,
            lang        TEXT,
            surface     TEXT,
            channel     TEXT,
            suggestions TEXT,
            created_at  {float} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS unanswered_fp ON unanswered (fingerprint)",
    ]),
    (2, "state shared by replicas: claims, heartbeats, escalations, resolved marks, channel settings, replies", [
        # The vote a row had before its last change, returned by the upsert: "new" / "same" / "changed" in one statement.
        "ALTER TABLE votes ADD COLUMN prev_vote INTEGER",
        """CREATE TABLE IF NOT EXISTS claims (
            kind        TEXT NOT NULL,
            key         TEXT NOT NULL,
            owner       TEXT NOT NULL,
            done        INTEGER NOT NULL DEFAULT 1,
            expires_at  {float} NOT NULL,
            created_at  {float} NOT NULL,
            PRIMARY KEY (kind, key))""",
        "CREATE INDEX IF NOT EXISTS claims_expiry ON claims (expires_at)",
        """CREATE TABLE IF NOT EXISTS replicas (
            id           TEXT PRIMARY KEY,
            started_at   {float} NOT NULL,
            heartbeat_at {float} NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS escalations (
            channel      TEXT NOT NULL,
            thread_key   TEXT NOT NULL,
            requested_by TEXT,
            fingerprint  TEXT,
            created_at   {float} NOT NULL,
            PRIMARY KEY (channel, thread_key))""",
        """CREATE TABLE IF NOT EXISTS resolved (
            channel     TEXT NOT NULL,
            thread_ts   TEXT NOT NULL,
            resolved_by TEXT,
            created_at  {float} NOT NULL,
            PRIMARY KEY (channel, thread_ts))""",
        """CREATE TABLE IF NOT EXISTS channel_settings (
            channel          TEXT PRIMARY KEY,
            mode             TEXT CHECK (mode IN ('auto', 'mention', 'off')),
            cooldown_seconds {float} CHECK (cooldown_seconds >= 0),
            updated_at       {float} NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS replies (
            id          {id},
            surface     TEXT NOT NULL,
            channel     TEXT,
            fingerprint TEXT NOT NULL,
            entry_id    TEXT,
            answered    INTEGER NOT NULL,
            confidence  {float},
            lang        TEXT,
            created_at  {float} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS replies_time ON replies (created_at)",
    ]),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]
_TYPES = {
    "sqlite": {"float": "REAL", "id": "INTEGER PRIMARY KEY AUTOINCREMENT"},
    "postgresql": {"float": "DOUBLE PRECISION", "id": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"},
}
_MIGRATION_LOCK = 0x6D696E64  # any constant shared by all replicas: pg_advisory_xact_lock key

# Core table objects for building statements (columns the code reads or writes; the DDL above is the truth).
metadata = sa.MetaData()
votes = sa.Table(
    "votes", metadata,
    sa.Column("answer_id", sa.Text, primary_key=True), sa.Column("voter", sa.Text, primary_key=True),
    sa.Column("entry_id", sa.Text), sa.Column("fingerprint", sa.Text), sa.Column("channel", sa.Text),
    sa.Column("vote", sa.Integer), sa.Column("prev_vote", sa.Integer),
    sa.Column("created_at", sa.Float), sa.Column("updated_at", sa.Float),
)
unanswered = sa.Table(
    "unanswered", metadata,
    sa.Column("id", sa.Integer, primary_key=True), sa.Column("fingerprint", sa.Text), sa.Column("excerpt", sa.Text),
    sa.Column("lang", sa.Text), sa.Column("surface", sa.Text), sa.Column("channel", sa.Text),
    sa.Column("suggestions", sa.Text), sa.Column("created_at", sa.Float),
)
claims = sa.Table(
    "claims", metadata,
    sa.Column("kind", sa.Text, primary_key=True), sa.Column("key", sa.Text, primary_key=True),
    sa.Column("owner", sa.Text), sa.Column("done", sa.Integer), sa.Column("expires_at", sa.Float), sa.Column("created_at", sa.Float),
)
replicas = sa.Table(
    "replicas", metadata,
    sa.Column("id", sa.Text, primary_key=True), sa.Column("started_at", sa.Float), sa.Column("heartbeat_at", sa.Float),
)
escalations = sa.Table(
    "escalations", metadata,
    sa.Column("channel", sa.Text, primary_key=True), sa.Column("thread_key", sa.Text, primary_key=True),
    sa.Column("requested_by", sa.Text), sa.Column("fingerprint", sa.Text), sa.Column("created_at", sa.Float),
)
resolved = sa.Table(
    "resolved", metadata,
    sa.Column("channel", sa.Text, primary_key=True), sa.Column("thread_ts", sa.Text, primary_key=True),
    sa.Column("resolved_by", sa.Text), sa.Column("created_at", sa.Float),
)
channel_settings = sa.Table(
    "channel_settings", metadata,
    sa.Column("channel", sa.Text, primary_key=True), sa.Column("mode", sa.Text),
    sa.Column("cooldown_seconds", sa.Float), sa.Column("updated_at", sa.Float),
)
replies = sa.Table(
    "replies", metadata,
    sa.Column("id", sa.Integer, primary_key=True), sa.Column("surface", sa.Text), sa.Column("channel", sa.Text),
    sa.Column("fingerprint", sa.Text), sa.Column("entry_id", sa.Text), sa.Column("answered", sa.Integer),
    sa.Column("confidence", sa.Float), sa.Column("lang", sa.Text), sa.Column("created_at", sa.Float),
)


# --- errors and URLs -----------------------------------------------------------------------------------


class StoreError(Exception):
    """The database cannot be opened or reached at start (bad path, not a database, server down, bad URL)."""


class DatabaseUnavailable(Exception):
    """The database did not answer now; the caller falls back (memory de-duplication, queued write)."""


def resolve_url(target: str | Path) -> URL:
    """`postgresql://...` (psycopg 3 driver), `sqlite:///path`, or a bare path to a SQLite file."""
    text = str(target).strip()
    if "://" not in text:
        return URL.create("sqlite", database=text)
    try:
        url = make_url(text)
    except (sa_exc.ArgumentError, ValueError):
        raise StoreError("the database URL is malformed: use postgresql://user:password@host:5432/dbname or sqlite:///path") from None
    backend = url.get_backend_name()
    if backend in ("postgres", "postgresql"):
        return url.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return url.set(drivername="sqlite")
    raise StoreError(f"unsupported database {backend!r}: use postgresql://... or sqlite:///...")


def describe_url(url: URL) -> str:
    """For messages and logs: the password is never shown."""
    if url.get_backend_name() == "sqlite":
        return url.database or ":memory:"
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)


def _reason(exc: BaseException) -> str:
    """The driver's own one-line reason (e.g. 'file is not a database', 'Connection refused')."""
    orig = getattr(exc, "orig", None) or exc
    lines = [ln.strip() for ln in str(orig).splitlines() if ln.strip()]
    return (lines[0] if lines else type(orig).__name__)[:300]


def _switch_to_wal(cursor: Any, patience: float = 15.0) -> None:
    """Switching a new file to WAL needs a moment's exclusive lock, and SQLite answers BUSY at once instead of
    calling the busy handler, so replicas that open a fresh file together would fail: retry briefly."""
    deadline = time.monotonic() + patience
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01 + random.random() * 0.04)


def _connection_lost(exc: BaseException) -> bool:
    """A failure that means the server or the network is gone (as opposed to one slow or locked statement)."""
    if isinstance(exc, (sa_exc.TimeoutError, sa_exc.InterfaceError)):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None)
    try:
        import psycopg

        return type(orig) in (psycopg.OperationalError, psycopg.InterfaceError)
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False


# --- the database ----------------------------------------------------------------------------------------


@dataclass
class _Pending:
    what: str
    write: Callable[[Connection], None]
    queued_at: float


class Database:
    """One pool per process. Thread-safe. `begin()` yields a connection inside one committed transaction."""

    HEARTBEAT_SECONDS = 5.0
    CLEANUP_SECONDS = 60.0
    MAX_PENDING = 20_000

    def __init__(self, target: str | Path, *, replica_timeout: float = 30.0, connect_timeout: float = 5.0) -> None:
        self.url = resolve_url(target)
        self.dialect = self.url.get_backend_name()
        self.display = describe_url(self.url)
        self.replica_timeout = replica_timeout
        self.replica_id = f"{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        if self.url.password:
            register_secret(str(self.url.password))
        self._down_since: float | None = None
        self.outages = 0  # how many times the database was lost; lets callers warn once per outage
        self._state_lock = threading.Lock()
        # SQLite: one writer at a time anyway; queueing on a lock here is fair and immediate, whereas SQLite's own
        # busy handler sleeps and retries, which under contention left some transactions waiting for seconds.
        self._sqlite_lock = threading.Lock() if self.dialect == "sqlite" else None
        self._pending: deque[_Pending] = deque()
        self._pending_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_heartbeat = 0.0
        self._last_cleanup = 0.0
        self.engine = self._make_engine(connect_timeout)
        try:
            self._migrate()
        except StoreError:
            self.engine.dispose()
            raise
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            self.engine.dispose()
            raise StoreError(self._open_message(exc)) from None

    def _open_message(self, exc: BaseException) -> str:
        if self.dialect == "sqlite":
            return f"cannot open the feedback store {self.display}: {_reason(exc)}"
        return f"cannot reach the database {self.display}: {_reason(exc)}"

    def _make_engine(self, connect_timeout: float) -> Engine:
        if self.dialect == "sqlite":
            path = self.url.database or ":memory:"
            memory = path == ":memory:"
            if not memory:
                try:
                    Path(path).parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"cannot open the feedback store {self.display}: {exc.strerror}") from None
            # Enough pooled connections for the HTTP threads and the listener workers: a request must never wait
            # for a connection (SQLite itself serialises the writes).
            pool = {"poolclass": StaticPool} if memory else {"pool_size": 8, "max_overflow": 32, "pool_timeout": 10.0}
            engine = sa.create_engine(self.url, connect_args={"timeout": 15.0, "check_same_thread": False}, **pool)

            @sa_event.listens_for(engine, "connect")
            def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
                cursor = dbapi_conn.cursor()
                try:
                    # journal_mode reads the file first, so a file that is not a database fails here, unchanged
                    _switch_to_wal(cursor)
                    cursor.execute("PRAGMA synchronous=FULL")
                    cursor.execute("PRAGMA busy_timeout=15000")
                finally:
                    cursor.close()

            @sa_event.listens_for(engine, "begin")
            def _sqlite_begin(conn: Connection) -> None:
                # IMMEDIATE takes the write lock up front: no deferred read-to-write upgrade that fails with BUSY.
                conn.exec_driver_sql("BEGIN IMMEDIATE")

            return engine
        return sa.create_engine(
            self.url,
            pool_size=8,
            max_overflow=24,
            pool_timeout=5.0,
            pool_pre_ping=True,
            pool_recycle=1800,
            connect_args={
                "connect_timeout": max(1, int(connect_timeout)),
                "application_name": "mindie-help",
                # A lost server or network must not hang a request thread: bounded statements and TCP.
                "options": "-c statement_timeout=5000 -c lock_timeout=5000 -c idle_in_transaction_session_timeout=60000",
                "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
                "tcp_user_timeout": 10_000,
            },
        )

    def _migrate(self) -> None:
        types = _TYPES[self.dialect]
        with self.engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            conn.exec_driver_sql(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
                f" applied_at {types['float']} NOT NULL)"
            )
            done = {int(row[0]) for row in conn.exec_driver_sql("SELECT version FROM schema_version")}
            if done and max(done) > SCHEMA_VERSION:
                raise StoreError(
                    f"the database {self.display} has schema version {max(done)}, newer than this mindie-help knows "
                    f"({SCHEMA_VERSION}): upgrade mindie-help"
                )
            for version, description, statements in MIGRATIONS:
                if version in done:
                    continue
                for statement in statements:
                    conn.exec_driver_sql(statement.format(**types))
                conn.execute(
                    sa.text("INSERT INTO schema_version (version, description, applied_at) VALUES (:v, :d, :t)"),
                    {"v": version, "d": description, "t": time.time()},
                )
                log.info(kv("schema_migrated", database=self.dialect, version=version))

    def schema_versions(self) -> list[int]:
        with self.begin() as conn:
            return sorted(int(r[0]) for r in conn.exec_driver_sql("SELECT version FROM schema_version"))

    # --- availability ---

    @property
    def available(self) -> bool:
        return self._down_since is None

    def _mark_down(self, exc: BaseException) -> None:
        with self._state_lock:
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
            self.outages += 1
        log.warning(kv("database_unavailable", database=self.dialect, error=type(getattr(exc, "orig", None) or exc).__name__,
                       fallback="in-memory de-duplication; votes and gaps queued"))

    def _mark_up(self) -> None:
        with self._state_lock:
            since, self._down_since = self._down_since, None
        if since is not None:
            log.warning(kv("database_recovered", database=self.dialect, down_s=round(time.monotonic() - since, 1), pending=len(self._pending)))

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """One transaction, committed on exit. Raises DatabaseUnavailable at once while the database is down,
        or when this attempt fails for a reason that is not a bug in the statement."""
        if self._down_since is not None:
            raise DatabaseUnavailable(self.display)
        try:
            if self._sqlite_lock is None:
                with self.engine.begin() as conn:
                    yield conn
            else:
                with self._sqlite_lock, self.engine.begin() as conn:
                    yield conn
        except (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError, sa_exc.DisconnectionError) as exc:
            if _connection_lost(exc):
                self._mark_down(exc)
            raise DatabaseUnavailable(_reason(exc)) from exc

    def insert(self, table: sa.Table) -> Any:
        """The dialect's INSERT, which has on_conflict_do_update / on_conflict_do_nothing on both back-ends."""
        return (pg_dialect.insert if self.dialect == "postgresql" else sqlite_dialect.insert)(table)

    def probe(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except (sa_exc.SQLAlchemyError, OSError):
            return False
        self._mark_up()
        return True

    # --- writes that must not be lost: retried until the database is back ---

    def write_or_queue(self, what: str, write: Callable[[Connection], None]) -> bool:
        """Run `write` in a transaction now (True), or queue it for the maintenance thread (False)."""
        try:
            with self.begin() as conn:
                write(conn)
            return True
        except DatabaseUnavailable:
            self._queue(_Pending(what, write, time.time()))
            return False

    def _queue(self, item: _Pending) -> None:
        with self._pending_lock:
            if len(self._pending) >= self.MAX_PENDING:
                dropped = self._pending.popleft()
                log.error(kv("pending_write_dropped", what=dropped.what, queued_s=round(time.time() - dropped.queued_at)))
            self._pending.append(item)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def flush_pending(self) -> int:
        """Replay queued writes in order; stops at the first failure (the rest stay queued). Returns how many ran."""
        ran = 0
        while True:
            with self._pending_lock:
                if not self._pending:
                    return ran
                item = self._pending[0]
            try:
                with self.begin() as conn:
                    item.write(conn)
            except DatabaseUnavailable:
                return ran
            except sa_exc.SQLAlchemyError as exc:  # a write the database refuses for good: drop it, loudly
                log.error(kv("pending_write_failed", what=item.what, error=_reason(exc)))
            with self._pending_lock:
                if self._pending and self._pending[0] is item:
                    self._pending.popleft()
            ran += 1

    # --- replica heartbeat and background upkeep ---

    def heartbeat(self) -> None:
        now = time.time()
        stmt = self.insert(replicas).values(id=self.replica_id, started_at=now, heartbeat_at=now)
        stmt = stmt.on_conflict_do_update(index_elements=[replicas.c.id], set_={"heartbeat_at": stmt.excluded.heartbeat_at})
        with self.begin() as conn:
            conn.execute(stmt)
        self._last_heartbeat = time.monotonic()

    def cleanup(self, now: float | None = None) -> int:
        """Delete expired claims and replicas gone for a day. Returns the number of claims deleted."""
        now = time.time() if now is None else now
        with self.begin() as conn:
            deleted = conn.execute(sa.delete(claims).where(claims.c.expires_at <= now)).rowcount or 0
            conn.execute(sa.delete(replicas).where(replicas.c.heartbeat_at < now - 86_400))
        self._last_cleanup = time.monotonic()
        return int(deleted)

    def live_replicas(self) -> int:
        with self.begin() as conn:
            return int(conn.execute(
                sa.select(sa.func.count()).select_from(replicas).where(replicas.c.heartbeat_at >= time.time() - self.replica_timeout)
            ).scalar_one())

    def start_maintenance(self, interval: float = 0.5) -> None:
        """Register this replica and keep it alive; replay queued writes; clean up. Idempotent."""
        if self._thread is not None:
            return
        try:
            self.heartbeat()
        except DatabaseUnavailable:
            pass
        self._thread = threading.Thread(target=self._run, args=(interval,), name="mindie-help-db", daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        beat = min(self.HEARTBEAT_SECONDS, max(0.2, self.replica_timeout / 4))
        while not self._stop.wait(interval):
            try:
                if self._down_since is not None and not self.probe():
                    continue
                now = time.monotonic()
                if now - self._last_heartbeat >= beat:
                    self.heartbeat()
                if self._pending:
                    self.flush_pending()
                if now - self._last_cleanup >= self.CLEANUP_SECONDS:
                    self.cleanup()
            except DatabaseUnavailable:
                continue
            except Exception as exc:  # the upkeep thread must never die
                log.error(kv("database_upkeep_failed", error=type(exc).__name__))

    def status(self) -> dict[str, Any]:
        return {"database": self.dialect, "database_ok": self.available, "pending_writes": self.pending}

    def close(self) -> None:
        """Stop the upkeep thread, try queued writes once more, leave the replica list, release connections."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        if self._pending and self._down_since is not None:
            self.probe()
        if self._pending:
            self.flush_pending()
        if self._pending:
            log.error(kv("pending_writes_lost", count=len(self._pending), database=self.dialect))
        try:
            with self.begin() as conn:
                conn.execute(sa.delete(replicas).where(replicas.c.id == self.replica_id))
        except (DatabaseUnavailable, sa_exc.SQLAlchemyError):
            pass
        self.engine.dispose()


# --- state shared between replicas ----------------------------------------------------------------------

CHANNEL_MODES = ("auto", "mention", "off")


@dataclass(frozen=True)
class ChannelSettings:
    channel: str
    mode: str | None  # None: the environment's default (MINDIE_HELP_AUTO_REPLY[_CHANNELS])
    cooldown_seconds: float | None
    updated_at: float


@dataclass(frozen=True)
class Escalation:
    channel: str
    thread_key: str
    requested_by: str | None
    created_at: float


class SharedState:
    """Claims and marks every replica sees. Each method is one statement decided by a key's constraint.

    A claim is a row (kind, key). `claim()` wins when no row exists, the row has expired, or the row is still
    being processed (done = 0) by a replica whose heartbeat stopped (it died before finishing). `finish()` marks
    it processed. Duplicates of a claim in progress on a live replica lose: that replica will answer.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.warned_outage = 0  # the outage the in-memory fallback was last reported for

    def claim(self, kind: str, key: str, ttl: float, *, processing: bool = False, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        stmt = self.db.insert(claims).values(
            kind=kind, key=key, owner=self.db.replica_id, done=0 if processing else 1, expires_at=now + ttl, created_at=now,
        )
        alive = sa.select(replicas.c.id).where(replicas.c.heartbeat_at >= now - self.db.replica_timeout)
        stmt = stmt.on_conflict_do_update(
            index_elements=[claims.c.kind, claims.c.key],
            set_={c: stmt.excluded[c] for c in ("owner", "done", "expires_at", "created_at")},
            where=sa.or_(claims.c.expires_at <= now, sa.and_(claims.c.done == 0, claims.c.owner.not_in(alive))),
        ).returning(claims.c.key)
        with self.db.begin() as conn:
            return conn.execute(stmt).first() is not None

    def claim_outcome(self, kind: str, key: str, ttl: float, *, processing: bool = True) -> str:
        """Like claim(), saying how it went: "claimed"; "resumed" (won from a replica that died while processing
        it, so its reply may already be out: look before answering again); "busy" (another live replica is still
        processing it, so a retry should come later); or "done" (handled already, here or elsewhere)."""
        now = time.time()
        with self.db.begin() as conn:
            before = conn.execute(sa.select(claims.c.owner, claims.c.done, claims.c.expires_at)
                                  .where(claims.c.kind == kind, claims.c.key == key)).first()
        if self.claim(kind, key, ttl, processing=processing, now=now):
            unfinished = before is not None and not before.done and before.expires_at > now and before.owner != self.db.replica_id
            return "resumed" if unfinished else "claimed"
        with self.db.begin() as conn:
            row = conn.execute(sa.select(claims.c.owner, claims.c.done).where(claims.c.kind == kind, claims.c.key == key)).first()
        busy = row is not None and not row.done and row.owner != self.db.replica_id
        return "busy" if busy else "done"

    def finish(self, kind: str, key: str) -> None:
        with self.db.begin() as conn:
            conn.execute(sa.update(claims).where(claims.c.kind == kind, claims.c.key == key, claims.c.owner == self.db.replica_id).values(done=1))

    def release(self, kind: str, key: str) -> None:
        """Give a claim back (the work it guarded failed), so a later attempt may claim it."""
        with self.db.begin() as conn:
            conn.execute(sa.delete(claims).where(claims.c.kind == kind, claims.c.key == key, claims.c.owner == self.db.replica_id))

    def mark(self, kind: str, key: str, ttl: float, now: float | None = None) -> None:
        """Set (or extend) a mark whoever holds it."""
        now = time.time() if now is None else now
        stmt = self.db.insert(claims).values(kind=kind, key=key, owner=self.db.replica_id, done=1, expires_at=now + ttl, created_at=now)
        stmt = stmt.on_conflict_do_update(
            index_elements=[claims.c.kind, claims.c.key],
            set_={"expires_at": sa.func.max(claims.c.expires_at, stmt.excluded.expires_at) if self.db.dialect == "sqlite"
                  else sa.func.greatest(claims.c.expires_at, stmt.excluded.expires_at), "done": 1},
        )
        with self.db.begin() as conn:
            conn.execute(stmt)

    def live(self, kind: str, key: str, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        with self.db.begin() as conn:
            row = conn.execute(sa.select(claims.c.key).where(claims.c.kind == kind, claims.c.key == key, claims.c.expires_at > now)).first()
        return row is not None

    # --- announcements: something happened that every replica should catch up with (a corpus reload) ---

    def announce(self, kind: str, ttl: float = 30 * 86_400.0, now: float | None = None) -> float:
        """Record that `kind` happened now; returns the time recorded (see latest())."""
        now = time.time() if now is None else now
        self.mark(f"announce:{kind}", uuid.uuid4().hex, ttl, now=now)
        return now

    def latest(self, kind: str, now: float | None = None) -> float | None:
        """When `kind` was last announced (by any replica), or None."""
        now = time.time() if now is None else now
        with self.db.begin() as conn:
            found = conn.execute(
                sa.select(sa.func.max(claims.c.created_at)).where(claims.c.kind == f"announce:{kind}", claims.c.expires_at > now)
            ).scalar()
        return None if found is None else float(found)

    # --- escalations: one per thread ---

    def claim_escalation(self, channel: str, thread_key: str, *, user: str | None, fingerprint: str | None = None) -> Escalation | None:
        """None when this call created the escalation; else the existing one (someone asked already)."""
        now = time.time()
        stmt = self.db.insert(escalations).values(channel=channel, thread_key=thread_key, requested_by=user, fingerprint=fingerprint, created_at=now)
        stmt = stmt.on_conflict_do_nothing(index_elements=[escalations.c.channel, escalations.c.thread_key]).returning(escalations.c.channel)
        with self.db.begin() as conn:
            if conn.execute(stmt).first() is not None:
                return None
            row = conn.execute(
                sa.select(escalations.c.requested_by, escalations.c.created_at)
                .where(escalations.c.channel == channel, escalations.c.thread_key == thread_key)
            ).first()
        return Escalation(channel, thread_key, row[0] if row else None, float(row[1]) if row else now)

    def release_escalation(self, channel: str, thread_key: str) -> None:
        with self.db.begin() as conn:
            conn.execute(sa.delete(escalations).where(escalations.c.channel == channel, escalations.c.thread_key == thread_key))

    # --- resolved marks ---

    def mark_resolved(self, channel: str, thread_ts: str, user: str | None) -> bool:
        """True when this call marked the thread; False when it was already resolved."""
        stmt = self.db.insert(resolved).values(channel=channel, thread_ts=thread_ts, resolved_by=user, created_at=time.time())
        stmt = stmt.on_conflict_do_nothing(index_elements=[resolved.c.channel, resolved.c.thread_ts]).returning(resolved.c.channel)
        with self.db.begin() as conn:
            return conn.execute(stmt).first() is not None

    def is_resolved(self, channel: str, thread_ts: str) -> bool:
        with self.db.begin() as conn:
            return conn.execute(sa.select(resolved.c.channel).where(resolved.c.channel == channel, resolved.c.thread_ts == thread_ts)).first() is not None

    # --- per-channel settings ---

    def channel_settings(self, channel: str) -> ChannelSettings | None:
        with self.db.begin() as conn:
            row = conn.execute(sa.select(channel_settings).where(channel_settings.c.channel == channel)).first()
        return ChannelSettings(row.channel, row.mode, row.cooldown_seconds, row.updated_at) if row else None

    def reset_channel_mode(self, channel: str) -> ChannelSettings | None:
        """Forget a channel's own mode (back to the environment's); a cooldown set for it stays. None: no row left."""
        now = time.time()
        with self.db.begin() as conn:
            conn.execute(sa.update(channel_settings).where(channel_settings.c.channel == channel).values(mode=None, updated_at=now))
            conn.execute(sa.delete(channel_settings).where(channel_settings.c.channel == channel, channel_settings.c.cooldown_seconds.is_(None)))
            row = conn.execute(sa.select(channel_settings).where(channel_settings.c.channel == channel)).first()
        return ChannelSettings(row.channel, row.mode, row.cooldown_seconds, row.updated_at) if row else None

    def all_channel_settings(self) -> list[ChannelSettings]:
        with self.db.begin() as conn:
            rows = conn.execute(sa.select(channel_settings).order_by(channel_settings.c.channel)).fetchall()
        return [ChannelSettings(r.channel, r.mode, r.cooldown_seconds, r.updated_at) for r in rows]

    def set_channel(self, channel: str, *, mode: str | None = None, cooldown_seconds: float | None = None, clear: bool = False) -> ChannelSettings:
        """Upsert one channel's settings; None leaves a field as it is, clear=True removes the row."""
        if mode is not None and mode not in CHANNEL_MODES:
            raise ValueError(f"mode must be one of {', '.join(CHANNEL_MODES)}")
        if cooldown_seconds is not None and cooldown_seconds < 0:
            raise ValueError("cooldown_seconds must be >= 0")
        now = time.time()
        with self.db.begin() as conn:
            if clear:
                conn.execute(sa.delete(channel_settings).where(channel_settings.c.channel == channel))
                return ChannelSettings(channel, None, None, now)
            stmt = self.db.insert(channel_settings).values(channel=channel, mode=mode, cooldown_seconds=cooldown_seconds, updated_at=now)
            update: dict[str, Any] = {"updated_at": stmt.excluded.updated_at}
            if mode is not None:
                update["mode"] = stmt.excluded.mode
            if cooldown_seconds is not None:
                update["cooldown_seconds"] = stmt.excluded.cooldown_seconds
            conn.execute(stmt.on_conflict_do_update(index_elements=[channel_settings.c.channel], set_=update))
            row = conn.execute(sa.select(channel_settings).where(channel_settings.c.channel == channel)).one()
        return ChannelSettings(row.channel, row.mode, row.cooldown_seconds, row.updated_at)
