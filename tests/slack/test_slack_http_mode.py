"""End to end in HTTP mode: the real Bolt app and the real engine behind a real HTTP server on 127.0.0.1,
talking to a fake Slack Web API (also real HTTP). Requests are signed exactly as Slack signs them."""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from pathlib import Path

from fake_slack import BOT_ID, BOT_TOKEN, BOT_USER_ID, SIGNING_SECRET
from slack_harness import OOM_LINE, SOCKET_LOG, bot_mention, find_buttons

from bot.feedback import FeedbackStore
from bot.slack import blocks as bk

CH = "C0GENERAL"


def code_blocks(call) -> list[str]:
    out = []
    for block in call.blocks:
        text = block.get("text", {}).get("text", "") if isinstance(block.get("text"), dict) else ""
        parts = text.split("```")
        out += [parts[i] for i in range(1, len(parts), 2)]
    return out


def header(call) -> str:
    return next(b["text"]["text"] for b in call.blocks if b["type"] == "header")


# --- surfaces ----------------------------------------------------------------------------------------


def test_healthz_returns_engine_status(harness, engine):
    with urllib.request.urlopen(f"http://127.0.0.1:{harness.server.port}/healthz", timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "application/json"
        status = json.loads(response.read())
    assert status == json.loads(json.dumps(engine.status(), default=str))
    assert status["entries"] > 0


def test_mention_answers_in_the_thread_with_entry_and_filled_command(harness):
    fake = harness.fake
    status, _, elapsed = harness.event({
        "type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000001.000100",
        "text": bot_mention("the service died:\n```" + SOCKET_LOG + "```"),
    })
    assert status == 200 and elapsed < 3.0  # acknowledged well within Slack's 3 s
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    assert post.params["thread_ts"] == "1700000001.000100"
    assert "socket-bind-failed" in post.blocks_json()
    assert "lsof -i :1025" in code_blocks(post)  # the port comes from the user's log
    assert "Socket bind failed" in post.blocks[0]["text"]["text"]  # answer first: the problem is the first line
    assert "matched your log line 3" in post.params["text"]  # confidence in words, with the user's own line number
    assert set(find_buttons(post.blocks)) == {bk.ACTION_DETAILS, bk.ACTION_FEEDBACK_UP, bk.ACTION_FEEDBACK_DOWN,
                                              bk.ACTION_RESOLVED, bk.ACTION_ESCALATE}
    assert post.headers["authorization"] == f"Bearer {BOT_TOKEN}"

    # A follow-up mention inside an existing thread answers in that thread.
    harness.event({
        "type": "app_mention", "user": "UBOB", "channel": CH, "ts": "1700000002.000200", "thread_ts": "1700000001.000100",
        "text": bot_mention(OOM_LINE),
    })
    second = fake.wait_for(lambda: fake.posts(CH), count=2)[1]
    assert second.params["thread_ts"] == "1700000001.000100"
    assert "npu-out-of-memory" in second.blocks_json()


def test_short_mention_in_thread_uses_the_thread_root(harness):
    fake = harness.fake
    fake.replies[(CH, "1700000010.000100")] = [{"type": "message", "user": "UALICE", "ts": "1700000010.000100", "text": OOM_LINE}]
    harness.event({
        "type": "app_mention", "user": "UBOB", "channel": CH, "ts": "1700000011.000100", "thread_ts": "1700000010.000100",
        "text": bot_mention("any idea?"),
    })
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    assert post.params["thread_ts"] == "1700000010.000100"
    assert "npu-out-of-memory" in post.blocks_json()
    assert fake.api_calls("conversations.replies")[0].params["ts"] == "1700000010.000100"


def test_slash_command_answers_ephemerally_via_response_url_and_can_be_shared(harness):
    fake = harness.fake
    status, body, elapsed = harness.command(OOM_LINE, "cmd1")
    assert status == 200 and elapsed < 3.0 and body == ""
    response = fake.wait_for(lambda: fake.responses("cmd1"))[0]
    assert response.params["response_type"] == "ephemeral"
    assert "npu-out-of-memory" in json.dumps(response.params["blocks"])
    buttons = find_buttons(response.params["blocks"])
    assert {bk.ACTION_SHARE, bk.ACTION_FEEDBACK_UP, bk.ACTION_FEEDBACK_DOWN} <= set(buttons)
    assert not fake.posts()  # nothing public yet

    harness.click(buttons[bk.ACTION_SHARE], "share1", ephemeral=True)
    shared = fake.wait_for(lambda: fake.responses("share1"), count=2)
    assert shared[0].params["response_type"] == "in_channel"
    assert "npu-out-of-memory" in json.dumps(shared[0].params["blocks"])
    assert "<@UALICE> asked:" in json.dumps(shared[0].params["blocks"])  # a shared answer restates the question
    assert "NPU out of memory" in shared[0].params["blocks"][0]["elements"][0]["text"]
    assert bk.ACTION_SHARE not in find_buttons(shared[0].params["blocks"])
    assert shared[1].params == {"delete_original": True}


def test_slash_command_without_text_returns_usage(harness):
    status, body, _ = harness.command("   ", "cmd-empty")
    assert status == 200
    data = json.loads(body)
    assert data["response_type"] == "ephemeral" and "/mindie-help" in data["text"]
    harness.idle()
    assert not harness.fake.responses("cmd-empty")


def test_direct_message_is_answered(harness):
    fake = harness.fake
    harness.event({"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "UALICE", "ts": "1700000020.000100",
                   "text": "服务化拉起后马上退出，日志里 Socket bind failed, ip 127.0.0.1 port 1025，端口被占用怎么办"})
    post = fake.wait_for(lambda: fake.posts("D0ALICE"))[0]
    assert "socket-bind-failed" in post.blocks_json()
    assert "lsof -i :1025" in code_blocks(post)
    assert "匹配到你日志的第 1 行" in post.blocks_json()  # the reply speaks the user's language


def test_auto_reply_once_per_thread_for_a_pasted_log(harness):
    fake = harness.fake
    harness.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UALICE", "ts": "1700000030.000100", "text": SOCKET_LOG})
    post = fake.wait_for(lambda: fake.posts("C0OPS"))[0]
    assert post.params["thread_ts"] == "1700000030.000100"
    assert "socket-bind-failed" in post.blocks_json() and "lsof -i :1025" in code_blocks(post)

    # Chatter in that thread (even text matching a signature) gets no second reply...
    harness.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UBOB", "ts": "1700000031.000100",
                   "thread_ts": "1700000030.000100", "text": "thanks! it was the Socket bind failed thing, fixed"})
    harness.idle()
    # ...but a newly pasted log in the same thread gets a fresh answer.
    harness.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UBOB", "ts": "1700000032.000100",
                   "thread_ts": "1700000030.000100", "text": "now this:\n```" + OOM_LINE + "\n  at torch_npu.allocate```"})
    posts = fake.wait_for(lambda: fake.posts("C0OPS"), count=2)
    harness.idle()
    assert len(fake.posts("C0OPS")) == 2
    assert posts[1].params["thread_ts"] == "1700000030.000100" and "npu-out-of-memory" in posts[1].blocks_json()


