"""Block Kit rendering: content, language, escaping, and Slack's limits under an artificially huge Answer."""

from __future__ import annotations

import json

from bot.engine.models import Answer, CodeOut, CommandOut, Hit, MatchedLine, PlaceholderOut
from bot.slack import answer_view as views
from bot.slack import blocks as bk


def make_hit(i: int = 0, *, size: int = 1, title: str | None = None) -> Hit:
    commands = [f"lsof -i :{1025 + k} && echo {'x' * (size * 40)}" for k in range(max(1, size))]
    return Hit(
        id=f"entry-{i}",
        title=title or f"Problem {i} <b>&",
        component="Service",
        score=1.0 - i / 10,
        confidence=max(0.0, 0.9 - i / 10),
        symptom="s",
        cause=("Port held by a leftover process & <friends>. " * size).strip(),
        fix="1. step",
        fix_steps=[f"Step {k} " + "y" * size for k in range(max(2, size))],
        commands=commands,
        command_details=[CommandOut(run=c, template=c, kind="shell", explain=f"explain {k}") for k, c in enumerate(commands)],
        matched=["[ERROR] Socket bind failed, ip 127.0.0.1 port 1025"],
        matched_lines=[MatchedLine(line_no=2, text="[ERROR] Socket bind failed, ip 127.0.0.1 port 1025 `x`")] * max(1, min(size, 10)),
        retrievers=["signatures", "lexical"],
        why="signature 1.00 on line 2",
    )


def make_answer(n: int = 3, *, size: int = 1, lang: str = "en", **kw) -> Answer:
    return Answer(id="q1", answered=True, lang=lang, confidence=0.9, results=[make_hit(i, size=size) for i in range(n)], **kw)


def all_texts(blocks: list[dict]) -> list[str]:
    out = []
    for b in blocks:
        if isinstance(b.get("text"), dict):
            out.append(b["text"]["text"])
        for e in b.get("elements", []):
            t = e.get("text")
            out.append(t["text"] if isinstance(t, dict) else t)
    return out


def assert_within_limits(rendered: bk.Rendered) -> None:
    blocks = rendered.blocks
    assert 0 < len(blocks) <= 50
    assert len(rendered.text) <= 40000
    assert sum(len(t) for t in all_texts(blocks)) <= 40000
    for b in blocks:
        if b["type"] == "header":
            assert len(b["text"]["text"]) <= 150
            assert b["text"]["type"] == "plain_text"
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= 3000
            assert b["text"]["text"].count("```") % 2 == 0, "an open code fence would swallow the rest"
        if b["type"] == "context":
            assert 1 <= len(b["elements"]) <= 10
            assert all(len(e["text"]) <= 3000 for e in b["elements"])
        if b["type"] == "actions":
            for e in b["elements"]:
                assert len(e["text"]["text"]) <= 75
                assert len(e["value"]) <= 2000
                assert len(e["action_id"]) <= 255


def test_answer_first_then_steps_then_commands_in_code_blocks():
    rendered = views.render_answer(make_answer(3), fp="f" * 64, threshold=0.75, details_value={"k": "d"},
                                   escalate_value={"t": "1.2"}, resolve_value={"t": "1.2"})
    assert_within_limits(rendered)
    blocks = rendered.blocks
    first = blocks[0]["text"]["text"]
    assert first.startswith("*Problem 0 &lt;b&gt;&amp;* · _matched your log line 2_")  # line 1: what is wrong
    assert first.index("→ Step 0") < first.index("```lsof -i :1025 &amp;&amp; echo") < first.index("2. Step 1")
    text = "\n".join(all_texts(blocks))
    assert "Also possible: *Problem 1 &lt;b&gt;&amp;* (matched your log line 2)" in text  # 0.8 >= threshold 0.75
    assert "Problem 2" not in text  # 0.7 is under the threshold: not offered at all
    assert "90%" not in text and "confidence" not in text  # numbers are for the details
    buttons = {e["action_id"]: e for b in blocks if b["type"] == "actions" for e in b["elements"]}
    assert list(buttons) == [bk.ACTION_DETAILS, bk.ACTION_FEEDBACK_UP, bk.ACTION_FEEDBACK_DOWN, bk.ACTION_RESOLVED, bk.ACTION_ESCALATE]
    assert json.loads(buttons[bk.ACTION_FEEDBACK_UP]["value"]) == {"e": "entry-0", "f": "f" * 64, "l": "en"}
    assert blocks[-1]["type"] == "actions"
    assert rendered.text.startswith("Problem 0 &lt;b&gt;&amp; (matched your log line 2)\n→ Step 0")
    assert views.text_size(blocks) <= views.FIRST_MESSAGE_CHARS


