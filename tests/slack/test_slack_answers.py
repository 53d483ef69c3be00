"""Answers people can act on at a glance (issue #10), against the fake Slack over real, signed HTTP with the real
engine: answer-first layout within 1,500 characters, placeholders filled from the log, no unfilled or foreign
placeholder, language of the person, Show details, Resolved, Ask a human to the support channel (once, never in a
DM), chit-chat."""

from __future__ import annotations

import json
import re

import pytest
from slack_harness import OOM_LINE, SOCKET_LOG, bot_mention, find_buttons

from bot.slack import answer_view as views
from bot.slack import blocks as bk

CH = "C0GENERAL"
SUPPORT = "C0SUPPORT"
_PLACEHOLDER = re.compile(r"(?<![$\w])\{[A-Za-z_][A-Za-z0-9_]*\}")
_CJK = re.compile(r"[\u4e00-\u9fff]")

SAMPLES = [
    ("socket", SOCKET_LOG),
    ("oom", "the service crashed:\n" + OOM_LINE + "\n  File \"model_runner.py\", line 52, in forward"),
    ("code", "our alert says error code MIE05E01000A, what does that mean?"),
    ("gloo", "[ERROR] RuntimeError: Gloo connectFullMesh failed with ... Connection refused"),
    ("static-tls", "ImportError: /opt/conda/lib/python3.10/site-packages/scikit_learn.libs/libgomp-a34b3233.so.1.0.0: "
                   "cannot allocate memory in static TLS block"),
    ("not-recognised", "[2025-06-01 10:00:01] [311] [INFO] [model] loading weights\n"
                       "[2025-06-01 10:00:02] [311] [ERROR] [model] RuntimeError: widget frobnication failed at stage 3\n"
                       "[2025-06-01 10:00:02] [311] [ERROR] [daemon] exit"),
]


def _first_post(harness, text: str, ts: str, channel: str = CH):
    fake = harness.fake
    harness.event({"type": "app_mention", "user": "UALICE", "channel": channel, "ts": ts, "text": bot_mention(text)})
    return fake.wait_for(lambda: [p for p in fake.posts(channel) if p.params.get("thread_ts") == ts])[0]


def _shown(blocks: list[dict]) -> str:
    out = []
    for b in blocks:
        if isinstance(b.get("text"), dict):
            out.append(b["text"]["text"])
        for e in b.get("elements", []):
            t = e.get("text")
            out.append(t["text"] if isinstance(t, dict) else (t or ""))
    return "\n".join(out)


@pytest.mark.parametrize("name,text", SAMPLES)
def test_first_message_is_short_answer_first_and_copy_safe(harness, name: str, text: str):
    post = _first_post(harness, text, f"1700001{len(name):03d}.0001{SAMPLES.index((name, text))}")
    blocks = post.blocks
    assert views.text_size(blocks) <= views.FIRST_MESSAGE_CHARS, name
    shown = _shown(blocks)
    assert not _PLACEHOLDER.search(shown), (name, _PLACEHOLDER.search(shown))  # never a raw {placeholder}
    for command in shown.split("```")[1::2]:
        assert not _CJK.search(command), (name, command)  # English reply: no Chinese placeholder in a command
        assert "\n" not in command.strip(), (name, command)  # one command per code block
    first = blocks[0]["text"]["text"]
    if name == "not-recognised":
        assert first.startswith(("*Not recognised", "*I couldn't find a confident match"))
        assert bk.ACTION_ESCALATE in find_buttons(blocks)
        return
    if name == "code":  # an error-code question leads with what the code means and its module
        assert first.startswith("`MIE05E01000A` TEXT_GENERATOR_OUT_OF_MEMORY (") and "out of NPU memory" in first
        assert "not in my knowledge base" not in shown
        return
    assert first.startswith("*") and "→" in first  # what is wrong, then what to do
    assert {bk.ACTION_DETAILS, bk.ACTION_RESOLVED, bk.ACTION_ESCALATE} <= set(find_buttons(blocks))
    assert "Source: <https://" in shown