def test_auto_reply_on_a_single_signature_line(harness):
    fake = harness.fake
    harness.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UALICE", "ts": "1700000035.000100",
                   "text": OOM_LINE})
    post = fake.wait_for(lambda: fake.posts("C0OPS"))[0]
    assert "npu-out-of-memory" in post.blocks_json() and post.params["thread_ts"] == "1700000035.000100"


def test_no_reply_to_bots_edits_joins_chitchat_or_unknown_logs(harness):
    fake = harness.fake
    base = {"type": "message", "channel_type": "channel", "channel": "C0QUIET"}
    ignored = [
        {**base, "ts": "1.01", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": SOCKET_LOG},  # itself
        {**base, "ts": "1.02", "subtype": "bot_message", "bot_id": "B0OTHER", "text": SOCKET_LOG},  # another bot
        {**base, "ts": "1.03", "bot_id": "B0OTHER", "user": "U0OTHERBOT", "text": OOM_LINE},  # a bot with a user
        {**base, "ts": "1.04", "subtype": "message_changed", "message": {"text": SOCKET_LOG, "user": "UALICE", "ts": "1.00"}, "previous_message": {"text": "x"}},
        {**base, "ts": "1.05", "subtype": "message_deleted", "deleted_ts": "1.00"},
        {**base, "ts": "1.06", "subtype": "channel_join", "user": "UNEW", "text": "<@UNEW> has joined the channel"},
        {**base, "ts": "1.07", "user": "UALICE", "text": "lunch anyone? the usual place at noon"},
        {**base, "ts": "1.08", "user": "UALICE", "text": "ok"},
        {**base, "ts": "1.09", "user": "UALICE", "text": "```\n[ERROR] flux capacitor misaligned: quantum foam overflow\n[ERROR] retrying warp coil 7\n```"},
    ]
    for event in ignored:
        status, _, _ = harness.event(event)
        assert status == 200
    harness.idle()
    assert fake.posts() == []
    # The unknown log was remembered as a knowledge gap (fingerprint + redacted excerpt only).
    assert "flux capacitor" in harness.bot.feedback.report()


def test_integration_bot_in_answer_bot_ids_is_read_from_attachments(harness):
    fake = harness.fake
    harness.event({"type": "message", "subtype": "bot_message", "bot_id": "BALERTS01", "channel": "C0ALERTS", "channel_type": "channel",
                   "ts": "1700000040.000100", "text": "",
                   "attachments": [{"fallback": "job failed", "pretext": "Nightly inference job failed",
                                    "fields": [{"title": "error", "value": OOM_LINE}]}]})
    post = fake.wait_for(lambda: fake.posts("C0ALERTS"))[0]
    assert "npu-out-of-memory" in post.blocks_json() and post.params["thread_ts"] == "1700000040.000100"


def test_auto_reply_switches_and_cooldown(make_harness):
    off = make_harness(auto_reply=False)
    off.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UALICE", "ts": "2.01", "text": SOCKET_LOG})
    off.idle()
    assert off.fake.posts() == []

    only = make_harness(auto_reply_channels=["C0ALLOWED"], cooldown_seconds=60.0)
    only.event({"type": "message", "channel_type": "channel", "channel": "C0OTHER", "user": "UALICE", "ts": "2.02", "text": SOCKET_LOG})
    only.idle()
    assert only.fake.posts() == []
    for k in range(4):  # a flood from one user: one reply
        only.event({"type": "message", "channel_type": "channel", "channel": "C0ALLOWED", "user": "UFLOOD", "ts": f"2.1{k}", "text": SOCKET_LOG})
    only.fake.wait_for(lambda: only.fake.posts("C0ALLOWED"))
    only.idle()
    assert len(only.fake.posts("C0ALLOWED")) == 1
    # Explicit requests are not subject to the auto-reply cooldown.
    only.event({"type": "app_mention", "user": "UFLOOD", "channel": "C0ALLOWED", "ts": "2.20", "text": bot_mention(OOM_LINE)})
    only.fake.wait_for(lambda: only.fake.posts("C0ALLOWED"), count=2)


def test_file_share_in_channel_and_dm(harness):
    fake = harness.fake
    info = fake.add_file("F0LOG1", "mindie-service.log", SOCKET_LOG.encode())
    harness.event({"type": "message", "subtype": "file_share", "channel_type": "channel", "channel": "C0OPS", "user": "UALICE",
                   "ts": "1700000050.000100", "text": "", "files": [info]})
    post = fake.wait_for(lambda: fake.posts("C0OPS"))[0]
    assert post.params["thread_ts"] == "1700000050.000100"
    assert "socket-bind-failed" in post.blocks_json() and "lsof -i :1025" in code_blocks(post)
    download = fake.downloads()[0]
    assert download.status == 200 and download.headers["authorization"] == f"Bearer {BOT_TOKEN}"

    # A stub that only says "check_file_info" is resolved through files.info first.
    fake.add_file("F0LOG2", "oom.txt", ("[2025-01-01 00:00:00] INFO start\n" + OOM_LINE + "\n").encode())
    harness.event({"type": "message", "subtype": "file_share", "channel_type": "im", "channel": "D0ALICE", "user": "UALICE",
                   "ts": "1700000051.000100", "text": "what is this?", "files": [{"id": "F0LOG2", "file_access": "check_file_info"}]})
    dm = fake.wait_for(lambda: fake.posts("D0ALICE"))[0]
    assert "npu-out-of-memory" in dm.blocks_json()
    assert fake.api_calls("files.info")[0].params["file"] == "F0LOG2"


def test_huge_and_binary_pastes_and_files_do_not_crash(harness):
    fake = harness.fake
    # 2 MB paste (explicit, DM): answered (input capped by max_input_bytes), not crashed.
    huge = (SOCKET_LOG + "\n") + ("[2025-03-11 10:22:41.118] [7321] [INFO] [llm_manager] heartbeat ok\n" * 30000)
    assert len(huge.encode()) > 2_000_000
    status, _, elapsed = harness.event({"type": "message", "channel_type": "im", "channel": "D0BIG", "user": "UALICE", "ts": "3.01", "text": huge})
    assert status == 200 and elapsed < 3.0
    big_post = fake.wait_for(lambda: fake.posts("D0BIG"))[0]
    assert "socket-bind-failed" in big_post.blocks_json()

    # Binary paste: an honest reply, no crash.
    harness.event({"type": "message", "channel_type": "im", "channel": "D0BIN", "user": "UALICE", "ts": "3.02", "text": "\x00\x01\x02\x03\xff" * 2000})
    fake.wait_for(lambda: fake.posts("D0BIN"))

    # 2 MB file: only max_file_bytes are read, and the reply says so.
    big_file = fake.add_file("F0BIG", "huge.log", huge.encode())
    # Binary file named like a log: refused, and the reply says so.
    png = fake.add_file("F0PNG", "screenshot.log", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 10, "application/octet-stream")
    harness.event({"type": "message", "subtype": "file_share", "channel_type": "im", "channel": "D0FILES", "user": "UALICE", "ts": "3.03",
                   "text": "", "files": [big_file, png]})
    post = fake.wait_for(lambda: fake.posts("D0FILES"))[0]
    text = post.blocks_json()
    assert "socket-bind-failed" in text
    assert "Only the first" in text and "huge.log" in text
    assert "screenshot.log" in text and "binary content" in text
    # Binary file alone in a channel: silence (an auto-reply candidate never gets a "can't read" note).
    harness.event({"type": "message", "subtype": "file_share", "channel_type": "channel", "channel": "C0BINFILE", "user": "UALICE",
                   "ts": "3.04", "text": "", "files": [png]})
    harness.idle()
    assert fake.posts("C0BINFILE") == []
    with urllib.request.urlopen(f"http://127.0.0.1:{harness.server.port}/healthz", timeout=5) as response:
        assert response.status == 200  # still serving


# --- security and robustness ---------------------------------------------------------------------------


def test_bad_or_stale_signatures_are_refused(harness, caplog):
    caplog.set_level(logging.INFO)
    event = {"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "4.01", "text": bot_mention(OOM_LINE)}
    status, _, _ = harness.event(event, secret="not-the-signing-secret")
    assert status == 401
    status, _, _ = harness.event(event, timestamp=int(time.time()) - 6 * 60)  # correctly signed but stale
    assert status == 401
    status, _, _ = harness.event(event, signature="v0=deadbeef")
    assert status == 401
    status, _, _ = harness.send("command=%2Fmindie-help&text=x", "application/x-www-form-urlencoded", secret="wrong")
    assert status == 401
    harness.idle()
    assert harness.fake.posts() == [] and harness.fake.responses() == []
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "event=request_refused" in logged
    assert "NPU out of memory" not in logged, "the refused request's body must not be logged"


def test_retried_and_duplicate_events_are_answered_once(harness):
    fake = harness.fake
    event = {"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000060.000100", "text": bot_mention(SOCKET_LOG)}
    assert harness.event(event, event_id="Ev0RETRY")[0] == 200
    for n in (1, 2):
        status, _, _ = harness.event(event, event_id="Ev0RETRY", extra_headers={"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"})
        assert status == 200
    # The same message also arrives as a message.channels event (different event_id): still one reply.
    harness.event({**event, "type": "message", "channel_type": "channel"}, event_id="Ev0OTHER")
    fake.wait_for(lambda: fake.posts(CH))
    harness.idle()
    assert len(fake.posts(CH)) == 1


def test_rate_limited_calls_are_retried_after_retry_after(harness):
    fake = harness.fake
    fake.rate_limit_once.add("chat.postMessage")
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "5.01", "text": bot_mention(OOM_LINE)})
    fake.wait_for(lambda: fake.posts(CH))
    attempts = fake.api_calls("chat.postMessage")
    assert [c.status for c in attempts] == [429, 200]
    assert attempts[1].at - attempts[0].at >= 0.9  # waited for Retry-After: 1

    fake.rate_limit_once.add("response")
    harness.command(OOM_LINE, "cmd-429")
    fake.wait_for(lambda: fake.responses("cmd-429"))
    with fake._lock:
        statuses = [c.status for c in fake.calls if c.kind == "response" and c.name == "cmd-429"]
    assert statuses == [429, 200]


