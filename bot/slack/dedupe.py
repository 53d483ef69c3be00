"""Small thread-safe, bounded, time-limited caches: event de-duplication, thread memory, per-user cooldown."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

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


class Deduper:
    """First-sighting check for Slack deliveries: by event_id (retries) and by (channel, ts) (same message, two events)."""

    def __init__(self, ttl: float = 3600.0, maxsize: int = 20_000) -> None:
        self._events: TTLCache[bool] = TTLCache(ttl, maxsize)
        self._messages: TTLCache[bool] = TTLCache(ttl, maxsize)

    def first_event(self, event_id: str | None) -> bool:
        if not event_id:
            return True
        return self._events.add_if_absent(event_id, True)

    def claim_message(self, channel: str | None, ts: str | None) -> bool:
        """True for the first handler that claims this message; later claims (other event types, retries) get False."""
        if not channel or not ts:
            return True
        return self._messages.add_if_absent((channel, ts), True)


class Cooldown:
    """Per-key rate limit: `allow(key)` is True at most once per `seconds` (0 disables the limit)."""

    def __init__(self, seconds: float, maxsize: int = 10_000) -> None:
        self.seconds = seconds
        self._cache: TTLCache[bool] | None = TTLCache(seconds, maxsize) if seconds > 0 else None

    def active(self, key: str) -> bool:
        return self._cache is not None and key in self._cache

    def allow(self, key: str) -> bool:
        if self._cache is None:
            return True
        return self._cache.add_if_absent(key, True)
