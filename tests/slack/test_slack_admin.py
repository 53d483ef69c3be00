"""The admin surface end to end over HTTP, signed as Slack signs: `/mindie-help help | stats | reload | channel`,
the "Diagnose with mindie-help" message shortcut and App Home. The real engine answers (never a mock); reloads
read a private copy of the corpus with dense search off, so a rebuild takes a second or two."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from fake_slack import TEAM_ID
from slack_harness import OOM_LINE, SOCKET_LOG, bot_mention, find_buttons

from bot.slack import blocks as bk
from bot.slack.admin import Admin, parse
from bot.storage import Database, SharedState
from bot.storage import replies as replies_table

CH = "C0GENERAL"
ADMIN = "UADMIN01"
FROB_LOG = "[2025-03-11 10:22:41] [ERROR] [server] FROBNICATOR_OVERHEAT code 7731 on device 3"
FROB_ENTRY = """id: frobnicator-overheat
component: Service
source: "test"
title:
  en: "Frobnicator overheated"
  zh: "Frobnicator 过热"
symptom:
  en: "The service stops with FROBNICATOR_OVERHEAT."
  zh: "服务因 FROBNICATOR_OVERHEAT 停止。"
cause:
  en: "The frobnicator ran too hot."
  zh: "frobnicator 温度过高。"
fix:
  en: ["Let the frobnicator cool down."]
  zh: ["让 frobnicator 冷却。"]
signatures:
  - pattern: 'FROBNICATOR_OVERHEAT code 7731'
    weight: 0.95
examples:
  - "[ERROR] FROBNICATOR_OVERHEAT code 7731 on device 3"
"""


def ack_text(body: str) -> str:
    return json.loads(body)["text"] if body else ""


def response_text(call) -> str:
    return (call.params.get("text") or "") + "\n" + json.dumps(call.params.get("blocks") or [], ensure_ascii=False)


def shortcut(harness, message: dict, response_name: str, *, user: str = "UALICE", channel: str = CH,
             callback_id: str = "mindie_help_diagnose"):
    """A message shortcut as Slack sends it (form-encoded `payload`, signed)."""
    payload = {
        "type": "message_action", "callback_id": callback_id, "token": "legacy", "api_app_id": "A0TEST",
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:16]}",
        "action_ts": str(time.time()), "team": {"id": TEAM_ID, "domain": "test"},
        "user": {"id": user, "name": "alice", "team_id": TEAM_ID}, "channel": {"id": channel, "name": "general"},
        "response_url": harness.fake.response_url(response_name), "message_ts": message["ts"], "message": message,
    }
    return harness.send(urllib.parse.urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")


def pasted(harness, ts: str, text: str = SOCKET_LOG, channel: str = CH, user: str = "UALICE"):
    return harness.event({"type": "message", "channel_type": "channel", "channel": channel, "user": user, "ts": ts, "text": text})


@pytest.fixture
def reloadable(make_harness, corpus_copy: Path):
    """A bot whose settings point at a private corpus copy (dense off: reloads are quick) and that has one admin.
    It starts on the session's engine (the real corpus); a reload swaps in one built from the copy."""
    return make_harness(corpus_dir=corpus_copy, dense_enabled=False, admin_ids=[ADMIN])


# --- parsing ---------------------------------------------------------------------------------------------


def test_subcommands_are_recognised_only_in_their_exact_forms():
    assert parse("").name == "help"
    assert parse("help").name == "help" and parse("help").lang == "en"
    assert parse("帮助").lang == "zh" and parse("help zh").lang == "zh" and parse("stats 中文").lang == "zh"
    assert parse("STATS").name == "stats"
    assert parse("reload").name == "reload"
    assert parse("channel off").arg == "off" and parse("channel").arg is None and parse("channel Reset").arg == "reset"
    # Questions that happen to start with one of the words stay questions.
    for question in ("reload model failed: " + OOM_LINE, "channel error in HCCL", "stats of npu memory", "help me with " + OOM_LINE,
                     "channel off the rails", "env"):
        assert parse(question) is None, question


def test_a_question_starting_with_a_subcommand_word_is_answered(harness):
    fake = harness.fake
    harness.command("reload model failed: " + OOM_LINE, "q-reload")
    response = fake.wait_for(lambda: fake.responses("q-reload"))[0]
    assert "npu-out-of-memory" in response_text(response)