def test_slack_errors_still_reach_the_user(harness):
    fake = harness.fake
    # Blocks rejected: the plain-text fallback is posted instead.
    fake.fail_once["chat.postMessage"] = "invalid_blocks"
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "6.01", "text": bot_mention(OOM_LINE)})
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    assert "blocks" not in post.params and "NPU" in post.params["text"]

    # response_url broken: the answer's failure is reported with chat.postEphemeral.
    fake.response_status["cmd-broken"] = 500
    harness.command(OOM_LINE, "cmd-broken")
    eph = fake.wait_for(lambda: fake.api_calls("chat.postEphemeral"))[0]
    assert eph.params["user"] == "UALICE" and "something went wrong" in eph.params["text"]


def test_abstention_offers_a_human_and_the_button_tags_the_group(harness):
    fake = harness.fake
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000070.000100",
                   "text": bot_mention("what is the best pizza topping in the office canteen")})
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    assert "couldn't find a confident match" in post.blocks_json()
    assert post.params["thread_ts"] == "1700000070.000100"
    button = find_buttons(post.blocks)[bk.ACTION_ESCALATE]
    harness.click(button, "esc1", message_ts="1700000070.000200", thread_ts="1700000070.000100")
    posts = fake.wait_for(lambda: fake.posts(CH), count=2)
    escalation = posts[1]
    assert escalation.params["thread_ts"] == "1700000070.000100"
    assert "<!subteam^S0SUPPORT>" in escalation.params["text"] and "<@UALICE>" in escalation.params["text"]
    assert fake.wait_for(lambda: fake.responses("esc1"))[0].params["response_type"] == "ephemeral"
    assert "pizza" in harness.bot.feedback.report()  # a knowledge gap


