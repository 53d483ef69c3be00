"""A health check that works in Socket Mode, where no HTTP port is open.

`mindie-help serve` keeps a small JSON heartbeat file up to date (Heartbeat: written atomically every
MINDIE_HELP_HEALTH_INTERVAL_SECONDS from a daemon thread); `mindie-help health` (check()) reads it and says
whether that process is healthy: the file is there and fresh, its process alive, the engine loaded, and the
Slack side up (Socket Mode: the WebSocket connected; HTTP mode: the server answers GET /healthz).

The file holds no secret: pid, host, mode, state, engine ready, connected, the HTTP port, the database state and
times. Several `serve` processes on one host need one file each (MINDIE_HELP_HEALTH_FILE).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.logs import get_logger, kv

log = get_logger()

FORMAT = 1
STARTING, SERVING, STOPPED = "starting", "serving", "stopped"
HTTP_PROBE_TIMEOUT = 3.0


class Heartbeat:
    """Writes the heartbeat of this process: `set()` changes fields (written at once), `watch()` installs a
    probe whose fields are read at every beat (e.g. whether the Socket Mode client is connected)."""

    def __init__(self, path: Path, mode: str, interval: float = 5.0) -> None:
        self.path = Path(path)
        self.mode = mode
        self.interval = interval
        self.pid = os.getpid()
        self.host = socket.gethostname()
        self.started_at = time.time()
        self._fields: dict[str, Any] = {"state": STARTING, "engine_ready": False, "connected": False}
        self._probe: Callable[[], dict[str, Any]] | None = None
        self._connected: bool | None = None
        self._connected_changed = self.started_at
        self._lock = threading.RLock()  # one write at a time (the beat thread, set(), stop())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    @classmethod
    def from_settings(cls, settings: Any, mode: str) -> "Heartbeat":
        return cls(settings.health_path(), mode, settings.health_interval_seconds)

    # ---- what is written ----------------------------------------------------------------------
    def set(self, **fields: Any) -> None:
        with self._lock:
            self._fields.update(fields)
        self.write()

    def watch(self, probe: Callable[[], dict[str, Any]] | None) -> None:
        with self._lock:
            self._probe = probe
        self.write()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            fields = dict(self._fields)
            probe = self._probe
        if probe is not None and fields.get("state") == SERVING:
            try:
                fields.update(probe())
            except Exception as exc:  # a probe that fails is reported, never fatal
                fields["probe_error"] = type(exc).__name__
        connected = bool(fields.get("connected"))
        now = time.time()
        if connected != self._connected:
            self._connected, self._connected_changed = connected, now
        return {
            "format": FORMAT,
            "pid": self.pid,
            "host": self.host,
            "mode": self.mode,
            **fields,
            "connected": connected,
            "connected_changed_at": round(self._connected_changed, 3),
            "started_at": round(self.started_at, 3),
            "updated_at": round(now, 3),
            "interval": self.interval,
        }

    def write(self) -> bool:
        """Replace the file atomically (a reader sees the old or the new heartbeat, never half of one)."""
        with self._lock:
            data = json.dumps(self.snapshot(), sort_keys=True, default=str).encode()
            tmp = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, 0o644)
                os.replace(tmp, self.path)
            except OSError as exc:
                if tmp is not None:
                    try:
                        os.unlink(tmp)
                    except OSError:
                        pass
                if not self._failing:
                    log.warning(kv("health_file_unwritable", path=str(self.path), error=type(exc).__name__,
                                   detail=exc.strerror))
                self._failing = True
                return False
            if self._failing:
                log.info(kv("health_file_writable", path=str(self.path)))
            self._failing = False
            return True

    # ---- the beat -----------------------------------------------------------------------------
    def start(self) -> "Heartbeat":
        """Write at once (replacing what an earlier process left there), then every `interval` seconds."""
        self._warn_if_shared()
        self.write()
        self._thread = threading.Thread(target=self._run, name="mindie-help-heartbeat", daemon=True)
        self._thread.start()
        log.info(kv("health_file", path=str(self.path), interval=self.interval))
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.write()
            except Exception as exc:  # never let the beat die: a stale file would call the bot dead
                log.error(kv("heartbeat_failed", error=type(exc).__name__))

    def stop(self) -> None:
        """Stop beating and leave a last heartbeat saying the bot stopped. Safe to call twice."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval + 5.0)
        with self._lock:
            self._fields.update(state=STOPPED, connected=False)
            self._probe = None
        self.write()

    def _warn_if_shared(self) -> None:
        try:
            other = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        if (isinstance(other, dict) and other.get("state") != STOPPED and other.get("host") == self.host
                and isinstance(other.get("pid"), int) and other["pid"] != self.pid and pid_alive(other["pid"])
                and time.time() - float(other.get("updated_at") or 0) < 3 * float(other.get("interval") or 5)):
            log.warning(kv("health_file_shared", path=str(self.path), other_pid=other["pid"],
                           hint="give each serve process its own MINDIE_HELP_HEALTH_FILE"))