# --- help ----------------------------------------------------------------------------------------------------


def test_help_lists_the_subcommands_in_english_and_chinese(harness):
    status, body, elapsed = harness.command("help", "help-en")
    assert status == 200 and elapsed < 3.0
    text = ack_text(body)
    assert json.loads(body)["response_type"] == "ephemeral"
    for part in ("/mindie-help stats", "/mindie-help reload", "/mindie-help channel auto|mention|off|reset", "/mindie-help env",
                 "Diagnose with mindie-help", "/mindie-help 帮助"):
        assert part in text, part
    zh = ack_text(harness.command("帮助", "help-zh")[1])
    assert "更多命令" in zh and "/mindie-help reload" in zh and "用于诊断 MindIE 报错" in zh
    assert "更多命令" in ack_text(harness.command("help zh", "help-zh2")[1])
    harness.idle()
    assert not harness.fake.responses()  # answered in the acknowledgement itself


# --- stats -----------------------------------------------------------------------------------------------------


def test_stats_count_answers_gaps_and_votes(harness):
    fake = harness.fake
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000401.000100", "text": bot_mention(SOCKET_LOG)})
    answered = fake.wait_for(lambda: fake.posts(CH))[0]
    assert "socket-bind-failed" in answered.blocks_json()
    harness.event({"type": "app_mention", "user": "UBOB", "channel": CH, "ts": "1700000402.000100",
                   "text": bot_mention("How do I bake sourdough bread at home?")})
    harness.event({"type": "app_mention", "user": "UBOB", "channel": CH, "ts": "1700000403.000100",
                   "text": bot_mention("<!channel> my cake & bread oven is broken, any recipe?")})
    fake.wait_for(lambda: fake.posts(CH), count=3)
    harness.idle()
    harness.click(find_buttons(answered.blocks)[bk.ACTION_FEEDBACK_UP], "vote1", user="UCAROL")
    fake.wait_for(lambda: fake.responses("vote1"))

    status, body, elapsed = harness.command("stats", "stats1", user="UDAVE")  # anyone may ask
    assert status == 200 and body == "" and elapsed < 3.0
    response = fake.wait_for(lambda: fake.responses("stats1"))[0]
    assert response.params["response_type"] == "ephemeral"
    text = response_text(response)
    assert "*Last 7 days*: 1 answered · 2 not recognised · 1 👍 · 0 👎 · 0 escalations" in text
    assert "*Last 30 days*: 1 answered · 2 not recognised · 1 👍 · 0 👎 · 0 escalations" in text
    assert "sourdough bread" in text and "(1×)" in text
    # A gap is the user's text: escaped, so it can neither ping the channel nor break the markup.
    assert "&lt;!channel&gt;" in text and "<!channel>" not in text and "&amp;" in text
    assert re.search(r"Knowledge base: \d+ entries", text)

    zh = harness.command("stats zh", "stats-zh")
    assert zh[0] == 200
    assert "最近 7 天" in response_text(fake.wait_for(lambda: fake.responses("stats-zh"))[0])


# --- reload ------------------------------------------------------------------------------------------------------


def test_reload_by_an_admin_makes_a_corpus_change_answerable(reloadable, corpus_copy: Path, engine):
    harness, fake = reloadable, reloadable.fake
    harness.command(FROB_LOG, "before")
    assert "frobnicator" not in response_text(fake.wait_for(lambda: fake.responses("before"))[0])

    (corpus_copy / "zz-frobnicator.yaml").write_text(FROB_ENTRY, encoding="utf-8")
    status, body, elapsed = harness.command("reload", "reload1", user=ADMIN)
    assert status == 200 and elapsed < 3.0  # acknowledged before the corpus is read
    assert "Reloading the knowledge base" in ack_text(body)
    assert "already running" in ack_text(harness.command("reload", "reload2", user=ADMIN)[1])  # one at a time
    result = response_text(fake.wait_for(lambda: fake.responses("reload1"), timeout=60)[0])
    before = engine.status()["entries"]
    assert f"Reloaded: {before + 1} entries (was {before})" in result
    assert "New: `frobnicator-overheat`" in result and "dense search: disabled" in result
    assert harness.bot.engine is not engine and harness.bot.status()["entries"] == before + 1

    harness.command(FROB_LOG, "after")
    assert "frobnicator-overheat" in response_text(fake.wait_for(lambda: fake.responses("after"))[0])


