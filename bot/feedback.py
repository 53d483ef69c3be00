"""Feedback and knowledge-gap store (SQLite, WAL, one committed transaction per write).

* Votes: one per user per answer; a second click changes it. Rows keep the corpus entry id, the query
  fingerprint (sha256 of the normalised query, never the query itself), the channel and the time.
  Users are stored as a sha256 prefix of their Slack id (not the id itself), enough to keep one vote each.
* Unanswered queries: fingerprint plus a short redacted excerpt, so the corpus authors see what is missing.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bot.engine.normalize import clean, is_error_line, mask, scrub_surrogates

_SCHEMA = """
CREATE TABLE IF NOT EXISTS votes (
    answer_id   TEXT NOT NULL,
    voter       TEXT NOT NULL,
    entry_id    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    channel     TEXT,
    vote        INTEGER NOT NULL CHECK (vote IN (-1, 1)),
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (answer_id, voter)
);
CREATE INDEX IF NOT EXISTS votes_entry ON votes (entry_id);
CREATE TABLE IF NOT EXISTS unanswered (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL,
    excerpt     TEXT NOT NULL,
    lang        TEXT,
    surface     TEXT,
    channel     TEXT,
    suggestions TEXT,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS unanswered_fp ON unanswered (fingerprint);
"""

# --- normalisation and fingerprints ---------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def normalise_query(text: str) -> str:
    """Width-, case-, markup- and number-insensitive form of a query, so the same error from two logs groups.
    It is the engine's own clean-up (Slack markup, ANSI) and masking (timestamps, numbers, paths, addresses)."""
    return mask(clean(unicodedata.normalize("NFKC", text or ""))).lower()


def fingerprint(text: str) -> str:
    """sha256 hex of the normalised query."""
    return hashlib.sha256(normalise_query(text).encode("utf-8")).hexdigest()


def voter_id(user: str) -> str:
    return hashlib.sha256(f"slack-user:{user}".encode()).hexdigest()[:24]


def answer_id_for(fp: str, entry_id: str) -> str:
    """Stable id for 'this answer to this query': the vote key when the caller has nothing better."""
    return hashlib.sha256(f"{fp}:{entry_id}".encode()).hexdigest()[:32]


# --- redaction ------------------------------------------------------------------------------------

_REDACTIONS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:xox[abposer]|xapp)-[A-Za-z0-9-]+"), "<token>"),
    (re.compile(r"(?i)\b(password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key|authorization)\b(\s*[:=]\s*)\S+"), r"\1\2<redacted>"),
    (re.compile(r"(?i)bearer\s+\S+"), "Bearer <redacted>"),
    (re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>"), "<user>"),
    (re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"), "<email>"),
    (re.compile(r"(?i)\b(?:https?|ftp)://[^\s>|]+"), "<url>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"), "<ip>"),
    (re.compile(r"(?i)\b(?:[0-9a-f]{1,4}:){4,7}[0-9a-f]{1,4}\b"), "<ip>"),
    (re.compile(r"/(?:home|Users|root)/[^/\s]+"), "/home/<user>"),
    (re.compile(r"\b[0-9a-fA-F]{24,}\b"), "<hex>"),
    (re.compile(r"\b[A-Za-z0-9+/]{40,}={0,2}"), "<blob>"),
    (re.compile(r"\b\d{7,}\b"), "<n>"),
]


def redact(text: str) -> str:
    for pattern, repl in _REDACTIONS:
        text = pattern.sub(repl, text)
    return text


def excerpt(text: str, limit: int = 200) -> str:
    """A short redacted excerpt: the first error-looking lines, else the first lines of the query."""
    text = scrub_surrogates(text or "")  # SQLite cannot store a lone surrogate (issue #11)
    lines = [ln.strip() for ln in text.replace("\r", "\n").split("\n") if ln.strip() and ln.strip() != "```"]
    picked = [ln for ln in lines if is_error_line(ln)][:2] or lines[:2]
    out = redact(" ⏎ ".join(ln[:limit] for ln in picked))
    out = _SPACE.sub(" ", out).strip()
    return out if len(out) <= limit else out[: limit - 1] + "…"


# --- the store -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntryVotes:
    entry_id: str
    helpful: int
    unhelpful: int


@dataclass(frozen=True)
class Gap:
    fingerprint: str
    count: int
    last_seen: float
    excerpt: str
    suggestions: str


class FeedbackStoreError(Exception):
    """The feedback database cannot be opened (bad path, not a database); nothing was written to it."""


