"""Feedback and knowledge-gap store, in the shared database of bot/storage.py (SQLite by default, or PostgreSQL).

* Votes: one per user per answer; a second click changes it. Rows keep the corpus entry id, the query
  fingerprint (sha256 of the normalised query, never the query itself), the channel and the time.
  Users are stored as a sha256 prefix of their Slack id (not the id itself), enough to keep one vote each.
* Unanswered queries: fingerprint plus a short redacted excerpt, so the corpus authors see what is missing.
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from bot.engine.normalize import clean, is_error_line, mask, strip_control
from bot.storage import Database, StoreError
from bot.storage import escalations as escalations_table
from bot.storage import replies as replies_table
from bot.storage import unanswered as unanswered_table
from bot.storage import votes as votes_table

if TYPE_CHECKING:
    from bot.settings import Settings

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
    # SQLite cannot store a lone surrogate, PostgreSQL no NUL, and the report prints excerpts to a terminal (issue #11)
    text = strip_control(text or "")
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


FeedbackStoreError = StoreError  # the feedback database cannot be opened or reached; nothing was written to it


@dataclass(frozen=True)
class Activity:
    """Counts over a time window, for the report and the App Home."""

    days: int
    answered: int
    abstained: int
    helpful: int
    unhelpful: int
    escalations: int


class FeedbackStore:
    """Votes, knowledge gaps and replies in the shared database (see bot/storage.py). Thread-safe.

    `target` is a SQLite path or a database URL; `db` shares an open Database instead (the Slack bot's).
    Writes that find the database down are queued and replayed by the Database's upkeep thread.
    """

    def __init__(self, target: str | Path | None = None, *, db: Database | None = None) -> None:
        if db is None and target is None:
            raise ValueError("give a path, a database URL or a Database")
        self.db = db if db is not None else Database(target)  # type: ignore[arg-type]
        self._owns_db = db is None
        self.path = self.db.display

    @classmethod
    def from_settings(cls, settings: "Settings") -> "FeedbackStore":
        """The configured database (MINDIE_HELP_DATABASE_URL, else the SQLite file), owned by the store."""
        store = cls(db=Database(settings.database_target(), replica_timeout=settings.replica_timeout_seconds))
        store._owns_db = True
        return store

    def close(self) -> None:
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> "FeedbackStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        """Store or change a vote: "new", "changed" or "same"; "queued" when the database is down (retried later).

        One upsert keyed by (answer, voter); a click older than the stored one (a queued retry) never overwrites it.
        """
        if not user or not entry_id or not fingerprint:
            raise ValueError("user, entry_id and fingerprint are required")
        answer = answer_id or answer_id_for(fingerprint, entry_id)
        vote = 1 if helpful else -1
        ts = time.time() if now is None else now
        stmt = self.db.insert(votes_table).values(
            answer_id=answer, voter=voter_id(user), entry_id=entry_id, fingerprint=fingerprint, channel=channel,
            vote=vote, prev_vote=None, created_at=ts, updated_at=ts,
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[votes_table.c.answer_id, votes_table.c.voter],
            set_={
                "prev_vote": votes_table.c.vote,
                "vote": stmt.excluded.vote,
                "updated_at": stmt.excluded.updated_at,
                "channel": sa.func.coalesce(stmt.excluded.channel, votes_table.c.channel),
            },
            where=votes_table.c.updated_at <= stmt.excluded.updated_at,
        ).returning(votes_table.c.prev_vote)
        outcome = "same"

        def write(conn: sa.Connection) -> None:
            nonlocal outcome
            row = conn.execute(stmt).first()
            if row is not None:  # no row: an older click than the one stored, which stays
                outcome = "new" if row[0] is None else ("same" if row[0] == vote else "changed")

        return outcome if self.db.write_or_queue("vote", write) else "queued"

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
        stmt = sa.insert(unanswered_table).values(
            fingerprint=fp, excerpt=excerpt(query), lang=lang, surface=surface, channel=channel,
            suggestions=" | ".join((suggestions or [])[:3])[:300], created_at=time.time() if now is None else now,
        )
        self.db.write_or_queue("gap", lambda conn: conn.execute(stmt))
        return fp

    def record_reply(
        self,
        *,
        surface: str,
        channel: str | None,
        fingerprint: str,
        entry_id: str | None,
        answered: bool,
        confidence: float | None = None,
        lang: str | None = None,
        now: float | None = None,
    ) -> None:
        """One row per reply the bot sent (no text): the activity counts of the report and the App Home."""
        stmt = sa.insert(replies_table).values(
            surface=surface, channel=channel, fingerprint=fingerprint, entry_id=entry_id, answered=1 if answered else 0,
            confidence=confidence, lang=lang, created_at=time.time() if now is None else now,
        )
        self.db.write_or_queue("reply", lambda conn: conn.execute(stmt))

    # --- reading ---

    def vote_of(self, *, user: str, entry_id: str, fingerprint: str, answer_id: str | None = None) -> int | None:
        answer = answer_id or answer_id_for(fingerprint, entry_id)
        with self.db.begin() as conn:
            row = conn.execute(
                sa.select(votes_table.c.vote).where(votes_table.c.answer_id == answer, votes_table.c.voter == voter_id(user))
            ).first()
        return None if row is None else int(row[0])

    def entry_votes(self) -> list[EntryVotes]:
        up = sa.func.sum(sa.case((votes_table.c.vote == 1, 1), else_=0))
        down = sa.func.sum(sa.case((votes_table.c.vote == -1, 1), else_=0))
        query = (
            sa.select(votes_table.c.entry_id, up, down)
            .group_by(votes_table.c.entry_id)
            .order_by(down.desc(), up.desc(), votes_table.c.entry_id)
        )
        with self.db.begin() as conn:
            rows = conn.execute(query).fetchall()
        return [EntryVotes(r[0], int(r[1] or 0), int(r[2] or 0)) for r in rows]

    def gaps(self, limit: int = 50, since: float | None = None) -> list[Gap]:
        """The most frequent unanswered queries; `since` (a time) counts only those asked from then on."""
        with self.db.begin() as conn:
            rows = conn.execute(sa.text(
                "SELECT u.fingerprint, COUNT(*), MAX(u.created_at),"
                " (SELECT excerpt FROM unanswered x WHERE x.fingerprint = u.fingerprint ORDER BY x.created_at DESC LIMIT 1),"
                " (SELECT suggestions FROM unanswered x WHERE x.fingerprint = u.fingerprint ORDER BY x.created_at DESC LIMIT 1)"
                " FROM unanswered u WHERE u.created_at >= :since"
                " GROUP BY u.fingerprint ORDER BY COUNT(*) DESC, MAX(u.created_at) DESC LIMIT :limit"
            ), {"limit": limit, "since": since if since is not None else 0.0}).fetchall()
        return [Gap(r[0], int(r[1]), float(r[2]), r[3] or "", r[4] or "") for r in rows]

    def activity(self, days: int, now: float | None = None) -> Activity:
        since = (time.time() if now is None else now) - days * 86_400
        with self.db.begin() as conn:
            answered, abstained = conn.execute(
                sa.select(
                    sa.func.sum(sa.case((replies_table.c.answered == 1, 1), else_=0)),
                    sa.func.sum(sa.case((replies_table.c.answered == 0, 1), else_=0)),
                ).where(replies_table.c.created_at >= since)
            ).one()
            up, down = conn.execute(
                sa.select(
                    sa.func.sum(sa.case((votes_table.c.vote == 1, 1), else_=0)),
                    sa.func.sum(sa.case((votes_table.c.vote == -1, 1), else_=0)),
                ).where(votes_table.c.updated_at >= since)
            ).one()
            escalated = conn.execute(
                sa.select(sa.func.count()).select_from(escalations_table).where(escalations_table.c.created_at >= since)
            ).scalar_one()
        return Activity(days, int(answered or 0), int(abstained or 0), int(up or 0), int(down or 0), int(escalated or 0))

    def report_json(self) -> dict:
        """For scripts: {"entries": [{"id", "up", "down"}], "gaps": [{"fingerprint", "count", "last_seen", "excerpt", "suggestions"}]}."""
        return {
            "entries": [{"id": v.entry_id, "up": v.helpful, "down": v.unhelpful} for v in self.entry_votes()],
            "gaps": [
                {"fingerprint": g.fingerprint, "count": g.count, "last_seen": g.last_seen, "excerpt": g.excerpt, "suggestions": g.suggestions}
                for g in self.gaps()
            ],
        }

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
        out.append("")
        out.append("Activity (replies, votes and escalations)")
        for a in (self.activity(7), self.activity(30)):
            out.append(f"  last {a.days:>2} days  answered {a.answered}  abstained {a.abstained}  helpful {a.helpful}"
                       f"  unhelpful {a.unhelpful}  escalations {a.escalations}")
        return "\n".join(out) + "\n"
