"""Event de-duplication, thread memory and per-user cooldowns, shared by every replica through the database
(bot/storage.py SharedState), with bounded in-memory caches in front: they answer same-replica repeats without a
round trip, and stand in alone (with a warning) while the database is unreachable."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Generic, TypeVar

from bot.logs import get_logger, kv

if TYPE_CHECKING:
    from bot.storage import SharedState

log = get_logger()

V = TypeVar("V")


class TTLCache(Generic[V]):
    """A bounded mapping whose items expire `ttl` seconds after they were set (oldest evicted first when full)."""

    def __init__(self, ttl: float, maxsize: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= 0 or maxsize <= 0:
            raise ValueError("ttl and maxsize must be positive")
        self.ttl = ttl
        self.maxsize = maxsize
        self._clock = clock
        self._items: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def _purge(self, now: float) -> None:
        while self._items:
            key, (expires, _) = next(iter(self._items.items()))
            if expires > now and len(self._items) <= self.maxsize:
                break
            self._items.popitem(last=False)

    def get(self, key: Hashable, default: V | None = None) -> V | None:
        with self._lock:
            now = self._clock()
            item = self._items.get(key)
            if item is None or item[0] <= now:
                return default
            return item[1]

    def set(self, key: Hashable, value: V) -> None:
        with self._lock:
            now = self._clock()
            self._items.pop(key, None)
            self._items[key] = (now + self.ttl, value)
            self._purge(now)

    def __contains__(self, key: Hashable) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        with self._lock:
            self._purge(self._clock())
            return len(self._items)

    def pop(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def add_if_absent(self, key: Hashable, value: V) -> bool:
        """Atomically set key unless a live value exists. True when this call added it (i.e. first sighting)."""
        with self._lock:
            now = self._clock()
            item = self._items.get(key)
            if item is not None and item[0] > now:
                return False
            self._items.pop(key, None)
            self._items[key] = (now + self.ttl, value)
            self._purge(now)
            return True


def _key(key: Hashable) -> str:
    return ":".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


class _Shared:
    """The database when it answers, the in-memory cache when it does not (warned once per outage)."""

    def __init__(self, state: "SharedState | None") -> None:
        self.state = state

    def fallback(self, what: str) -> None:
        state = self.state
        if state is not None and state.warned_outage != state.db.outages:  # once per outage for all the bot's caches
            state.warned_outage = state.db.outages
            log.warning(kv("shared_state_fallback", what=what, to="memory", note="replicas may repeat work until the database is back"))

    def call(self, what: str, fn: Callable[[], V], default: V) -> V | None:
        """fn() against the database; None when there is none or it is unavailable (the caller uses memory)."""
        from bot.storage import DatabaseUnavailable

        if self.state is None:
            return None
        try:
            return fn()
        except DatabaseUnavailable:
            self.fallback(what)
            return None


class Deduper:
    """First-sighting check for Slack deliveries: by event_id (retries), by (channel, ts) (same message, two
    events) and by trigger_id (a replayed slash command or click). With a database, exactly one replica wins.

    These claims are "processing" until the listener that holds them returns (see tracking()): a duplicate
    arriving meanwhile is "busy" while the replica holding it is alive, and is taken over once that replica's
    heartbeat stops (it died before answering). After that they are "done" for `ttl` seconds.
    """

    def __init__(self, ttl: float = 3600.0, maxsize: int = 20_000, state: "SharedState | None" = None) -> None:
        self.ttl = ttl
        self._events: TTLCache[bool] = TTLCache(ttl, maxsize)
        self._messages: TTLCache[bool] = TTLCache(ttl, maxsize)
        self._shared = _Shared(state)
        self._local = threading.local()
        self._resumed: TTLCache[bool] = TTLCache(ttl, maxsize)  # claims won from a replica that died holding them

    def _claim(self, cache: TTLCache[bool], kind: str, key: Hashable, db_key: str) -> str:
        """"claimed", "busy" or "done". A claim resumed from a dead replica is "claimed" here and remembered
        (see resumed_message())."""
        if key in cache:  # this replica saw it: no round trip
            return "done"
        state = self._shared.state
        outcome = self._shared.call(kind, lambda: state.claim_outcome(kind, db_key, self.ttl), "done")  # type: ignore[union-attr]
        if outcome is None:
            return "claimed" if cache.add_if_absent(key, True) else "done"
        if outcome == "resumed":
            self._resumed.set((kind, db_key), True)
            outcome = "claimed"
        if outcome == "claimed":
            cache.set(key, True)
            held = getattr(self._local, "claims", None)
            if held is not None:
                held.append((kind, db_key))
        return outcome

    def claim_event(self, event_id: str | None) -> str:
        """"claimed", "busy" (another replica is on it: have Slack retry later) or "done"."""
        if not event_id:
            return "claimed"
        return self._claim(self._events, "event", event_id, event_id)

    def first_event(self, event_id: str | None) -> bool:
        return self.claim_event(event_id) == "claimed"

    def claim_request(self, kind: str, trigger_id: str | None) -> str:
        """A slash command or interaction, by its trigger_id: Slack never retries these, so a repeat is a replay."""
        if not trigger_id:
            return "claimed"
        return self._claim(self._events, kind, (kind, trigger_id), trigger_id)

    def first_request(self, kind: str, trigger_id: str | None) -> bool:
        return self.claim_request(kind, trigger_id) == "claimed"

    def claim_message(self, channel: str | None, ts: str | None) -> bool:
        """True for the first handler that claims this message; later claims (other event types, retries) get False."""
        if not channel or not ts:
            return True
        return self._claim(self._messages, "message", (channel, ts), f"{channel}:{ts}") == "claimed"

    def resumed_message(self, channel: str | None, ts: str | None) -> bool:
        """Whether this replica took the message over from one that died while answering it: that reply may
        have reached Slack before the death, so the thread should be looked at before answering again."""
        return bool(channel and ts) and ("message", f"{channel}:{ts}") in self._resumed

    def finish(self, kind: str, key: str) -> None:
        """The work for a processing claim is done: its duplicates are dropped even if this replica dies later."""
        self._shared.call(kind, lambda: self._shared.state.finish(kind, key), None)  # type: ignore[union-attr]

    def hand_off(self) -> list[tuple[str, str]]:
        """The claims this thread holds, now no longer its to finish: the work they stand for was deferred to a
        worker (bot/slack/work.py), which finishes them when it is done (tracking() around the job)."""
        held = getattr(self._local, "claims", None)
        if not held:
            return []
        self._local.claims = []
        return held

    def take_back(self, claims: Iterable[tuple[str, str]]) -> None:
        """Claims whose hand-off failed (the queue was full): this thread finishes them after all."""
        held = getattr(self._local, "claims", None)
        if held is not None:
            held.extend(claims)
        else:
            for kind, key in claims:
                self.finish(kind, key)

    @contextmanager
    def tracking(self, claims: Iterable[tuple[str, str]] = ()) -> Iterator[None]:
        """Around one listener: the claims given, and those it takes on this thread, are finished when it returns."""
        self._local.claims = list(claims)
        try:
            yield
        finally:
            held, self._local.claims = self._local.claims, None
            for kind, key in held:
                self.finish(kind, key)


class SharedMarks:
    """Keys that stay marked for `ttl` seconds on every replica (e.g. threads the bot answered)."""

    def __init__(self, kind: str, ttl: float, maxsize: int = 50_000, state: "SharedState | None" = None) -> None:
        self.kind = kind
        self.ttl = ttl
        self._cache: TTLCache[float] = TTLCache(ttl, maxsize)
        self._shared = _Shared(state)

    def __contains__(self, key: Hashable) -> bool:
        if key in self._cache:
            return True
        live = self._shared.call(self.kind, lambda: self._shared.state.live(self.kind, _key(key)), False)  # type: ignore[union-attr]
        return bool(live)

    def set(self, key: Hashable, value: float) -> None:
        self._cache.set(key, value)
        self._shared.call(self.kind, lambda: self._shared.state.mark(self.kind, _key(key), self.ttl), None)  # type: ignore[union-attr]

    def claim(self, key: Hashable) -> bool:
        """Atomically mark the key; False when it was marked already (by any replica)."""
        if key in self._cache:
            return False
        won = self._shared.call(self.kind, lambda: self._shared.state.claim(self.kind, _key(key), self.ttl), False)  # type: ignore[union-attr]
        if won is None:
            return self._cache.add_if_absent(key, time.time())
        if won:
            self._cache.set(key, time.time())
        return won

    def release(self, key: Hashable) -> None:
        self._cache.pop(key)
        self._shared.call(self.kind, lambda: self._shared.state.release(self.kind, _key(key)), None)  # type: ignore[union-attr]


class Cooldown:
    """Per-key rate limit: `allow(key)` is True at most once per `seconds` (0 disables the limit), on all replicas.
    `seconds` may be overridden per call (a channel's own cooldown)."""

    def __init__(self, seconds: float, maxsize: int = 10_000, state: "SharedState | None" = None) -> None:
        self.seconds = seconds
        self._cache: TTLCache[bool] = TTLCache(max(seconds, 1.0), maxsize)
        self._shared = _Shared(state)

    def active(self, key: str, seconds: float | None = None) -> bool:
        own = seconds is None or seconds == self.seconds
        if (self.seconds if seconds is None else seconds) <= 0:
            return False
        if own and key in self._cache:
            return True
        return bool(self._shared.call("cooldown", lambda: self._shared.state.live("cooldown", key), False))  # type: ignore[union-attr]

    def allow(self, key: str, seconds: float | None = None) -> bool:
        ttl = self.seconds if seconds is None else seconds
        if ttl <= 0:
            return True
        won = self._shared.call("cooldown", lambda: self._shared.state.claim("cooldown", key, ttl), False)  # type: ignore[union-attr]
        if won is None:
            return self._cache.add_if_absent(key, True)
        if won:
            self._cache.set(key, True)
        return won