def test_feedback_clicks_are_stored_changed_and_survive_restart(harness):
    fake = harness.fake
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000080.000100", "text": bot_mention(SOCKET_LOG)})
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    buttons = find_buttons(post.blocks)
    harness.click(buttons[bk.ACTION_FEEDBACK_UP], "fb1", user="UALICE")
    harness.click(buttons[bk.ACTION_FEEDBACK_UP], "fb2", user="UBOB")
    harness.click(buttons[bk.ACTION_FEEDBACK_DOWN], "fb3", user="UALICE")  # changes Alice's vote
    thanks = fake.wait_for(lambda: fake.responses("fb3"))[0]
    assert thanks.params["response_type"] == "ephemeral" and "changed" in thanks.params["text"]
    harness.idle()
    harness.bot.feedback.close()

    restarted = FeedbackStore(harness.settings.feedback_db)
    votes = {v.entry_id: (v.helpful, v.unhelpful) for v in restarted.entry_votes()}
    assert votes == {"socket-bind-failed": (1, 1)}
    assert "socket-bind-failed" in restarted.report()
    restarted.close()


def test_tokens_and_message_text_never_logged(harness, caplog):
    caplog.set_level(logging.INFO)  # the production level; no redaction filter here, so nothing may leak at all
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "7.01", "text": bot_mention("secret-ish words " + SOCKET_LOG)})
    harness.fake.wait_for(lambda: harness.fake.posts(CH))
    harness.idle()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "event=reply" in logged and "surface=mention" in logged and "fp=" in logged
    assert BOT_TOKEN not in logged and SIGNING_SECRET not in logged
    assert "secret-ish words" not in logged and "Socket bind failed, ip" not in logged