def test_values_in_the_log_fill_the_commands(harness):
    post = _first_post(harness, "[ERROR] Socket bind failed, ip 172.17.0.3 port 40032", "1700002000.000100")
    assert "```lsof -i :40032```" in post.blocks_json()
    tls = _first_post(harness, SAMPLES[4][1], "1700002001.000100")
    assert "scikit_learn.libs/libgomp-a34b3233.so.1.0.0" in tls.blocks_json().split("```")[1]  # the user's library, first


def test_an_unfillable_placeholder_is_explained_in_the_reply_language(harness):
    post = _first_post(harness, "部署的时候报 Socket bind failed 是怎么回事", "1700002010.000100")
    shown = _shown(post.blocks)
    assert "lsof -i :&lt;port&gt;" in shown
    assert "把 `&lt;port&gt;` 换成" in shown and "{port}" not in shown


def test_reply_language_follows_the_persons_sentence_and_can_be_forced(harness):
    zh = _first_post(harness, "服务起不来了，帮忙看下\n```" + SOCKET_LOG + "```", "1700002020.000100")
    assert "匹配到你日志的第" in zh.blocks_json()
    en = _first_post(harness, "--en 服务起不来了，帮忙看下\n```" + SOCKET_LOG + "```", "1700002021.000100")
    assert "matched your log line" in en.blocks_json() and "匹配到" not in en.blocks_json()


def test_show_details_gives_the_rest_to_whoever_clicked_even_on_another_replica(harness, make_harness):
    fake = harness.fake
    post = _first_post(harness, SOCKET_LOG, "1700002030.000100")
    button = find_buttons(post.blocks)[bk.ACTION_DETAILS]
    harness.click(button, "details-1", thread_ts="1700002030.000100")
    details = fake.wait_for(lambda: fake.responses("details-1"))[0]
    assert details.params["response_type"] == "ephemeral" and details.params["replace_original"] is False
    text = json.dumps(details.params["blocks"], ensure_ascii=False)
    assert "Details:" in text and "confidence" in text and "line 2" in text
    # A second replica never saw the question: it answers the button's digest of it again.
    other = make_harness()
    other.click(button, "details-2", thread_ts="1700002030.000100")
    again = fake.wait_for(lambda: fake.responses("details-2"))[0]
    assert "socket-bind-failed" in json.dumps(again.params["blocks"])


def test_a_not_recognised_paste_offers_its_closest_topic_as_a_lead_not_an_answer(harness):
    """A real report whose HCCL error no signature knows: the reply says "not recognised" and names the family; the
    nearest entry is one click away, under a title that says it is not a diagnosis."""
    from pathlib import Path

    fake = harness.fake
    log = (Path(__file__).parent.parent / "data" / "real_logs" / "hccl-init-unrecognised.log").read_text(encoding="utf-8")
    post = _first_post(harness, log, "1700002035.000100")
    shown = _shown(post.blocks)
    assert "未识别" in shown and "HCCL" in shown  # the person wrote Chinese: the reply is Chinese
    buttons = find_buttons(post.blocks)
    assert set(buttons) == {bk.ACTION_DETAILS, bk.ACTION_ESCALATE}  # no votes, no Resolved: nothing was answered
    assert "最接近的主题" in buttons[bk.ACTION_DETAILS]["text"]["text"]
    harness.click(buttons[bk.ACTION_DETAILS], "closest-1", thread_ts="1700002035.000100")
    lead = fake.wait_for(lambda: fake.responses("closest-1"))[0]
    assert lead.params["response_type"] == "ephemeral"
    text = json.dumps(lead.params["blocks"], ensure_ascii=False)
    assert "最接近的主题（不是诊断）：HcclCommInitRootInfo" in text and "线索" in text
    assert "HCCL_CONNECT_TIMEOUT" in text  # the family's triage comes first, in full


