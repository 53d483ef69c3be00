"""Work off the request threads: a bounded priority queue served by a few threads of the bot's own.

Bolt's listener threads only acknowledge and enqueue, so a slash command or a click is acknowledged in
milliseconds even while every worker is busy with a megabyte paste (issue #11, finding 2: with 50 large events
in flight, 20 of 20 commands missed Slack's 3-second ack because Bolt's pool sat on the engine).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from typing import Any

from bot.logs import get_logger, kv

log = get_logger()

EXPLICIT = 0  # someone asked: mentions, DMs, slash commands, buttons
AUTOMATIC = 1  # auto-replies to pasted logs wait behind them


class WorkQueue:
    """`submit()` never blocks: it returns False when the queue is full (the caller says the bot is busy)."""

    def __init__(self, name: str, workers: int, maxsize: int = 200) -> None:
        self.name = name
        self._queue: queue.PriorityQueue[tuple[int, int, Callable[[], Any] | None]] = queue.PriorityQueue(maxsize)
        self._order = itertools.count()
        self._threads = [
            threading.Thread(target=self._run, name=f"mindie-help-{name}-{n}", daemon=True) for n in range(max(1, workers))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, job: Callable[[], Any], priority: int = EXPLICIT) -> bool:
        try:
            self._queue.put_nowait((priority, next(self._order), job))
        except queue.Full:
            return False
        return True

    def pending(self) -> int:
        return self._queue.qsize()

    def _run(self) -> None:
        while True:
            _, _, job = self._queue.get()
            if job is None:
                return
            try:
                job()
            except Exception as exc:  # a job logs its own failures; this only keeps the worker alive
                log.error(kv("work_failed", queue=self.name, error=type(exc).__name__), exc_info=exc)

    def close(self) -> None:
        """Let queued work finish, then stop the threads (used at shutdown, after wait_idle)."""
        for _ in self._threads:
            self._queue.put((99, next(self._order), None))