def test_details_have_cause_lines_numbers_and_every_command():
    rendered = views.render_details(make_answer(3))
    assert_within_limits(rendered)
    text = "\n".join(all_texts(rendered.blocks))
    assert "Details: Problem 0" in text and "confidence 90%" in text and "confidence 80%" in text
    assert "> `[ERROR] Socket bind failed, ip 127.0.0.1 port 1025 ʹxʹ`" in text
    assert "&amp; &lt;friends&gt;" in text and "_explain 0_" in text


def test_share_button_and_chinese_labels():
    rendered = views.render_answer(make_answer(1, lang="zh"), fp="a" * 64, share_value={"k": "abc", "q": "问题"})
    text = "\n".join(all_texts(rendered.blocks))
    assert "匹配到你日志的第 2 行" in text and "→ Step 0" in text
    buttons = {e["action_id"]: e for b in rendered.blocks if b["type"] == "actions" for e in b["elements"]}
    assert buttons[bk.ACTION_SHARE]["text"]["text"] == "分享到频道"
    assert buttons[bk.ACTION_FEEDBACK_UP]["text"]["text"] == "👍 有帮助"


def test_unfilled_placeholders_are_shown_as_names_with_a_hint_in_the_reply_language():
    command = CommandOut(run="lsof -i :{port}", template="lsof -i :{port}", kind="shell", explain="who holds it",
                         unfilled=[PlaceholderOut(name="port", hint="报错中的端口")])
    echo = CommandOut(run="echo ${port}", template="echo ${port}", kind="shell", explain="", unfilled=[])
    hit = make_hit(0).model_copy(update={"command_details": [command, echo], "commands": [command.run, echo.run]})
    rendered = views.render_answer(Answer(answered=True, lang="zh", confidence=0.9, results=[hit]), fp="e" * 64)
    text = "\n".join(all_texts(rendered.blocks))
    assert "```lsof -i :&lt;port&gt;```" in text and "{port}" not in text.replace("${port}", "")
    assert "把 `&lt;port&gt;` 换成报错中的端口。" in text


def test_variants_of_one_command_are_shown_once_and_config_keys_inline():
    commands = [
        CommandOut(run="export GLOO_SOCKET_IFNAME=eth0", template="export GLOO_SOCKET_IFNAME={ifname}", kind="env", explain="pin"),
        CommandOut(run="export GLOO_SOCKET_IFNAME=enp1s0", template="export GLOO_SOCKET_IFNAME=enp1s0", kind="env", explain="example"),
        CommandOut(run="maxSeqLen", template="maxSeqLen", kind="config", explain="in config.json"),
    ]
    hit = make_hit(0).model_copy(update={"command_details": commands, "commands": [c.run for c in commands]})
    text = "\n".join(all_texts(views.render_answer(Answer(answered=True, lang="en", confidence=0.9, results=[hit]), fp="e" * 64).blocks))
    assert text.count("GLOO_SOCKET_IFNAME") == 1 and "```export GLOO_SOCKET_IFNAME=eth0```" in text
    assert "`maxSeqLen` · in config.json" in text and "```maxSeqLen```" not in text