def test_a_recognised_symptom_is_first_steps_not_a_fix(harness):
    """An AI CPU exception has many causes: the reply names it and quotes its line, gives its first steps under a note
    that they are not a fix, and *Show details* gives the rest (cause, every step) to whoever clicked."""
    fake = harness.fake
    paste = ("RuntimeError: ACL stream synchronize failed, error code:507018\n"
             "[ERROR] RUNTIME(1234,python):2025-03-01-10:00:00.000.000 [aicpu exception] Aicpu kernel execute failed")
    post = _first_post(harness, paste, "1700002037.000100")
    shown = _shown(post.blocks)
    assert post.blocks[0]["text"]["text"].startswith("*Recognised, cause not determined: AI CPU operator failed")
    assert "not a fix" in shown and "First steps" in shown and "Aicpu kernel execute failed" in shown
    assert "```export ASCEND_LAUNCH_BLOCKING=1```" in shown or "```grep" in shown
    buttons = find_buttons(post.blocks)
    assert set(buttons) == {bk.ACTION_DETAILS, bk.ACTION_ESCALATE}  # no votes, no Resolved: nothing was diagnosed
    assert buttons[bk.ACTION_DETAILS]["text"]["text"] == "Show details"
    assert views.text_size(post.blocks) <= views.FIRST_MESSAGE_CHARS
    harness.click(buttons[bk.ACTION_DETAILS], "symptom-1", thread_ts="1700002037.000100")
    rest = fake.wait_for(lambda: fake.responses("symptom-1"))[0]
    text = json.dumps(rest.params["blocks"], ensure_ascii=False)
    assert rest.params["response_type"] == "ephemeral"
    assert "*Cause*" in text and "Closest topic, not a diagnosis" not in text


def test_resolved_is_stored_and_replaces_the_button(harness):
    fake = harness.fake
    post = _first_post(harness, SOCKET_LOG, "1700002040.000100")
    button = find_buttons(post.blocks)[bk.ACTION_RESOLVED]
    harness.click(button, "resolve-1", message_ts=post.params.get("ts", "1700002040.000200"), thread_ts="1700002040.000100",
                  message={"text": post.params["text"], "blocks": post.blocks})
    replaced = fake.wait_for(lambda: [r for r in fake.responses("resolve-1") if r.params.get("replace_original")])[0]
    assert bk.ACTION_RESOLVED not in find_buttons(replaced.params["blocks"])
    assert "Marked resolved by <@UALICE>" in json.dumps(replaced.params["blocks"])
    harness.idle()
    assert harness.bot.state.is_resolved(CH, "1700002040.000100")


def test_ask_a_human_goes_to_the_support_channel_once_with_a_permalink(make_harness):
    harness = make_harness(escalation_channel=SUPPORT)
    fake = harness.fake
    post = _first_post(harness, SOCKET_LOG, "1700002050.000100")
    button = find_buttons(post.blocks)[bk.ACTION_ESCALATE]  # offered on an answer, not only on abstentions
    message = {"text": post.params["text"], "blocks": post.blocks}
    harness.click(button, "esc-1", thread_ts="1700002050.000100", message=message)
    request = fake.wait_for(lambda: fake.posts(SUPPORT))[0]
    text = request.params["text"]
    assert "<!subteam^S0SUPPORT>" in text and "<@UALICE>" in text
    assert "https://test.slack.com/archives/C0GENERAL/p1700002050000100" in text  # the permalink to the thread
    assert "Socket bind failed" in text  # and the question
    replaced = fake.wait_for(lambda: [r for r in fake.responses("esc-1") if r.params.get("replace_original")])[0]
    assert bk.ACTION_ESCALATE not in find_buttons(replaced.params["blocks"])
    assert "A human was asked by <@UALICE>" in json.dumps(replaced.params["blocks"])
    # A second click (anyone, any replica) does not ask again.
    harness.click(button, "esc-2", user="UBOB", thread_ts="1700002050.000100", message=message)
    note = fake.wait_for(lambda: fake.responses("esc-2"))[0]
    assert "already" in note.params["text"] and "<@UALICE>" in note.params["text"]
    harness.idle()
    assert len(fake.posts(SUPPORT)) == 1
    assert not [p for p in fake.posts(CH) if "subteam" in p.params.get("text", "")]  # no ping in the thread itself


