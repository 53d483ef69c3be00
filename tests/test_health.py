"""`mindie-help health` against the real heartbeat writer (bot/health.py): healthy, stale, dead process, missing
or corrupt file, engine still loading, Socket Mode not connected, HTTP server not answering. The command runs
through the CLI (Typer's runner, and once as a real subprocess); the writer runs on its own thread, or in another
process that then dies. The serving process itself is tested in tests/slack/test_health_serve.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.health import SERVING, Heartbeat, check, pid_alive
from bot.settings import Settings, get_settings

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture
def health_file(monkeypatch, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "run" / "health.json"
    monkeypatch.setenv("MINDIE_HELP_HEALTH_FILE", str(path))
    monkeypatch.setenv("MINDIE_HELP_HEALTH_MAX_AGE_SECONDS", "5")
    get_settings.cache_clear()
    yield path
    get_settings.cache_clear()


@pytest.fixture
def beats(health_file: Path) -> Iterator[list[Heartbeat]]:
    started: list[Heartbeat] = []
    yield started
    for heartbeat in started:
        heartbeat.stop()


def start(beats: list[Heartbeat], path: Path, mode: str = "socket", interval: float = 0.05) -> Heartbeat:
    heartbeat = Heartbeat(path, mode, interval).start()
    beats.append(heartbeat)
    return heartbeat


def health(*args: str):
    return runner.invoke(app, ["health", *args])


def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_socket_mode_heartbeat_healthy_then_disconnected_then_stopped(beats, health_file):
    link = {"up": True}
    heartbeat = start(beats, health_file)
    assert read(health_file)["state"] == "starting"
    heartbeat.set(engine_ready=True)
    heartbeat.watch(lambda: {"connected": link["up"], "database_ok": True, "pending_writes": 0})
    heartbeat.set(state=SERVING)

    result = health()
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"healthy: Socket Mode connected, engine ready, pid {os.getpid()}")
    assert len(result.output.strip().splitlines()) == 1

    first = read(health_file)["updated_at"]
    wait_until(lambda: read(health_file)["updated_at"] > first)  # the thread keeps beating
    beat = read(health_file)
    assert {"pid", "host", "mode", "state", "engine_ready", "connected", "updated_at", "started_at"} <= beat.keys()
    assert beat["mode"] == "socket" and beat["connected"] is True and beat["database_ok"] is True

    link["up"] = False  # the client lost its WebSocket (reconnecting)
    wait_until(lambda: read(health_file)["connected"] is False)
    result = health()
    assert result.exit_code == 1
    assert result.output.startswith("unhealthy: Socket Mode is not connected to Slack (for ")

    link["up"] = True
    wait_until(lambda: read(health_file)["connected"] is True)
    assert health().exit_code == 0

    heartbeat.stop()
    result = health()
    assert result.exit_code == 1 and "stopped" in result.output
    assert [p.name for p in health_file.parent.iterdir()] == ["health.json"]  # no temporary file left behind


def test_missing_file(health_file):
    result = health()
    assert result.exit_code == 1
    assert result.output.strip() == (f"unhealthy: no heartbeat at {health_file}: mindie-help serve is not running, "
                                     "or writes another MINDIE_HELP_HEALTH_FILE")


def test_stale_heartbeat_of_a_live_process(beats, health_file, monkeypatch):
    """A process that is alive but no longer beats (hung): the file ages past the maximum."""
    heartbeat = start(beats, health_file, interval=300)  # one write, then silence
    heartbeat.set(engine_ready=True, state=SERVING, connected=True)
    assert health().exit_code == 0
    monkeypatch.setenv("MINDIE_HELP_HEALTH_MAX_AGE_SECONDS", "1")
    get_settings.cache_clear()
    time.sleep(1.3)
    result = health()
    assert result.exit_code == 1
    assert "unhealthy: the heartbeat is " in result.output and " s old (max 1 s): the bot (pid" in result.output
    assert result.output.rstrip().endswith("is hung or stopped")
    assert health("--max-age", "60").exit_code == 0  # the option overrides the setting


def test_dead_process(health_file):
    """The writer runs in another process that dies without a word (as under SIGKILL): its pid is gone."""
    code = (
        "import os, sys; from pathlib import Path; from bot.health import Heartbeat\n"
        "h = Heartbeat(Path(sys.argv[1]), 'socket', 0.05).start()\n"
        "h.set(engine_ready=True, state='serving', connected=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(health_file)], cwd=ROOT, timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    beat = read(health_file)
    assert beat["state"] == "serving" and beat["pid"] != os.getpid()
    assert not pid_alive(beat["pid"])
    result = health()
    assert result.exit_code == 1
    assert f"unhealthy: the bot's process {beat['pid']} is not running (last heartbeat" in result.output


def test_engine_still_loading(beats, health_file):
    start(beats, health_file)
    result = health()
    assert result.exit_code == 1 and "the engine is still loading" in result.output


def test_corrupt_or_unreadable_file(health_file):
    health_file.parent.mkdir(parents=True)
    for content in (b"", b"{not json", b"[1, 2]", b'{"pid": "x", "updated_at": 1}'):
        health_file.write_bytes(content)
        result = health()
        assert result.exit_code == 1 and "is unreadable" in result.output, content


def test_http_mode_asks_the_server(beats, health_file):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            code = 200 if self.path == "/healthz" else 404
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    heartbeat = start(beats, health_file, mode="http")
    heartbeat.watch(lambda: {"connected": True})
    heartbeat.set(engine_ready=True, state=SERVING, http_host="0.0.0.0", http_port=port)
    result = health()
    assert result.exit_code == 0, result.output
    assert result.output.startswith("healthy: HTTP mode answering")
    server.shutdown()
    server.server_close()
    result = health()
    assert result.exit_code == 1
    assert f"does not answer http://127.0.0.1:{port}/healthz" in result.output


def test_database_down_is_reported_but_healthy(beats, health_file):
    """The bot keeps answering while the database is away (votes are queued), so it stays healthy."""
    heartbeat = start(beats, health_file)
    heartbeat.watch(lambda: {"connected": True, "database_ok": False, "pending_writes": 3})
    heartbeat.set(engine_ready=True, state=SERVING)
    result = health()
    assert result.exit_code == 0 and "database unreachable, 3 writes queued" in result.output


def test_a_failing_probe_is_unhealthy_and_the_beat_goes_on(beats, health_file):
    def probe() -> dict:
        raise RuntimeError("boom")

    heartbeat = start(beats, health_file)
    heartbeat.watch(probe)
    heartbeat.set(engine_ready=True, state=SERVING)
    first = read(health_file)["updated_at"]
    wait_until(lambda: read(health_file)["updated_at"] > first)
    result = health()
    assert result.exit_code == 1 and "cannot read its own status (RuntimeError)" in result.output


def test_json_output(beats, health_file):
    heartbeat = start(beats, health_file)
    heartbeat.set(engine_ready=True, state=SERVING, connected=True)
    result = health("--format", "json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["ok"] is True and data["heartbeat"]["pid"] == os.getpid()


def test_unwritable_location_does_not_break_the_bot(tmp_path: Path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    heartbeat = Heartbeat(blocker / "health.json", "socket", 0.05)
    assert heartbeat.write() is False
    heartbeat.start()
    time.sleep(0.2)
    heartbeat.stop()
    assert sum("health_file_unwritable" in r.getMessage() for r in caplog.records) == 1  # warned once


def test_invalid_configuration_exits_1_not_2(health_file, monkeypatch):
    monkeypatch.setenv("MINDIE_HELP_TOP_K", "abc")
    get_settings.cache_clear()
    result = health()
    assert result.exit_code == 1 and result.output.startswith("unhealthy: the configuration is invalid (MINDIE_HELP_TOP_K")


def test_default_location_is_beside_the_feedback_database(tmp_path: Path):
    settings = Settings(feedback_db=tmp_path / "d" / "fb.sqlite3", health_file="")
    assert settings.health_path() == tmp_path / "d" / "health.json"
    assert Settings(health_file=tmp_path / "h.json").health_path() == tmp_path / "h.json"


def test_real_subprocess(beats, health_file):
    heartbeat = start(beats, health_file)
    heartbeat.set(engine_ready=True, state=SERVING, connected=True)
    env = {**os.environ, "MINDIE_HELP_HEALTH_FILE": str(health_file)}
    done = subprocess.run([sys.executable, "-m", "bot", "health"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("healthy: Socket Mode connected") and done.stderr == ""
    heartbeat.stop()
    done = subprocess.run([sys.executable, "-m", "bot", "health"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "" and done.stderr.startswith("unhealthy: the bot (pid")


def test_check_handles_future_and_other_hosts(tmp_path: Path):
    path = tmp_path / "h.json"
    now = time.time()
    path.write_text(json.dumps({"pid": 999999, "host": "elsewhere", "mode": "socket", "state": "serving", "engine_ready": True,
                                "connected": True, "updated_at": now, "started_at": now}))
    assert check(path, 30, now=now).ok  # another host's pid cannot be checked here: freshness decides
    assert not check(path, 30, now=now - 100).ok  # dated in the future
