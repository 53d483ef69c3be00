"""Two bots on one PostgreSQL, in this process (fast), each behind its own HTTP server: retries, replays, clicks
and auto-replies that reach either of them are handled once. Also: Socket Mode with two connections, and the
database going away while the bot runs."""

from __future__ import annotations

import json
import logging
import time
import urllib.request

import pytest
from fake_slack import APP_TOKEN, TEAM_ID, FakeSocketModeServer
from slack_harness import OOM_LINE, SOCKET_LOG, bot_mention, find_buttons, make_settings

from bot.feedback import FeedbackStore
from bot.slack import blocks as bk
from bot.storage import SharedState

CH = "C0SHARED"


@pytest.fixture
def pair(make_harness, pg_url):
    return make_harness(database_url=pg_url), make_harness(database_url=pg_url)


def test_a_retry_to_the_other_replica_is_not_answered_twice(pair):
    a, b = pair
    fake = a.fake
    event = {"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000101.000100", "text": bot_mention(SOCKET_LOG)}
    assert a.event(event, event_id="Ev0SHARED1")[0] == 200
    # Slack retries on the other replica while the first may still be answering: 503 (retry later) or 200 (done)
    status, _, _ = b.event(event, event_id="Ev0SHARED1", extra_headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert status in (200, 503)
    fake.wait_for(lambda: fake.posts(CH))
    a.idle()
    b.idle()
    status, _, _ = b.event(event, event_id="Ev0SHARED1", extra_headers={"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"})
    assert status == 200  # answered by now: acknowledged and dropped
    # the same message as a message.channels event, on the other replica
    b.event({**event, "type": "message", "channel_type": "channel"}, event_id="Ev0SHARED2")
    b.idle()
    assert len(fake.posts(CH)) == 1
    # /healthz tells which database the replica uses and that it answers
    status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{a.server.port}/healthz", timeout=5).read())
    assert status["entries"] > 0


def test_replayed_commands_and_clicks_do_nothing_and_escalation_is_once_per_thread(pair):
    a, b = pair
    fake = a.fake
    a.command(OOM_LINE, "cmd-replay", trigger_id="4242.1.replayed")
    fake.wait_for(lambda: fake.responses("cmd-replay"))
    a.idle()
    for harness in (a, b):  # the same signed request again, to each replica
        assert harness.command(OOM_LINE, "cmd-replay", trigger_id="4242.1.replayed")[0] == 200
        harness.idle()
    assert len(fake.responses("cmd-replay")) == 1

    # Five people press "Ask a human" under one answer, on both replicas: one escalation in the thread.
    button = {"action_id": bk.ACTION_ESCALATE, "text": {"type": "plain_text", "text": "human"},
              "value": json.dumps({"t": "1700000102.000100", "l": "en", "f": "abcdef"})}
    for n in range(5):
        (a if n % 2 else b).click(button, f"esc-{n}", user=f"U{n}", channel=CH)
    a.idle()
    b.idle()
    escalations = [p for p in fake.posts(CH) if "asked for a human" in p.params["text"]]
    assert len(escalations) == 1 and escalations[0].params["thread_ts"] == "1700000102.000100"
    notes = [fake.wait_for(lambda n=n: fake.responses(f"esc-{n}"))[0].params["text"] for n in range(5)]
    assert sum("already asked" in t for t in notes) == 4


def test_auto_reply_settings_cooldown_and_once_per_thread_hold_across_replicas(make_harness, pg_url):
    a = make_harness(database_url=pg_url, cooldown_seconds=60.0)
    b = make_harness(database_url=pg_url, cooldown_seconds=60.0)
    fake = a.fake
    for k in range(4):  # one user floods both replicas: one reply
        (a if k % 2 else b).event({"type": "message", "channel_type": "channel", "channel": "C0FLOOD", "user": "UFLOOD",
                                   "ts": f"1700000200.00010{k}", "text": SOCKET_LOG})
    fake.wait_for(lambda: fake.posts("C0FLOOD"))
    a.idle()
    b.idle()
    assert len(fake.posts("C0FLOOD")) == 1

    # A channel switched to mention-only (by `mindie-help channel set`) gets no auto-replies on any replica.
    with FeedbackStore(pg_url) as store:
        SharedState(store.db).set_channel("C0QUIET", mode="mention")
    for k, harness in enumerate((a, b)):
        harness.event({"type": "message", "channel_type": "channel", "channel": "C0QUIET", "user": f"U{k}",
                       "ts": f"1700000300.00010{k}", "text": SOCKET_LOG})
        harness.idle()
    assert fake.posts("C0QUIET") == []

    # In a thread already answered, a chatty line matching a signature is not answered by the other replica.
    a.event({"type": "message", "channel_type": "channel", "channel": "C0THREAD", "user": "UALICE", "ts": "1700000400.000100", "text": SOCKET_LOG})
    fake.wait_for(lambda: fake.posts("C0THREAD"))
    a.idle()
    b.event({"type": "message", "channel_type": "channel", "channel": "C0THREAD", "user": "UBOB", "ts": "1700000401.000100",
             "thread_ts": "1700000400.000100", "text": "thanks, it was the " + OOM_LINE})
    b.idle()
    assert len(fake.posts("C0THREAD")) == 1


def test_votes_from_both_replicas_land_in_one_database(pair, pg_url):
    a, b = pair
    fake = a.fake
    a.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000500.000100", "text": bot_mention(OOM_LINE)})
    post = fake.wait_for(lambda: fake.posts(CH))[0]
    buttons = find_buttons(post.blocks)
    a.click(buttons[bk.ACTION_FEEDBACK_UP], "v1", user="U1", channel=CH)
    b.click(buttons[bk.ACTION_FEEDBACK_DOWN], "v2", user="U2", channel=CH)
    b.click(buttons[bk.ACTION_FEEDBACK_DOWN], "v3", user="U1", channel=CH)  # U1 changes their vote on the other replica
    assert "changed" in fake.wait_for(lambda: fake.responses("v3"))[0].params["text"]
    a.idle()
    b.idle()
    with FeedbackStore(pg_url) as store:
        assert store.report_json()["entries"] == [{"id": "npu-out-of-memory", "up": 0, "down": 2}]
        assert store.activity(7).answered == 1


def test_socket_mode_with_two_connections_answers_a_redelivered_envelope_once(engine, fake_slack, tmp_path, pg_url):
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    from bot.slack.app import SlackBot

    fake_slack.reset()
    running = []
    try:
        for _ in range(2):  # two replicas, each with its own Socket Mode connection
            ws = FakeSocketModeServer().start()
            fake_slack.ws_url = ws.url
            bot = SlackBot(make_settings(fake_slack, tmp_path, database_url=pg_url), engine)
            handler = SocketModeHandler(bot.app, APP_TOKEN, ping_interval=30)
            handler.connect()
            assert ws.connected.wait(10)
            running.append((ws, bot, handler))
        envelope = {
            "envelope_id": "env-1", "type": "events_api", "accepts_response_payload": False, "retry_attempt": 0, "retry_reason": "",
            "payload": {
                "team_id": TEAM_ID, "api_app_id": "A0TEST", "type": "event_callback", "event_id": "Ev0SOCKPAIR", "event_time": int(time.time()),
                "event": {"type": "app_mention", "user": "UALICE", "channel": "C0SOCK2", "ts": "1700000600.000100", "text": bot_mention(OOM_LINE)},
            },
        }
        running[0][0].send(envelope)
        fake_slack.wait_for(lambda: fake_slack.posts("C0SOCK2"))
        running[0][1].wait_idle(10)
        # Slack redelivers it on the other connection: acknowledged there, not answered again
        running[1][0].send({**envelope, "envelope_id": "env-2", "retry_attempt": 1, "retry_reason": "timeout"})
        deadline = time.monotonic() + 10
        while not any(ack.get("envelope_id") == "env-2" for ack in running[1][0].acks) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(ack.get("envelope_id") == "env-2" for ack in running[1][0].acks)
        running[1][1].wait_idle(10)
        assert len(fake_slack.posts("C0SOCK2")) == 1
    finally:
        for ws, bot, handler in running:
            handler.close()
            bot.wait_idle(10)
            bot.feedback.close()
            ws.stop()
        fake_slack.ws_url = None
        fake_slack.reset()


def test_the_bot_keeps_answering_when_the_database_goes_away(make_harness, postgres_server, caplog):
    """Stop PostgreSQL under a running bot: it answers, de-duplicates in memory (warning once), queues votes;
    start it again: the votes land."""
    from pg_server import PostgresServer

    caplog.set_level(logging.INFO)
    server = PostgresServer(postgres_server.bindir).start()  # its own server: this test stops it
    try:
        url = server.create_database()
        harness = make_harness(database_url=url, replica_timeout_seconds=3.0)
        fake = harness.fake
        harness.event({"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000700.000100", "text": bot_mention(OOM_LINE)})
        post = fake.wait_for(lambda: fake.posts(CH))[0]
        buttons = find_buttons(post.blocks)
        harness.idle()
        server.stop(remove=False)

        event = {"type": "app_mention", "user": "UBOB", "channel": CH, "ts": "1700000701.000100", "text": bot_mention(SOCKET_LOG)}
        status, _, elapsed = harness.event(event, event_id="Ev0DBDOWN")
        assert status == 200 and elapsed < 3.0
        fake.wait_for(lambda: fake.posts(CH), count=2)
        harness.event(event, event_id="Ev0DBDOWN", extra_headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
        status, _, elapsed = harness.click(buttons[bk.ACTION_FEEDBACK_UP], "vote-down", user="UCAROL", channel=CH)
        assert status == 200 and elapsed < 3.0
        assert "Thanks" in fake.wait_for(lambda: fake.responses("vote-down"))[0].params["text"]
        harness.idle()
        assert len(fake.posts(CH)) == 2  # the retry was not answered again
        with urllib.request.urlopen(f"http://127.0.0.1:{harness.server.port}/healthz", timeout=5) as response:
            assert response.status == 200

        server.restart()
        deadline = time.monotonic() + 20
        while harness.bot.feedback.db.pending and time.monotonic() < deadline:
            time.sleep(0.1)
        with FeedbackStore(url) as store:
            assert store.report_json()["entries"] == [{"id": "npu-out-of-memory", "up": 1, "down": 0}]
        logged = [r.getMessage() for r in caplog.records]
        assert sum("event=database_unavailable" in m for m in logged) == 1
        assert sum("event=shared_state_fallback" in m for m in logged) == 1  # warned once, not per event
        assert any("event=database_recovered" in m for m in logged)
    finally:
        server.stop()


def test_after_a_restart_a_retry_or_a_replayed_command_is_not_answered_again(make_harness):
    """One replica on the default SQLite file: the de-duplication survives a restart (issue #11, finding 11)."""
    first = make_harness()
    fake = first.fake
    event = {"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000800.000100", "text": bot_mention(OOM_LINE)}
    first.event(event, event_id="Ev0RESTART")
    first.command(OOM_LINE, "cmd-before", trigger_id="777.1.replay")
    fake.wait_for(lambda: fake.posts(CH))
    fake.wait_for(lambda: fake.responses("cmd-before"))
    first.idle()
    first.server.stop()
    first.bot.feedback.close()

    again = make_harness()  # a new process on the same database file
    status, _, _ = again.event(event, event_id="Ev0RESTART", extra_headers={"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"})
    assert status == 200
    assert again.command(OOM_LINE, "cmd-before", trigger_id="777.1.replay")[0] == 200
    again.idle()
    assert len(fake.posts(CH)) == 1 and len(fake.responses("cmd-before")) == 1


def test_a_replica_resuming_a_dead_replicas_message_answers_only_what_was_not_answered(pair):
    """A replica killed after its reply reached Slack but before it recorded the work done leaves claims that a
    retry takes over. The survivor looks at the thread first: each reply carries, as message metadata, the ts of the
    message it answers, so it stays silent for that message and still answers the ones the dead replica never did."""
    import sqlalchemy as sa

    from bot.storage import claims, replicas

    a, b = pair
    fake = a.fake
    first = {"type": "app_mention", "user": "UALICE", "channel": CH, "ts": "1700000901.000100", "text": bot_mention(SOCKET_LOG)}
    a.event(first, event_id="Ev0DEAD1")
    fake.wait_for(lambda: fake.posts(CH))
    a.idle()
    dead = a.bot.state.db.replica_id
    a.server.stop()
    a.bot.feedback.close()  # stops its heartbeat and leaves the replica list, as a killed process falls out of it

    def held_by_dead_replica(event_id: str, ts: str) -> None:
        """The claims as a replica leaves them when it dies in the middle of its work (done = 0)."""
        now = time.time()
        with b.bot.state.db.begin() as conn:
            for kind, key in (("event", event_id), ("message", f"{CH}:{ts}")):
                conn.execute(sa.delete(claims).where(claims.c.kind == kind, claims.c.key == key))
                conn.execute(sa.insert(claims).values(kind=kind, key=key, owner=dead, done=0, expires_at=now + 3600, created_at=now))
            assert conn.execute(sa.select(replicas.c.id).where(replicas.c.id == dead)).first() is None

    # 1. answered, then killed before recording it: Slack's retry reaches b, which finds the reply and stays silent
    held_by_dead_replica("Ev0DEAD1", first["ts"])
    status, _, _ = b.event(first, event_id="Ev0DEAD1", extra_headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert status == 200
    b.idle()
    assert len(fake.posts(CH)) == 1
    assert fake.posts(CH)[0].params["metadata"]["event_payload"]["reply_to"] == first["ts"]
    # 2. killed before answering: b answers it
    second = {**first, "ts": "1700000902.000100"}
    held_by_dead_replica("Ev0DEAD2", second["ts"])
    b.event(second, event_id="Ev0DEAD2", extra_headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    fake.wait_for(lambda: fake.posts(CH), count=2)
    # 3. a second question in the first thread, never answered: the reply to the thread's first message is not its reply
    third = {**first, "ts": "1700000903.000100", "thread_ts": first["ts"], "text": bot_mention(OOM_LINE)}
    held_by_dead_replica("Ev0DEAD3", third["ts"])
    b.event(third, event_id="Ev0DEAD3", extra_headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    fake.wait_for(lambda: fake.posts(CH), count=3)
    b.idle()
    posts = fake.posts(CH)
    assert len(posts) == 3
    assert [p.params["thread_ts"] for p in posts] == [first["ts"], second["ts"], first["ts"]]
    assert fake.api_calls("conversations.replies")  # the survivor did look before answering
