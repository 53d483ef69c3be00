"""`mindie-help health` against a real `mindie-help serve` process (python -m bot serve), as Docker's HEALTHCHECK
runs it: in Socket Mode (no port open) against the fake Slack's WebSocket endpoint, and in HTTP mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_slack import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, FakeSocketModeServer

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def health(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot", "health"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def wait_for_health(env: dict[str, str], proc: subprocess.Popen, log: Path, want_ok: bool, contains: str = "",
                    timeout: float = 120.0) -> subprocess.CompletedProcess:
    deadline = time.monotonic() + timeout
    while True:
        result = health(env)
        if (result.returncode == 0) == want_ok and contains in result.stdout + result.stderr:
            return result
        assert proc.poll() is None or not want_ok, f"serve exited:\n{log.read_text(errors='replace')[-3000:]}"
        assert time.monotonic() < deadline, f"health stayed {result.stdout}{result.stderr}\n{log.read_text(errors='replace')[-3000:]}"
        time.sleep(0.3)


@pytest.fixture
def serve_env(engine, engine_settings, fake_slack, tmp_path):
    fake_slack.reset()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "MINDIE_HELP_"))}
    env.update({
        "HF_HUB_OFFLINE": "1", "SLACK_BOT_TOKEN": BOT_TOKEN, "MINDIE_HELP_SLACK_API_URL": fake_slack.api_url,
        "MINDIE_HELP_INDEX_DIR": str(engine_settings.index_dir), "MINDIE_HELP_CORPUS_DIR": str(engine_settings.corpus_dir),
        "MINDIE_HELP_FEEDBACK_DB": str(tmp_path / "fb.sqlite3"), "MINDIE_HELP_LOG_JSON": "false",
        "MINDIE_HELP_HEALTH_FILE": str(tmp_path / "run" / "health.json"),
        "MINDIE_HELP_HEALTH_INTERVAL_SECONDS": "0.2", "MINDIE_HELP_HEALTH_MAX_AGE_SECONDS": "5",
    })
    yield env
    fake_slack.reset()


def start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "bot", "serve", *args], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def finish(proc: subprocess.Popen, log: Path) -> str:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    assert BOT_TOKEN not in text and APP_TOKEN not in text and SIGNING_SECRET not in text
    return text


def test_socket_mode_health_follows_the_connection(serve_env, fake_slack, tmp_path):
    ws = FakeSocketModeServer().start()
    fake_slack.ws_url = ws.url
    env = {**serve_env, "SLACK_APP_TOKEN": APP_TOKEN}
    log = tmp_path / "serve.log"
    assert "no heartbeat" in health(env).stderr
    proc = start(env, log)
    try:
        result = wait_for_health(env, proc, log, want_ok=True)
        assert ws.connected.is_set()
        assert result.stdout.startswith(f"healthy: Socket Mode connected, engine ready, pid {proc.pid}")

        # Slack goes away and cannot be reached again: the client keeps trying, health says why it is unhealthy.
        fake_slack.ws_url = None
        ws.stop()
        result = wait_for_health(env, proc, log, want_ok=False, contains="not connected", timeout=60)
        assert result.returncode == 1
        assert result.stderr.startswith("unhealthy: Socket Mode is not connected to Slack (for ")
        assert len(result.stderr.strip().splitlines()) == 1

        # SIGTERM: a clean stop leaves a last heartbeat that says so.
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        result = health(env)
        assert result.returncode == 1 and f"the bot (pid {proc.pid}) stopped" in result.stderr
    finally:
        fake_slack.ws_url = None
        text = finish(proc, log)
    assert "event=health_file" in text


def test_http_mode_health_and_a_killed_process(serve_env, tmp_path):
    from pg_server import free_port

    port = free_port()
    env = {**serve_env, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    log = tmp_path / "serve-http.log"
    proc = start(env, log, "--http", "--host", "127.0.0.1", "--port", str(port))
    try:
        result = wait_for_health(env, proc, log, want_ok=True)
        assert result.stdout.startswith(f"healthy: HTTP mode answering, engine ready, pid {proc.pid}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        result = health(env)
        assert result.returncode == 1
        assert result.stderr.startswith(f"unhealthy: the bot's process {proc.pid} is not running")
    finally:
        finish(proc, log)