def test_two_distinct_errors_each_get_their_own_first_line():
    hits = [make_hit(i).model_copy(update={"distinct": True}) for i in range(2)]
    rendered = views.render_answer(Answer(answered=True, lang="en", confidence=0.9, results=hits), fp="e" * 64)
    text = "\n".join(all_texts(rendered.blocks))
    assert "*2 problems found*" in text and "*Problem 0" in text and "*Problem 1" in text
    assert "Also possible" not in text


def test_abstain_is_honest_short_with_topics_and_human_button():
    answer = Answer(answered=False, lang="en", confidence=0.1, results=[], suggestions=["Socket bind failed", "NPU OOM"])
    rendered = views.render_answer(answer, fp="b" * 64, escalate_value={"t": "1.2", "l": "en"})
    text = "\n".join(all_texts(rendered.blocks))
    assert "couldn't find a confident match" in text
    assert "Closest topics: Socket bind failed · NPU OOM" in text
    buttons = {e["action_id"]: e for b in rendered.blocks if b["type"] == "actions" for e in b["elements"]}
    assert set(buttons) == {bk.ACTION_ESCALATE}
    assert "feedback" not in json.dumps(rendered.blocks)
    assert_within_limits(rendered)
    assert views.text_size(rendered.blocks) <= views.FIRST_MESSAGE_CHARS


def test_the_bots_own_strings_escape_angle_brackets():
    assert "&lt;question&gt;" in bk.label("en", "tip") and "<question>" not in bk.label("en", "tip")
    assert "<@U1>" in bk.label("en", "question_from", user="<@U1>")  # values passed in are already mrkdwn


def test_huge_answer_is_trimmed_within_every_slack_limit():
    huge_title = "T" * 500
    hits = [make_hit(i, size=400, title=huge_title) for i in range(3)]
    codes = [CodeOut(code=f"MIE04E{i:06X}", name="n" * 300, group="g", meaning="m" * 3000, entry=None) for i in range(40)]
    answer = Answer(answered=True, lang="en", confidence=0.9, results=hits, error_codes=codes, notices=["n" * 5000] * 30)
    rendered = views.render_answer(answer, fp="c" * 64, share_value={"k": "k", "q": "q" * 5000})
    assert_within_limits(rendered)
    assert rendered.blocks[-1]["type"] == "actions", "buttons survive trimming"
    details = views.render_details(answer)
    assert_within_limits(details)
    notes = [e["text"] for b in details.blocks if b["type"] == "context" for e in b["elements"]]
    assert any("trimmed to fit Slack's limits" in n for n in notes)
    assert details.blocks[0]["text"]["text"].endswith("…")


def test_single_enormous_command_is_clipped_with_closed_fence():
    hit = make_hit(0).model_copy(update={
        "command_details": [CommandOut(run="x" * 10000, template="x", kind="shell", explain="big")],
        "commands": ["x" * 10000],
    })
    rendered = views.render_details(Answer(answered=True, lang="zh", confidence=1.0, results=[hit]))
    assert_within_limits(rendered)
    sections = [b["text"]["text"] for b in rendered.blocks if b["type"] == "section"]
    assert any(s.endswith("…\n```") for s in sections)
    notes = [e["text"] for b in rendered.blocks if b["type"] == "context" for e in b["elements"]]
    assert any("已按 Slack 限制截断" in n for n in notes)


def test_usage_and_error_messages():
    usage = bk.render_usage("en")
    assert "/mindie-help" in usage.text and usage.blocks[0]["type"] == "section"
    err = bk.render_error("abc123", "zh")
    assert "abc123" in err.text and "抱歉" in err.text


def test_button_value_is_capped():
    value = bk.button_value({"k": "x", "q": "é" * 5000})
    assert len(value) <= 2000
    assert json.loads(value)["k"] == "x"
