"""Normalisation of whatever users paste."""

from __future__ import annotations

import random
import pytest

from bot.engine.normalize import clean, detect_lang, focus_line_indices, looks_like_log, mask, prepare


def test_slack_markup_and_escapes_are_undone():
    raw = (
        "<@U123ABC> <!here> see <#C024BE7LR|mindie-support>: ```python\nRuntimeError: x &lt;y&gt; &amp; z\n```"
        " and `lsof -i :1025` at <https://example.com/doc|the doc> or <https://example.com/raw> <!subteam^S012|@oncall>"
    )
    text = clean(raw)
    assert "<@" not in text and "<!" not in text and "```" not in text and "`" not in text
    assert "#mindie-support" in text
    assert "RuntimeError: x <y> & z" in text
    assert "lsof -i :1025" in text
    assert "the doc" in text and "https://example.com/raw" in text


def test_ansi_colours_and_crlf_are_removed():
    raw = "\x1b[31m[ERROR]\x1b[0m Socket bind failed\r\n\x1b[1;32mINFO\x1b[0m ok\rlast"
    prepared = prepare(raw)
    assert prepared.lines == ["[ERROR] Socket bind failed", "INFO ok", "last"]


def test_error_lines_include_chinese_words_and_codes():
    lines = ["INFO start", "服务启动失败", "EZ1001 dimnum wrong", "[x] MIE05E01000A happened", "INFO done", "加载报错了"]
    prepared = prepare("\n".join(lines))
    assert prepared.error_lines == [1, 2, 3, 5]


def test_focus_keeps_first_error_and_final_exception():
    log = ["[INFO] a"] + [f"[ERROR] step {i} failed" for i in range(30)] + [
        "Traceback (most recent call last):", '  File "x.py", line 1, in <module>', "ValueError: linear type not matched"]
    prepared = prepare("\n".join(log))
    chosen = focus_line_indices(prepared)
    assert chosen[0] == 1  # the first error
    assert len(log) - 1 in chosen  # the final exception line
    assert len(chosen) <= 12


def test_masking_hides_variable_parts():
    masked = mask("2025-03-11 10:22:41.502 pid 7321 at 0x7f3a2c addr 10.0.0.12:8080 /usr/local/lib/x.so size 2.00 GiB")
    for gone in ("2025", "7321", "0x7f3a2c", "10.0.0.12", "/usr/local/lib", "2.00"):
        assert gone not in masked
    assert "GiB" in masked and "ip" in masked and "path" in masked


def test_huge_input_keeps_its_head_and_tail_with_a_notice():
    text = "FIRST ERROR\n" + "x" * 3_000_000 + "\nFINAL EXCEPTION"
    prepared = prepare(text, max_bytes=1_000_000)
    assert len(prepared.text.encode()) <= 1_000_100
    assert prepared.text.startswith("FIRST ERROR") and prepared.text.endswith("FINAL EXCEPTION")
    assert "bytes omitted by mindie-help" in prepared.text
    assert prepared.truncated_bytes == len(text.encode()) - len(prepared.text.encode())
    assert any("only its first and last 400,000 bytes and the error lines between" in n for n in prepared.notices)


def test_streams_are_read_in_bounded_memory():
    import io

    from bot.engine.normalize import read_sampled, sample

    for size in (0, 10, 999, 1000, 1001, 5000, 123_457):
        data = bytes(i % 251 for i in range(size))
        kept, total = read_sampled(io.BytesIO(data), 1000, chunk=97)
        assert total == size
        if size > 1000:
            assert kept.startswith(data[:400]) and kept.endswith(data[-400:])
            assert sample(data, 1000).startswith(data[:400])
        else:
            assert kept == data == sample(data, 1000)


def test_binary_input_is_handled():
    prepared = prepare(bytes(range(256)) * 100)
    assert prepared.was_binary
    assert any("binary" in n for n in prepared.notices)


def test_binary_input_keeps_only_its_readable_strings():
    junk = random.Random(7).randbytes(200_000)
    # a crash log padded with NULs, with random bytes around it: the log lines survive, the junk does not
    data = junk + b"\n[ERROR] Socket bind failed \xe7\xab\xaf\xe5\x8f\xa3\n" + b"\x00" * 64 + junk
    prepared = prepare(data)
    assert prepared.was_binary
    assert "[ERROR] Socket bind failed 端口" in prepared.lines
    assert all(ch.isascii() or "\u3000" <= ch for ch in prepared.text)  # no stray Latin letters from junk


def test_a_binary_paste_is_answered_in_english_unless_its_strings_are_chinese():
    # random bytes decode to a stray run of Chinese characters now and then; that run alone must not choose Chinese
    chance_runs = [seed for seed in range(40) if "zh" in {detect_lang(prepare(random.Random(seed).randbytes(100_000)).lines)}]
    assert chance_runs, "the seeds no longer produce a readable Chinese run; pick others"
    for seed in chance_runs:
        assert prepare(random.Random(seed).randbytes(100_000)).lang == "en"
    coloured = prepare("\x1b[31m错误：服务启动失败\x1b[0m".encode() + b"\x00")
    assert coloured.was_binary and coloured.lang == "zh"


def test_empty_and_whitespace_input():
    for raw in ("", "   \n\t ", b"", "<@U123>"):
        assert prepare(raw).text == ""


def test_language_follows_the_users_words():
    assert detect_lang(["部署的时候报 Socket bind failed 是怎么回事"]) == "zh"
    assert detect_lang(["how do I fix Socket bind failed"]) == "en"
    assert detect_lang(["帮忙看下这个报错", "[2025-01-01 10:00:00] [ERROR] Socket bind failed on port 1025 because address in use"]) == "zh"
    assert detect_lang(["[2025-01-01 10:00:00] [ERROR] 服务启动失败，端口被占用"]) == "zh"
    assert detect_lang(["[2025-01-01 10:00:00] [ERROR] 服务 Socket bind failed on port 1025"]) == "en"


def test_looks_like_log():
    assert looks_like_log("```\nsome output\n```")
    assert looks_like_log('Traceback (most recent call last):\n  File "a.py", line 1\nKeyError: 1')
    assert looks_like_log("[2025-01-01 10:00:00] INFO a\n[2025-01-01 10:00:01] INFO b\n[2025-01-01 10:00:02] ERROR c")
    assert not looks_like_log("thanks, that fixed it!")
    assert not looks_like_log("how do I set GLOO_SOCKET_IFNAME?")


@pytest.mark.parametrize(
    ("pasted", "line_no"),
    [
        ("```[ERROR] Socket bind failed, ip 127.0.0.1 port 1025\nnext```", 1),  # how Slack sends a code block
        ("see this\n```[ERROR] Socket bind failed, ip 127.0.0.1 port 1025```", 2),
        ("```\n[ERROR] Socket bind failed, ip 127.0.0.1 port 1025\n```", 2),  # the fence line is a line
        ("```log\n[ERROR] Socket bind failed, ip 127.0.0.1 port 1025\n```", 2),
    ],
)
def test_quoted_line_numbers_are_the_users_with_fences(pasted: str, line_no: int) -> None:
    lines = prepare(pasted).lines  # what the engine's quoted line numbers count
    assert lines[line_no - 1].startswith("[ERROR] Socket bind failed")


def test_a_glued_fence_keeps_the_first_word() -> None:
    assert prepare("```RuntimeError: NPU out of memory```").text.startswith("RuntimeError: NPU out of memory")
