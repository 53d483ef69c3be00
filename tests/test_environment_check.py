"""The environment check: verdicts against the compatibility table, observations from npu-smi, and the Environment
section in every answer (text, JSON, Slack blocks)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from bot.corpus.loader import load_corpus
from bot.environment.checker import check_environment
from bot.render.text import render_text
from bot.slack import answer_view as views
from bot.slack import blocks as bk

CORPUS = Path(__file__).resolve().parent.parent / "corpus"

DATA = Path(__file__).parent / "data" / "env"


@pytest.fixture(scope="module")
def table():
    return load_corpus(CORPUS).compat


def verdicts(report) -> dict[tuple[str, str], str]:
    return {c.pair: c.verdict for c in report.checks}


def test_a_real_paste_with_a_pre_release_torch_npu_is_flagged(table):
    report = check_environment((DATA / "pip-list-torch-vllm.txt").read_text(), table)
    flagged = next(c for c in report.checks if c.pair == ("vllm", "torch_npu"))
    assert flagged.verdict == "warning" and flagged.values == ("0.11.0", "2.7.1rc1")
    assert flagged.fix == "pip install torch-npu==2.7.1.post1"
    assert "vllm-ascend" in flagged.source and report.checks[0] is flagged  # problems come first


@pytest.mark.parametrize("paste, pair, fix", [
    ("torch 2.7.0\ntorch_npu 2.5.1\n", ("torch", "torch_npu"), "pip install torch==2.5.1"),
    ("MindIE: 2.1.RC1\nCANN: 8.0.RC3\n", ("mindie", "cann"), "install CANN 8.2.RC1"),
    ("torch: 2.2.0\nPython 3.11.4\n", ("torch", "python"), "use Python 3.10"),
    ("CANN: 8.5.0\nnpu-smi 24.1.rc3   Version: 24.1.rc3\n", ("cann", "driver"), "upgrade the driver and firmware to HDK 25.0.rc1"),
    ("vllm-ascend: 0.9.1\nvllm: 0.9.2\n", ("vllm_ascend", "vllm"), "pip install vllm==0.9.1"),
    ("MindIE: 2.1.RC1\ndriver: 23.0.3\n", ("mindie", "driver"), "upgrade the Ascend HDK (driver and firmware) to 24.1.rc2 or later"),
    ("torch_npu: 2.9.0\nCANN: 8.3.RC1\n", ("torch_npu", "cann"), "install CANN 8.5.0"),
])
def test_mismatches_name_the_pair_and_what_to_install(table, paste: str, pair: tuple[str, str], fix: str):
    report = check_environment(paste, table)
    check = next(c for c in report.checks if c.pair == pair)
    assert check.verdict == "mismatch", check
    assert check.fix.startswith(fix) and check.fix_zh and check.message_zh
    assert report.verdict == "mismatch" and report.checks[0].verdict == "mismatch"


def test_fitting_stacks_are_ok(table):
    report = check_environment("MindIE 2.1.RC1\nCANN 8.2.RC1\ntorch 2.1.0\ntorch_npu 2.1.0.post13\nnpu-smi 25.2.0 Version: 25.2.0\n", table)
    assert set(verdicts(report).values()) == {"ok"}
    assert ("mindie", "cann") in verdicts(report) and ("cann", "driver") in verdicts(report)


def test_what_the_table_does_not_cover_is_unverified_never_a_mismatch(table):
    report = check_environment("MindIE: 2.0.RC2\nvllm-ascend: 0.19.1rc2.dev1908\ntorch_npu: 2.6.0.post99\nCANN: 8.2.RC1\n", table)
    assert report.checks and {c.verdict for c in report.checks} == {"unverified"}


def test_a_full_card_and_its_holder_are_observed(table):
    paste = (DATA / "npu-smi-a3-processes.txt").read_text().replace("31877/ 65536", "65203/ 65536")
    report = check_environment(paste, table)
    full = next(o for o in report.observations if o.kind == "hbm-full")
    assert full.severity == "warning" and "333 MB free" in full.message and "NPU 7 chip 1" in full.message
    held = next(o for o in report.observations if o.kind == "card-held")
    assert "PID 632268" in held.message


def test_an_unhealthy_card_and_a_failing_npu_smi_are_errors(table):
    paste = (DATA / "npu-smi-910b2-25.2.0.txt").read_text().replace("| 1     910B2               | OK ", "| 1     910B2               | Warning ")
    report = check_environment(paste, table)
    assert [o.kind for o in report.observations if o.severity == "error"] == ["health"]
    report = check_environment((DATA / "npu-smi-dcmi-8005.txt").read_text(), table)
    assert [o.kind for o in report.observations if o.severity == "error"] == ["npu-smi-error"]


def test_a_310p_asked_for_bf16_and_an_unsupported_chip(table):
    report = check_environment((DATA / "npu-smi-310p3.txt").read_text() + "\nvllm serve Qwen --dtype bfloat16\n", table)
    assert report.family.endswith("310P")
    assert any(o.kind == "chip-feature" and "float16" in o.message for o in report.observations)
    report = check_environment("NPU type: Ascend910ProB\nMindIE: 2.1.RC1\n", table)
    assert verdicts(report)[("mindie", "chip")] == "mismatch"


def test_missing_facts_come_with_the_commands_that_collect_them(table):
    report = check_environment("torch_npu 2.5.1\n", table)
    assert "cann" in report.missing and "driver" in report.missing
    runs = [c.run for c in report.commands]
    assert "npu-smi info" in runs and any("ascend_toolkit_install.info" in r for r in runs)


def test_no_environment_facts_no_section(table):
    assert check_environment("Socket bind failed, ip 127.0.0.1 port 1025", table) is None
    assert check_environment("", table) is None


def test_a_pure_npu_smi_dump_is_environment_only(table):
    assert check_environment((DATA / "npu-smi-910b2-25.2.0.txt").read_text(), table).only
    assert not check_environment((DATA / "inline-versions-version-cfg.txt").read_text(), table).only


# ---- in answers ------------------------------------------------------------------------------------

MISMATCH_PASTE = """RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB
pip list | grep torch
torch                 2.7.0
torch_npu             2.5.1.post1
"""


def _text(answer) -> str:
    buffer = io.StringIO()
    render_text(answer, Console(file=buffer, width=200, highlight=False, soft_wrap=True))
    return buffer.getvalue()


def test_an_answer_with_an_environment_paste_carries_the_section_everywhere(engine):
    answer = engine.answer(MISMATCH_PASTE)
    assert answer.answered and answer.results[0].id == "npu-out-of-memory"
    env = answer.environment
    assert env is not None and not env.only and env.checks[0].pair == ("torch", "torch_npu")
    # JSON
    payload = answer.contract()
    assert payload["environment"]["checks"][0]["verdict"] == "mismatch"
    assert payload["environment"]["checks"][0]["fix"] == "pip install torch==2.5.1"
    json.dumps(payload)
    # terminal
    text = _text(answer)
    assert "Environment" in text and "✗ torch 2.7.0 ↔ torch_npu 2.5.1.post1" in text and "pip install torch==2.5.1" in text
    assert text.index("Environment") > text.index("Cause")
    # Slack
    rendered = views.render_answer(answer, fp="f" * 16)  # the first message names the mismatch and its fix
    blocks = json.dumps(rendered.blocks, ensure_ascii=False)
    assert "npu-out-of-memory" in blocks and "torch 2.7.0 ↔ torch_npu 2.5.1.post1" in blocks and "pip install torch==2.5.1" in blocks
    assert rendered.blocks[-1]["type"] == "actions" and len(rendered.blocks) <= bk.MAX_BLOCKS
    details = json.dumps(views.render_details(answer).blocks, ensure_ascii=False)  # the whole check is in the details
    assert "*Environment*" in details and "pip install torch==2.5.1" in details


def test_an_environment_dump_is_answered_by_the_section_alone(engine):
    paste = (DATA / "npu-smi-910b2c-and-toolkit-info.txt").read_text()
    assert engine.answer(paste).lang == "zh"  # the person wrote "A+X的A2" and "cann包版本：" around the dump
    answer = engine.answer(paste, lang="en")
    assert not answer.answered and answer.environment.only
    text = _text(answer)
    assert "Environment" in text and "Not recognised" not in text and "910B2C" in text
    rendered = views.render_answer(answer, fp="f" * 16, escalate_value={"t": None})
    blocks = json.dumps(rendered.blocks, ensure_ascii=False)
    assert "Environment" in blocks and bk.label("en", "not_recognised") not in blocks and bk.label("en", "no_match") not in blocks
    assert "910B2C" in rendered.text
    assert answer.contract()["environment"]["only"] is True


def test_a_one_line_question_naming_its_chip_is_not_an_environment_dump(engine, table):
    question = "用 FunASR 在 910B 上做语音识别，效率不如 CPU，有什么要注意的"
    env = check_environment(question, table)
    assert env is not None and not env.only  # the chip is still checked, as a section under the reply
    answer = engine.answer(question)
    assert not answer.answered and answer.family is not None and answer.family.id == "performance"
    assert "Not recognised" in _text(engine.answer(question, lang="en"))


def test_a_chinese_paste_gets_a_chinese_section(engine):
    answer = engine.answer("请问这个环境有没有问题？\nCANN版本：8.0.RC3\nMindIE版本：2.1.RC1\n驱动版本：24.1.rc2")
    assert answer.lang == "zh"
    text = _text(answer)
    assert "环境检查" in text and "必须配套 CANN 8.2.RC1" in text


def _realworld(case_id: str) -> str:
    path = Path(__file__).resolve().parent.parent / "eval" / "realworld.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["id"] == case_id:
            return case["query"]
    raise KeyError(case_id)


def test_real_reports_get_the_mismatch_in_their_paste_named(engine):
    # vllm-ascend issue 384: garbled output from vllm-ascend 0.7.3 on CANN 8.0.RC3 (the fix was another CANN)
    answer = engine.answer(_realworld("rw-a010"))
    check = next(c for c in answer.environment.checks if c.pair == ("vllm_ascend", "cann"))
    assert check.verdict == "mismatch" and check.values == ("0.7.3", "8.0.RC3") and check.fix == "install CANN 8.1.RC1"
    assert "vllm-ascend 0.7.3 ↔ CANN 8.0.RC3" in _text(answer)
    # "which torch should I install for vllm-ascend 0.9.0?": the release's torch and torch_npu are named
    answer = engine.answer(_realworld("rw-a016"))
    assert any(o.kind == "expected" and "torch 2.5.1, torch_npu 2.5.1" in o.message for o in answer.environment.observations)


@pytest.mark.parametrize(("question", "component", "version", "expected"), [
    ("which torch-npu version does vllm-ascend v0.9.1 need?", "vllm_ascend", "0.9.1",
     {"torch_npu": "2.5.1.post1", "torch": "2.5.1", "cann": "8.2.RC1", "vllm": "0.9.1"}),
    ("vllm-ascend 0.9.1 需要哪个版本的 torch_npu 和 CANN", "vllm_ascend", "0.9.1", {"torch_npu": "2.5.1.post1"}),
    ("MindIE 2.1.RC1 配套哪个 CANN 版本", "mindie", "2.1.RC1", {"cann": "8.2.RC1"}),
    ("CANN 8.2.RC1 要求的驱动版本是多少", "cann", "8.2.RC1", {"driver": ">= 24.1.rc2 (HDK 25.2.0)"}),
    ("torch_npu 2.5.1.post1 matches which torch?", "torch_npu", "2.5.1.post1", {"torch": "2.5.1"}),
])
def test_a_question_about_which_releases_go_together_gets_the_table_row(table, question, component, version, expected):
    report = check_environment(question, table)
    assert report is not None and [(r.component, r.version) for r in report.releases] == [(component, version)]
    parts = {p.component: p.value for p in report.releases[0].goes_with}
    assert expected.items() <= parts.items()
    assert report.releases[0].source.startswith("https://")
    assert report.missing == [] and report.commands == []  # a question, not a paste to collect more of


@pytest.mark.parametrize("text", [
    "vllm-ascend 0.9.1 fails with NPU out of memory",  # names a release, asks nothing about what fits it
    "is vllm-ascend 0.99.0 compatible with CANN 8.0?",  # a release the table does not list: no guess
    "which version of vllm-ascend should I use?",  # asks, but names no release
    "\n".join(["pip list", "vllm-ascend 0.9.1", "torch_npu 2.5.1.post1", "torch 2.5.1", "which version matches?"] + ["x"] * 10),
])
def test_no_table_row_without_a_compatibility_question_about_a_listed_release(table, text):
    report = check_environment(text, table)
    assert report is None or report.releases == []


def test_the_release_row_reaches_every_renderer(engine):
    answer = engine.answer("which torch-npu version does vllm-ascend v0.9.1 need?")
    assert answer.environment is not None and answer.environment.releases
    assert answer.contract()["environment"]["releases"][0]["goes_with"][3] == {"component": "torch_npu", "value": "2.5.1.post1"}
    line = "vllm-ascend 0.9.1 goes with vllm 0.9.1, CANN 8.2.RC1, torch 2.5.1, torch_npu 2.5.1.post1"
    assert line in _text(answer)
    rendered = views.render_answer(answer, fp="f" * 16)
    assert line in json.dumps(rendered.blocks, ensure_ascii=False) and "versioning_policy.md" in json.dumps(rendered.blocks)
    zh = engine.answer("MindIE 2.1.RC1 配套哪个 CANN 版本")
    assert "MindIE 2.1.RC1 的配套版本：CANN 8.2.RC1" in _text(zh)
    assert "MindIE 2.1.RC1 的配套版本：CANN 8.2.RC1" in json.dumps(views.render_answer(zh, fp="f" * 16).blocks, ensure_ascii=False)


def test_a_hostile_question_line_is_read_in_linear_time(table):
    import time
    started = time.perf_counter()
    check_environment("which version " + "vllm-ascend " * 20_000 + "?", table)
    check_environment("配套" + "CANN 8." * 50_000, table)
    assert time.perf_counter() - started < 5.0  # RE2: no backtracking, whatever the text
