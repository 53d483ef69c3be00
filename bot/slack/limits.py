"""Rate limits for what a person can make the bot do: answers on request, and pings to the support group.

Token buckets keyed by user or channel, thread-safe and bounded in memory (the least recently used keys go
first, which only ever forgets a limit, never invents one).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable


class RateLimiter:
    """At most `per_minute` events per key on average, in bursts of at most `burst`; 0 disables the limit."""

    def __init__(self, per_minute: float, burst: int | None = None, maxsize: int = 20_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = per_minute / 60.0
        self.burst = float(burst if burst is not None else max(1, round(per_minute / 2)))
        self.maxsize = maxsize
        self._clock = clock
        self._buckets: OrderedDict[Hashable, tuple[float, float]] = OrderedDict()  # key -> (tokens, last time)
        self._lock = threading.Lock()

    def allow(self, key: Hashable) -> bool:
        """Take one token for key; False when its bucket is empty."""
        if self.rate <= 0:
            return True
        with self._lock:
            now = self._clock()
            tokens, last = self._buckets.pop(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
            while len(self._buckets) > self.maxsize:
                self._buckets.popitem(last=False)
            return allowed

    def wait_seconds(self, key: Hashable) -> int:
        """Roughly how long until key may act again (for the message that says so)."""
        if self.rate <= 0:
            return 0
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, self._clock()))
        tokens = min(self.burst, tokens + (self._clock() - last) * self.rate)
        return max(1, round((1.0 - tokens) / self.rate)) if tokens < 1.0 else 0
