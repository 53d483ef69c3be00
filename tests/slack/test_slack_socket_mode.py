"""Socket Mode end to end: Bolt's SocketModeHandler (slack_sdk's built-in client) connects to a local fake
WebSocket server that apps.connections.open points it to; envelopes are acknowledged and answered."""

from __future__ import annotations

import time

import pytest
from fake_slack import APP_TOKEN, TEAM_ID, FakeSocketModeServer
from slack_harness import OOM_LINE, SOCKET_LOG, bot_mention, make_settings


def wait_until(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


@pytest.fixture
def socket_bot(engine, fake_slack, tmp_path):
    from bot.slack.app import SlackBot, SocketHandler

    fake_slack.reset()
    ws = FakeSocketModeServer().start()
    fake_slack.ws_url = ws.url
    bot = SlackBot(make_settings(fake_slack, tmp_path), engine)
    handler = SocketHandler(bot.app, APP_TOKEN, ping_interval=30)
    handler.connect()
    assert ws.connected.wait(10), "the client never connected"
    yield bot, ws
    handler.close()
    bot.wait_idle(10)
    bot.close()
    bot.feedback.close()
    ws.stop()
    fake_slack.ws_url = None
    fake_slack.reset()


def test_socket_mode_event_and_slash_command(socket_bot, fake_slack):
    bot, ws = socket_bot
    opened = fake_slack.api_calls("apps.connections.open")
    assert opened and opened[0].headers["authorization"] == f"Bearer {APP_TOKEN}"

    ws.send({
        "envelope_id": "env-mention-1",
        "type": "events_api",
        "accepts_response_payload": False,
        "retry_attempt": 0,
        "retry_reason": "",
        "payload": {
            "team_id": TEAM_ID, "api_app_id": "A0TEST", "type": "event_callback", "event_id": "Ev0SOCKET1", "event_time": int(time.time()),
            "event": {"type": "app_mention", "user": "UALICE", "channel": "C0SOCK", "ts": "1700000100.000100", "text": bot_mention(SOCKET_LOG)},
        },
    })
    post = fake_slack.wait_for(lambda: fake_slack.posts("C0SOCK"))[0]
    assert post.params["thread_ts"] == "1700000100.000100"
    assert "socket-bind-failed" in post.blocks_json() and "lsof -i :1025" in post.blocks_json()
    wait_until(lambda: any(a.get("envelope_id") == "env-mention-1" for a in ws.acks))

    # A redelivered envelope (retry_attempt 1, same event_id) is acknowledged but not answered again.
    ws.send({
        "envelope_id": "env-mention-2", "type": "events_api", "accepts_response_payload": False, "retry_attempt": 1, "retry_reason": "timeout",
        "payload": {
            "team_id": TEAM_ID, "api_app_id": "A0TEST", "type": "event_callback", "event_id": "Ev0SOCKET1", "event_time": int(time.time()),
            "event": {"type": "app_mention", "user": "UALICE", "channel": "C0SOCK", "ts": "1700000100.000100", "text": bot_mention(SOCKET_LOG)},
        },
    })
    wait_until(lambda: any(a.get("envelope_id") == "env-mention-2" for a in ws.acks))

    ws.send({
        "envelope_id": "env-cmd-1",
        "type": "slash_commands",
        "accepts_response_payload": True,
        "payload": {
            "token": "legacy", "team_id": TEAM_ID, "channel_id": "C0SOCK", "user_id": "UALICE", "command": "/mindie-help",
            "text": OOM_LINE, "api_app_id": "A0TEST", "response_url": fake_slack.response_url("sock-cmd"), "trigger_id": "1.2.3",
        },
    })
    response = fake_slack.wait_for(lambda: fake_slack.responses("sock-cmd"))[0]
    assert response.params["response_type"] == "ephemeral" and "npu-out-of-memory" in str(response.params["blocks"])
    wait_until(lambda: any(a.get("envelope_id") == "env-cmd-1" for a in ws.acks))
    bot.wait_idle(10)
    assert len(fake_slack.posts("C0SOCK")) == 1