def test_url_verification_and_unreadable_file_only(harness):
    status, body, _ = harness.send(json.dumps({"type": "url_verification", "challenge": "c-123", "token": "x"}), "application/json")
    assert status == 200 and "c-123" in body
    fake = harness.fake
    png = fake.add_file("F0PIC", "photo.png", b"\x89PNG\r\n\x1a\n\x00\x00", "image/png")
    harness.event({"type": "message", "subtype": "file_share", "channel_type": "im", "channel": "D0PIC", "user": "UALICE", "ts": "8.01",
                   "text": "", "files": [png]})
    post = fake.wait_for(lambda: fake.posts("D0PIC"))[0]
    assert "photo.png" in post.params["text"] and "not a text file" in post.params["text"] and "/mindie-help" in post.params["text"]
    assert fake.downloads() == []  # an image is never downloaded


def test_escalation_where_the_bot_is_not_a_member(harness):
    fake = harness.fake
    harness.command("how do I bake sourdough bread at home", "cmd-esc", channel="CNOTIN")
    response = fake.wait_for(lambda: fake.responses("cmd-esc"))[0]
    button = find_buttons(response.params["blocks"])[bk.ACTION_ESCALATE]
    harness.click(button, "esc-notin", channel="CNOTIN", ephemeral=True)
    reply = fake.wait_for(lambda: fake.responses("esc-notin"))[0]
    assert "/invite" in reply.params["text"]