def test_reload_keeps_the_old_engine_when_the_new_corpus_is_invalid(reloadable, corpus_copy: Path, engine):
    harness, fake = reloadable, reloadable.fake
    (corpus_copy / "zz-frobnicator.yaml").write_text(FROB_ENTRY.replace("component: Service", "component: Toaster"), encoding="utf-8")
    harness.command("reload", "bad", user=ADMIN)
    result = response_text(fake.wait_for(lambda: fake.responses("bad"), timeout=60)[0])
    assert "was *not* reloaded" in result and "1 problem(s)" in result
    assert "zz-frobnicator.yaml" in result and "component" in result
    assert harness.bot.engine is engine  # still answering with the old knowledge base
    harness.command(SOCKET_LOG, "still")
    assert "socket-bind-failed" in response_text(fake.wait_for(lambda: fake.responses("still"))[0])

    # Fixed: the next reload goes through (one reload at a time, the flag was released).
    (corpus_copy / "zz-frobnicator.yaml").write_text(FROB_ENTRY, encoding="utf-8")
    harness.command("reload", "good", user=ADMIN)
    assert "Reloaded:" in response_text(fake.wait_for(lambda: fake.responses("good"), timeout=60)[0])


def test_reload_keeps_the_old_engine_when_the_model_no_longer_loads(make_harness, corpus_copy: Path, tmp_path: Path, engine):
    # The session engine has dense search; the same settings with a model that cannot load would lose it.
    assert engine.status()["dense"].startswith("ready")
    harness = make_harness(corpus_dir=corpus_copy, index_dir=tmp_path / "index", model=str(tmp_path / "no-such-model"), admin_ids=[ADMIN])
    harness.command("reload", "degraded", user=ADMIN)
    result = response_text(harness.fake.wait_for(lambda: harness.fake.responses("degraded"), timeout=120)[0])
    assert "was *not* reloaded" in result and "no dense search" in result
    assert harness.bot.engine is engine


def test_answers_in_flight_during_a_reload_all_complete(reloadable, corpus_copy: Path):
    harness, fake = reloadable, reloadable.fake
    for n in range(6):
        harness.event({"type": "app_mention", "user": "UALICE", "channel": "C0BUSY", "ts": f"1700000500.00010{n}",
                       "text": bot_mention(SOCKET_LOG if n % 2 else OOM_LINE)})
    harness.command("reload", "busy-reload", user=ADMIN)
    assert "Reloaded:" in response_text(fake.wait_for(lambda: fake.responses("busy-reload"), timeout=60)[0])
    posts = fake.wait_for(lambda: fake.posts("C0BUSY"), count=6, timeout=60)
    harness.idle()
    assert len(posts) == 6
    assert all("socket-bind-failed" in p.blocks_json() or "npu-out-of-memory" in p.blocks_json() for p in posts)


def test_admin_subcommands_refuse_other_users_politely(reloadable, engine):
    harness, fake = reloadable, reloadable.fake
    status, body, _ = harness.command("reload", "no-reload", user="UALICE")
    assert status == 200 and json.loads(body)["response_type"] == "ephemeral"
    assert "only for the bot's admins" in ack_text(body) and f"<@{ADMIN}>" in ack_text(body)
    _, body, _ = harness.command("channel off", "no-channel", user="UALICE")
    assert "`/mindie-help channel off` is only for the bot's admins" in ack_text(body)
    harness.idle()
    assert harness.bot.engine is engine and not fake.responses()
    assert harness.bot.state.channel_settings(CH) is None


def test_a_reload_reaches_the_other_replicas(make_harness, corpus_copy: Path, monkeypatch):
    monkeypatch.setattr(Admin, "WATCH_SECONDS", 3600.0)  # the test polls itself
    first = make_harness(corpus_dir=corpus_copy, dense_enabled=False, admin_ids=[ADMIN])
    second = make_harness(corpus_dir=corpus_copy, dense_enabled=False, admin_ids=[ADMIN])  # same database file
    before = second.bot.status()["entries"]
    (corpus_copy / "zz-frobnicator.yaml").write_text(FROB_ENTRY, encoding="utf-8")
    first.command("reload", "r1", user=ADMIN)
    first.fake.wait_for(lambda: first.fake.responses("r1"), timeout=60)
    first.idle()
    assert not first.bot.admin.check_announcements()  # its own reload
    assert second.bot.admin.check_announcements()
    second.idle(60)
    assert second.bot.status()["entries"] == before + 1
    assert not second.bot.admin.check_announcements()  # once per announcement


