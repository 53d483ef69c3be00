"""Helpers for the Slack tests: settings for the fake, and a Harness that signs and sends requests as Slack does."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bot.settings import Settings  # noqa: E402

from fake_slack import APP_TOKEN, BOT_TOKEN, BOT_USER_ID, SIGNING_SECRET, TEAM_ID, FakeSlack  # noqa: E402

SOCKET_LOG = (
    "[2025-03-11 10:22:41.118] [7321] [INFO] [llm_manager] model loaded, 8 NPUs ready\n"
    "[2025-03-11 10:22:41.502] [7321] [ERROR] [server] Socket bind failed, ip 127.0.0.1 port 1025\n"
    "[2025-03-11 10:22:41.503] [7321] [ERROR] [daemon] mindieservice_daemon exit"
)
OOM_LINE = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"


def make_settings(fake: FakeSlack, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "slack_api_url": fake.api_url,
        "feedback_db": tmp_path / "feedback.sqlite3",
        "cooldown_seconds": 0.0,
        "escalation_group": "S0SUPPORT",
        "auto_reply": True,
        "auto_reply_channels": [],
        "answer_bot_ids": ["BALERTS01"],
        # Tests send many requests from one user; the rate-limit tests set their own limits.
        "rate_user_per_minute": 0.0,
        "rate_channel_per_minute": 0.0,
        "escalation_cooldown_seconds": 0.0,
    }
    values.update(overrides)
    return Settings(**values)


@dataclass
class Harness:
    """One bot (fresh state) served over HTTP, plus helpers that talk to it the way Slack does."""

    bot: Any
    server: Any
    fake: FakeSlack
    settings: Settings

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}/slack/events"

    # --- signed requests ---
    def send(self, body: str, content_type: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET,
             extra_headers: dict[str, str] | None = None, signature: str | None = None) -> tuple[int, str, float]:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        sig = signature or "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
        headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig, **(extra_headers or {})}
        request = urllib.request.Request(self.url, data=body.encode("utf-8"), headers=headers, method="POST")
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode("utf-8"), time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", errors="replace"), time.monotonic() - started

    def event(self, event: dict[str, Any], *, event_id: str | None = None, **kwargs: Any) -> tuple[int, str, float]:
        payload = {
            "token": "legacy-verification-token",
            "team_id": TEAM_ID,
            "api_app_id": "A0TEST",
            "event": {"event_ts": event.get("ts"), **event},
            "type": "event_callback",
            "event_id": event_id or "Ev" + uuid.uuid4().hex[:10].upper(),
            "event_time": int(time.time()),
        }
        return self.send(json.dumps(payload), "application/json", **kwargs)

    def command(self, text: str, response_name: str, *, user: str = "UALICE", channel: str = "C0GENERAL",
                trigger_id: str | None = None) -> tuple[int, str, float]:
        form = {
            "token": "legacy", "team_id": TEAM_ID, "team_domain": "test", "channel_id": channel, "channel_name": "general",
            "user_id": user, "user_name": "alice", "command": "/mindie-help", "text": text, "api_app_id": "A0TEST",
            "response_url": self.fake.response_url(response_name), "trigger_id": trigger_id or _trigger_id(),
        }
        return self.send(urllib.parse.urlencode(form), "application/x-www-form-urlencoded")

    def click(self, button: dict[str, Any], response_name: str, *, user: str = "UALICE", channel: str = "C0GENERAL",
              message_ts: str = "1700000000.000100", thread_ts: str | None = None, ephemeral: bool = False,
              trigger_id: str | None = None, message: dict[str, Any] | None = None) -> tuple[int, str, float]:
        container: dict[str, Any] = {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": ephemeral}
        if thread_ts:
            container["thread_ts"] = thread_ts
        payload: dict[str, Any] = {
            "type": "block_actions",
            "team": {"id": TEAM_ID, "domain": "test"},
            "user": {"id": user, "username": "alice", "team_id": TEAM_ID},
            "api_app_id": "A0TEST",
            "token": "legacy",
            "container": container,
            "trigger_id": trigger_id or _trigger_id(),
            "channel": {"id": channel, "name": "general"},
            "response_url": self.fake.response_url(response_name),
            "actions": [{
                "type": "button", "action_id": button["action_id"], "block_id": "mindie_help_actions",
                "text": button["text"], "value": button.get("value", ""), "action_ts": str(time.time()),
            }],
        }
        if message is not None:  # Slack sends the clicked message (its blocks) with a click on a non-ephemeral message
            payload["message"] = message
        return self.send(urllib.parse.urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")

    def idle(self, timeout: float = 30.0) -> None:
        assert self.bot.wait_idle(timeout), "bot still busy"


def _trigger_id() -> str:
    """Slack gives every command and click a fresh trigger_id; the bot drops a repeated one as a replay."""
    return f"{int(time.time())}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:16]}"


def find_buttons(blocks: list[dict]) -> dict[str, dict]:
    out = {}
    for block in blocks:
        if block.get("type") == "actions":
            for element in block["elements"]:
                out[element["action_id"]] = element
    return out


def bot_mention(text: str) -> str:
    return f"<@{BOT_USER_ID}> {text}"