# ---- reading it -------------------------------------------------------------------------------
def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie is dead; only its exit status is left)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (not Linux): the signal test is all there is
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


@dataclass
class Health:
    ok: bool
    reason: str
    heartbeat: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "heartbeat": self.heartbeat}


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _http_url(host: Any, port: Any) -> str:
    host = str(host or "")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{int(port)}/healthz"


def _probe_http(url: str, timeout: float) -> str | None:
    """None when GET url answers 200; otherwise why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            response.read(65536)
            return None if response.status == 200 else f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{type(exc).__name__}: {reason}"


def check(path: Path, max_age: float, *, now: float | None = None, http_timeout: float = HTTP_PROBE_TIMEOUT) -> Health:
    """Is the `serve` process that writes `path` healthy? One line of reason either way."""
    now = time.time() if now is None else now
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return Health(False, f"no heartbeat at {path}: mindie-help serve is not running, or writes another "
                             "MINDIE_HELP_HEALTH_FILE", None)
    except OSError as exc:
        return Health(False, f"cannot read the heartbeat {path}: {exc.strerror or type(exc).__name__}", None)
    try:
        beat = json.loads(raw)
        if not isinstance(beat, dict):
            raise ValueError("not an object")
        pid, updated, started = int(beat["pid"]), float(beat["updated_at"]), float(beat.get("started_at") or 0)
    except (ValueError, KeyError, TypeError) as exc:
        return Health(False, f"the heartbeat {path} is unreadable ({type(exc).__name__})", None)

    mode = "Socket Mode" if beat.get("mode") == "socket" else "HTTP mode" if beat.get("mode") == "http" else str(beat.get("mode"))
    age = now - updated
    if beat.get("state") == STOPPED:
        return Health(False, f"the bot (pid {pid}) stopped {_ago(age)} ago", beat)
    if beat.get("host") == socket.gethostname() and not pid_alive(pid):
        return Health(False, f"the bot's process {pid} is not running (last heartbeat {_ago(age)} ago)", beat)
    if age > max_age:
        return Health(False, f"the heartbeat is {_ago(age)} old (max {max_age:g} s): the bot (pid {pid}) is hung or stopped", beat)
    if age < -max_age:
        return Health(False, f"the heartbeat is dated {_ago(-age)} in the future: check the clock", beat)
    if beat.get("probe_error"):
        return Health(False, f"the bot (pid {pid}) cannot read its own status ({beat['probe_error']})", beat)
    if not beat.get("engine_ready"):
        return Health(False, f"the engine is still loading (pid {pid}, started {_ago(now - started)} ago)", beat)
    if beat.get("state") != SERVING:
        return Health(False, f"the bot (pid {pid}) is {beat.get('state')}, not serving yet", beat)
    if beat.get("mode") == "http":
        if not beat.get("http_port"):
            return Health(False, f"HTTP mode without a port in the heartbeat (pid {pid})", beat)
        url = _http_url(beat.get("http_host"), beat["http_port"])
        problem = _probe_http(url, http_timeout)
        if problem:
            return Health(False, f"the HTTP server (pid {pid}) does not answer {url} ({problem})", beat)
    elif not beat.get("connected"):
        since = float(beat.get("connected_changed_at") or started)
        return Health(False, f"{mode} is not connected to Slack (for {_ago(now - since)}, pid {pid})", beat)
    note = ""
    if beat.get("database_ok") is False:
        note = f"; database unreachable, {beat.get('pending_writes', 0)} writes queued (still answering)"
    link = "connected" if beat.get("mode") != "http" else "answering"
    return Health(True, f"healthy: {mode} {link}, engine ready, pid {pid}, heartbeat {_ago(age)} old{note}", beat)