# --- channel mode -----------------------------------------------------------------------------------------------


def test_channel_mode_set_from_slack_applies_at_once(harness_with_admin):
    harness, fake = harness_with_admin, harness_with_admin.fake
    pasted(harness, "1700000601.000100")  # also puts the channel's (default) mode in the bot's 10 s cache
    fake.wait_for(lambda: fake.posts(CH))
    harness.idle()

    harness.command("channel off", "off", user=ADMIN)
    assert "Auto-replies in this channel: *off*" in response_text(fake.wait_for(lambda: fake.responses("off"))[0])
    assert harness.bot.state.channel_settings(CH).mode == "off"  # the store `mindie-help channel set` uses
    pasted(harness, "1700000602.000100")
    harness.idle()
    assert len(fake.posts(CH)) == 1  # no auto-reply, although the old mode was cached

    harness.command("channel", "show", user="UALICE")  # anyone may look
    assert "*off* (set for this channel)" in response_text(fake.wait_for(lambda: fake.responses("show"))[0])

    harness.command("channel reset", "reset", user=ADMIN)
    assert "back to the default, *auto*" in response_text(fake.wait_for(lambda: fake.responses("reset"))[0])
    assert harness.bot.state.channel_settings(CH) is None
    pasted(harness, "1700000603.000100")
    posts = fake.wait_for(lambda: fake.posts(CH), count=2)
    assert posts[1].params["thread_ts"] == "1700000603.000100"


def test_channel_reset_keeps_a_cooldown_set_with_the_cli(harness_with_admin):
    harness, fake = harness_with_admin, harness_with_admin.fake
    harness.bot.state.set_channel("C0OTHER", mode="mention", cooldown_seconds=45)
    harness.command("channel reset", "reset2", user=ADMIN, channel="C0OTHER")
    assert "cooldown of 45 s stays" in response_text(fake.wait_for(lambda: fake.responses("reset2"))[0])
    found = harness.bot.state.channel_settings("C0OTHER")
    assert found.mode is None and found.cooldown_seconds == 45
    harness.command("channel mention", "dm", user=ADMIN, channel="D0ADMIN")
    assert "in the channel itself" in response_text(fake.wait_for(lambda: fake.responses("dm"))[0])


@pytest.fixture
def harness_with_admin(make_harness):
    return make_harness(admin_ids=[ADMIN])


# --- the Diagnose shortcut ------------------------------------------------------------------------------------


def test_shortcut_answers_the_message_in_its_thread(harness):
    fake = harness.fake
    message = {"type": "message", "user": "UBOB", "ts": "1700000701.000100", "text": "service died:\n```" + SOCKET_LOG + "```"}
    harness.bot.dedupe.claim_message(CH, message["ts"])  # the bot saw it as a message event already (and stayed quiet)
    status, body, elapsed = shortcut(harness, message, "sc1")
    assert status == 200 and body == "" and elapsed < 3.0
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    assert post.params["thread_ts"] == "1700000701.000100"
    assert "socket-bind-failed" in post.blocks_json() and "lsof -i :1025" in post.blocks_json()
    harness.idle()
    with harness.bot.feedback.db.begin() as conn:
        assert conn.execute(sa.select(replies_table.c.surface)).scalars().all() == ["shortcut"]

    # A message inside a thread: answered in that thread, in any channel the bot is in.
    reply = {"type": "message", "user": "UBOB", "ts": "1700000702.000200", "thread_ts": "1700000702.000100", "text": OOM_LINE}
    shortcut(harness, reply, "sc2", channel="C0OTHER")
    post = fake.wait_for(lambda: fake.posts("C0OTHER"))[0]
    assert post.params["thread_ts"] == "1700000702.000100" and "npu-out-of-memory" in post.blocks_json()


def test_shortcut_reads_a_shared_file(harness):
    fake = harness.fake
    info = fake.add_file("F0LOG1", "server.log", SOCKET_LOG.encode())
    message = {"type": "message", "subtype": "file_share", "user": "UBOB", "ts": "1700000711.000100", "text": "", "files": [info]}
    shortcut(harness, message, "sc-file")
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    assert post.params["thread_ts"] == "1700000711.000100" and "socket-bind-failed" in post.blocks_json()


