"""Dedupe/cooldown caches, log scrubbing, file helpers and the serve() start-up messages (no Slack, no engine)."""

from __future__ import annotations

import logging

import pytest

from bot.engine.normalize import looks_binary
from bot.settings import Settings
from bot.slack import files
from bot.slack.dedupe import Cooldown, Deduper, TTLCache
from bot.logs import KeyValueFormatter, RedactingFilter, kv, register_secret, scrub
from bot.slack.runner import SlackConfigError, config_problem, serve


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ttl_cache_expires_and_is_bounded():
    clock = Clock()
    cache: TTLCache[int] = TTLCache(ttl=10, maxsize=3, clock=clock)
    assert cache.add_if_absent("a", 1) is True
    assert cache.add_if_absent("a", 1) is False
    clock.now += 11
    assert "a" not in cache
    assert cache.add_if_absent("a", 2) is True
    for key in "bcd":
        cache.set(key, 0)
    assert len(cache) == 3 and "a" not in cache  # oldest evicted


def test_deduper_and_cooldown():
    d = Deduper()
    assert d.first_event("Ev1") and not d.first_event("Ev1")
    assert d.claim_message("C1", "1.1") and not d.claim_message("C1", "1.1")
    assert d.claim_message("C2", "1.1")
    c = Cooldown(60)
    assert c.allow("U1") and not c.allow("U1") and c.active("U1") and c.allow("U2")
    assert Cooldown(0).allow("U1") and Cooldown(0).allow("U1")


def test_scrub_tokens_and_registered_secrets():
    register_secret("s3cr3t-signing-value")
    line = "token=xoxb-123-456-abcdef app=xapp-1-A1-2-abc Authorization: Bearer xoxp-99-88 secret s3cr3t-signing-value"
    out = scrub(line)
    assert "xoxb-123" not in out and "xapp-1" not in out and "xoxp-99" not in out and "s3cr3t" not in out
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "sending %s", ("xoxb-123-456-abcdef",), None)
    RedactingFilter().filter(record)
    assert "xoxb" not in KeyValueFormatter().format(record)


def test_kv_format():
    assert kv("reply", channel="C1", chars=10, note="two words", skip=None) == 'event=reply channel=C1 chars=10 note="two words"'


def test_file_helpers():
    assert files.looks_textual({"name": "app.log"}) and files.looks_textual({"name": "x", "mode": "snippet"})
    assert not files.looks_textual({"name": "shot.png", "mimetype": "image/png", "filetype": "png"})
    assert looks_binary(b"\x89PNG\r\n\x1a\n\x00\x00") and not looks_binary("日志 ERROR".encode())
    assert files.decode_text("错误".encode("gb18030")) == "错误"
    assert files.decode_text("ab错".encode()[:-1]) == "ab"
    assert files.host_allowed("https://files.slack.com/files-pri/T1-F1/a.log")
    assert not files.host_allowed("https://evil.example/a.log")
    assert not files.host_allowed("http://files.slack.com/a.log")  # never send the token in clear text
    assert files.host_allowed("http://127.0.0.1:9/files-pri/a", ("http", "127.0.0.1", 9))


def test_config_problem_messages(monkeypatch):
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(name, raising=False)
    empty = Settings()
    socket_msg = config_problem(empty, http=False)
    assert socket_msg and "SLACK_BOT_TOKEN" in socket_msg and "SLACK_APP_TOKEN" in socket_msg
    assert 'mindie-help ask "' in socket_msg
    http_msg = config_problem(empty, http=True)
    assert http_msg and "SLACK_SIGNING_SECRET" in http_msg and "SLACK_APP_TOKEN" not in http_msg
    ok = Settings(**{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert config_problem(ok, http=False) is None
    assert "SLACK_SIGNING_SECRET" in (config_problem(ok, http=True) or "")


def test_serve_without_tokens_exits_with_the_message_not_a_traceback(monkeypatch):
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as info:
        serve(Settings(), http=False, port=0)
    assert isinstance(info.value, SlackConfigError)
    assert "SLACK_BOT_TOKEN" in str(info.value) and "mindie-help ask" in str(info.value)