def test_ask_a_human_never_pings_inside_a_dm(make_harness):
    for i, support in enumerate((None, SUPPORT)):
        harness = make_harness(escalation_channel=support)
        fake = harness.fake
        fake.reset()
        dm = "D0ALICE"
        harness.event({"type": "message", "channel_type": "im", "channel": dm, "user": "UALICE", "ts": f"170000206{i}.000100",
                       "text": "how do I bake sourdough bread at home"})
        post = fake.wait_for(lambda: fake.posts(dm))[0]
        harness.click(find_buttons(post.blocks)[bk.ACTION_ESCALATE], "esc-dm", channel=dm)
        reply = fake.wait_for(lambda: fake.responses("esc-dm"))[0]
        harness.idle()
        assert not [p for p in fake.posts(dm) if "subteam" in p.params.get("text", "")], support
        if support:
            assert "subteam" in fake.posts(SUPPORT)[0].params["text"] and "direct message" in fake.posts(SUPPORT)[0].params["text"]
        else:
            assert "no support channel" in reply.params["text"] and not fake.posts(SUPPORT)


def test_chit_chat_gets_one_friendly_line_and_is_not_a_gap(harness):
    fake = harness.fake
    for i, text in enumerate(["thanks, you're awesome!", "谢谢！"]):
        harness.event({"type": "message", "channel_type": "im", "channel": "D0BOB", "user": "UBOB", "ts": f"17000021{i}0.000100",
                       "text": text})
    posts = fake.wait_for(lambda: fake.posts("D0BOB"), count=2)
    assert "You're welcome" in posts[0].params["text"] and "不客气" in posts[1].params["text"]
    assert all(len(p.params["text"]) < 120 for p in posts)
    harness.idle()
    assert harness.bot.feedback.gaps() == []


def test_the_readme_mockup_is_drawn_from_the_real_payload(engine):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "slack_mockup.py"
    spec = importlib.util.spec_from_file_location("slack_mockup", path)
    mockup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mockup)  # type: ignore[union-attr]
    answer = engine.answer(mockup.SAMPLE)
    rendered = views.render_answer(answer, fp="f" * 64, details_value={"k": "-"}, escalate_value={"t": "-"}, resolve_value={"t": "-"})
    picture = mockup.draw(rendered.blocks)
    assert "│ lsof -i :1025 │" in picture and "matched your log line 3" in picture
    assert "[ Show details ]" in picture and "[ 🙋 Ask a human ]" in picture
    readme = (path.parents[1] / "README.md").read_text(encoding="utf-8")
    assert "│ lsof -i :1025 │" in readme.split(mockup.START)[1].split(mockup.END)[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_reply_of_any_entry_shows_a_raw_or_foreign_placeholder(engine, lang: str):
    """Every entry's own example, answered in both languages: the first message and the details never show a raw
    {placeholder}, and an English reply never carries Chinese inside a command."""
    checked = 0
    for entry in engine.entries:
        if not entry.example_logs:
            continue
        answer = engine.answer(entry.example_logs[0], lang=lang)
        for rendered in (views.render_answer(answer, fp="f" * 64), views.render_details(answer)):
            # the user's own quoted lines may hold braces (a pasted f-string); everything else is the bot's
            shown = "\n".join(line for line in _shown(rendered.blocks).split("\n") if not line.startswith("> "))
            assert not _PLACEHOLDER.search(shown), (entry.id, _PLACEHOLDER.search(shown))
            if lang == "en":
                for command in shown.split("```")[1::2]:
                    assert not _CJK.search(command), (entry.id, command)
        checked += 1
    assert checked >= 150