class FeedbackStore:
    """Thread-safe; every write is its own committed transaction (WAL, synchronous=FULL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        conn = None
        try:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=15.0, check_same_thread=False, isolation_level=None)
            # journal_mode reads the file first, so a file that is not a database fails here, unchanged
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=15000")
            conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            if conn is not None:
                conn.close()
            raise FeedbackStoreError(f"cannot open the feedback store {self.path}: {exc}") from None
        self._conn = conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "FeedbackStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, sql: str, params: tuple) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(sql, params)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def record_vote(
        self,
        *,
        user: str,
        entry_id: str,
        fingerprint: str,
        helpful: bool,
        channel: str | None = None,
        answer_id: str | None = None,
        now: float | None = None,
    ) -> str:
        """Store or change a vote. Returns "new", "changed" or "same"."""
        if not user or not entry_id or not fingerprint:
            raise ValueError("user, entry_id and fingerprint are required")
        answer = answer_id or answer_id_for(fingerprint, entry_id)
        voter = voter_id(user)
        vote = 1 if helpful else -1
        ts = time.time() if now is None else now
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(
                    "SELECT vote FROM votes WHERE answer_id = ? AND voter = ?", (answer, voter)
                ).fetchone()
                if row is None:
                    outcome = "new"
                    self._conn.execute(
                        "INSERT INTO votes (answer_id, voter, entry_id, fingerprint, channel, vote, created_at, updated_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (answer, voter, entry_id, fingerprint, channel, vote, ts, ts),
                    )
                else:
                    outcome = "same" if row[0] == vote else "changed"
                    self._conn.execute(
                        "UPDATE votes SET vote = ?, updated_at = ?, channel = COALESCE(?, channel) WHERE answer_id = ? AND voter = ?",
                        (vote, ts, channel, answer, voter),
                    )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return outcome

    def record_unanswered(
        self,
        query: str,
        *,
        lang: str | None = None,
        surface: str | None = None,
        channel: str | None = None,
        suggestions: list[str] | None = None,
        now: float | None = None,
    ) -> str:
        """Remember a query the engine could not answer (fingerprint + short redacted excerpt). Returns the fingerprint."""
        fp = fingerprint(query)
        self._write(
            "INSERT INTO unanswered (fingerprint, excerpt, lang, surface, channel, suggestions, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (fp, excerpt(query), lang, surface, channel, " | ".join((suggestions or [])[:3])[:300], time.time() if now is None else now),
        )
        return fp

    # --- reading ---

    def vote_of(self, *, user: str, entry_id: str, fingerprint: str, answer_id: str | None = None) -> int | None:
        answer = answer_id or answer_id_for(fingerprint, entry_id)
        with self._lock:
            row = self._conn.execute("SELECT vote FROM votes WHERE answer_id = ? AND voter = ?", (answer, voter_id(user))).fetchone()
        return None if row is None else int(row[0])

    def entry_votes(self) -> list[EntryVotes]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT entry_id, SUM(vote = 1), SUM(vote = -1) FROM votes GROUP BY entry_id"
                " ORDER BY SUM(vote = -1) DESC, SUM(vote = 1) DESC, entry_id"
            ).fetchall()
        return [EntryVotes(r[0], int(r[1] or 0), int(r[2] or 0)) for r in rows]

    def gaps(self, limit: int = 50) -> list[Gap]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT u.fingerprint, COUNT(*), MAX(u.created_at),"
                " (SELECT excerpt FROM unanswered x WHERE x.fingerprint = u.fingerprint ORDER BY x.created_at DESC LIMIT 1),"
                " (SELECT suggestions FROM unanswered x WHERE x.fingerprint = u.fingerprint ORDER BY x.created_at DESC LIMIT 1)"
                " FROM unanswered u GROUP BY u.fingerprint ORDER BY COUNT(*) DESC, MAX(u.created_at) DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [Gap(r[0], int(r[1]), float(r[2]), r[3] or "", r[4] or "") for r in rows]

    def report(self) -> str:
        votes = self.entry_votes()
        gaps = self.gaps()
        out: list[str] = [f"Feedback report ({self.path})", ""]
        out.append("Votes per entry (helpful / unhelpful)")
        if not votes:
            out.append("  no votes yet")
        else:
            width = max(len("entry"), *(len(v.entry_id) for v in votes))
            out.append(f"  {'entry'.ljust(width)}  helpful  unhelpful")
            for v in votes:
                out.append(f"  {v.entry_id.ljust(width)}  {v.helpful:>7}  {v.unhelpful:>9}")
            total_up = sum(v.helpful for v in votes)
            total_down = sum(v.unhelpful for v in votes)
            out.append(f"  {'total'.ljust(width)}  {total_up:>7}  {total_down:>9}")
        out.append("")
        out.append("Knowledge gaps (queries with no confident answer, most frequent first)")
        if not gaps:
            out.append("  none recorded")
        else:
            for g in gaps:
                when = datetime.fromtimestamp(g.last_seen, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
                out.append(f"  {g.count:>4}x  last {when} UTC  fp {g.fingerprint[:12]}  {g.excerpt}")
                if g.suggestions:
                    out.append(f"         closest: {g.suggestions}")
        return "\n".join(out) + "\n"