def test_shortcut_where_the_bot_cannot_post_tells_the_user(harness):
    fake = harness.fake
    fake.fail_once["conversations.replies"] = "not_in_channel"
    shortcut(harness, {"type": "message", "user": "UBOB", "ts": "1700000721.000100", "text": SOCKET_LOG}, "sc-out", channel="C0PRIVATE")
    note = fake.wait_for(lambda: fake.responses("sc-out"))[0]
    assert note.params["response_type"] == "ephemeral" and "/invite @mindie-help" in note.params["text"]
    shortcut(harness, {"type": "message", "user": "UBOB", "ts": "1700000722.000100", "text": "  "}, "sc-empty")
    assert "nothing to diagnose" in fake.wait_for(lambda: fake.responses("sc-empty"))[0].params["text"]
    harness.idle()
    assert not fake.posts()


def test_a_doctored_shortcut_payload_never_raises(harness, caplog):
    fake = harness.fake
    odd = {"type": "message", "ts": "1700000731.000100", "text": ["not", "text"], "files": "nope", "bot_id": 5, "thread_ts": {}}
    status, _, _ = shortcut(harness, odd, "sc-odd")
    assert status == 200
    assert "nothing to diagnose" in fake.wait_for(lambda: fake.responses("sc-odd"))[0].params["text"]
    harness.idle()
    assert not fake.posts()
    assert not [r for r in caplog.records if "listener_error" in r.getMessage() or r.levelname == "ERROR"]


# --- App Home ---------------------------------------------------------------------------------------------------


def test_app_home_is_published_with_the_figures(harness):
    fake = harness.fake
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000801.000100", "text": bot_mention(SOCKET_LOG)})
    fake.wait_for(lambda: fake.posts(CH))
    harness.idle()
    harness.event({"type": "app_home_opened", "user": "UALICE", "channel": "D0ALICE", "tab": "messages", "event_ts": "1700000802.000100"})
    harness.idle()
    assert not fake.api_calls("views.publish")  # the Messages tab: nothing to publish

    harness.event({"type": "app_home_opened", "user": "UALICE", "channel": "D0ALICE", "tab": "home", "event_ts": "1700000803.000100"})
    call = fake.wait_for(lambda: fake.api_calls("views.publish"))[0]
    assert call.params["user_id"] == "UALICE"
    view = call.params["view"]
    view = json.loads(view) if isinstance(view, str) else view
    text = json.dumps(view, ensure_ascii=False)
    assert view["type"] == "home" and len(view["blocks"]) <= 100
    assert "How to use me" in text and "Diagnose with mindie-help" in text and "/mindie-help help" in text
    assert "*Last 7 days*: 1 answered · 0 not recognised" in text and "*Last 30 days*: 1 answered" in text
    assert "None: every question was recognised." in text


def test_app_home_failure_is_logged_not_raised(harness, caplog):
    fake = harness.fake
    fake.fail_once["views.publish"] = "invalid_blocks"
    harness.event({"type": "app_home_opened", "user": "UALICE", "channel": "D0ALICE", "tab": "home", "event_ts": "1700000811.000100"})
    fake.wait_for(lambda: fake.api_calls("views.publish"))
    harness.idle()
    assert any("home_failed" in r.getMessage() for r in caplog.records)


# --- storage helpers, on both back-ends ---------------------------------------------------------------------------


def test_reset_channel_mode_and_announcements(db_url):
    db = Database(db_url)
    try:
        state = SharedState(db)
        assert state.reset_channel_mode("C1") is None
        state.set_channel("C1", mode="off")
        assert state.reset_channel_mode("C1") is None and state.channel_settings("C1") is None
        state.set_channel("C2", mode="off", cooldown_seconds=5)
        kept = state.reset_channel_mode("C2")
        assert kept is not None and kept.mode is None and kept.cooldown_seconds == 5

        assert state.latest("corpus_reload") is None
        first = state.announce("corpus_reload", now=1000.0)
        state.announce("corpus_reload", now=2000.0)
        state.announce("other", now=3000.0)
        assert first == 1000.0 and state.latest("corpus_reload", now=2500.0) == 2000.0
        assert state.latest("corpus_reload", now=2000.0 + 31 * 86_400) is None  # expired
    finally:
        db.close()