def test_after_a_restart_a_thread_the_bot_answered_is_recognised_from_slack(harness):
    fake = harness.fake
    root = "1700000090.000100"
    fake.replies[("C0OPS", root)] = [
        {"type": "message", "user": "UALICE", "ts": root, "text": SOCKET_LOG},
        {"type": "message", "bot_id": BOT_ID, "user": BOT_USER_ID, "ts": "1700000090.000200", "text": "answer", "thread_ts": root},
    ]
    harness.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UBOB", "ts": "1700000091.000100",
                   "thread_ts": root, "text": OOM_LINE})  # a signature line, not a pasted log
    harness.idle()
    assert fake.posts("C0OPS") == []
    assert fake.api_calls("conversations.replies")
    # Chit-chat in greeting form to the bot in a DM gets the usage text, not a "no match".
    harness.event({"type": "message", "channel_type": "im", "channel": "D0HI", "user": "UALICE", "ts": "9.01", "text": "hi"})
    post = fake.wait_for(lambda: fake.posts("D0HI"))[0]
    assert "/mindie-help" in post.params["text"]


def test_an_unrecognised_real_error_gets_root_line_family_triage_and_a_human(harness):
    """A real report whose error is not in the knowledge base: no guessed fix, the root line quoted, its family's
    first steps, the human button; pasted into a channel unasked, the bot stays silent."""
    fake = harness.fake
    log = (Path(__file__).parent.parent / "data" / "real_logs" / "aclnn-inplacezero-561103.log").read_text(encoding="utf-8")
    harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000090.000100",
                   "text": bot_mention("deploy fails:\n```" + log + "```")})
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    body = post.blocks_json()
    assert "Not recognised" in body and "Not recognised" in post.params["text"]
    assert "aclnnInplaceZero" in body  # the root line is quoted
    assert "561103" in body  # with what the code means
    assert "It looks like: CANN" in body and "ASCEND_LAUNCH_BLOCKING" in body  # the family's first steps
    assert bk.ACTION_ESCALATE in find_buttons(post.blocks)

    harness.event({"type": "message", "channel_type": "channel", "channel": "C0OPS", "user": "UBOB",
                   "ts": "1700000091.000100", "text": "```" + log + "```"})
    time.sleep(1.0)
    assert not fake.posts("C0OPS")  # auto-replies stay silent unless confident
