"""Root-error reasoning on real logs: the cause, not its echoes, decides the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.corpus.schema import Aftermath, ScopeRule
from bot.engine.engine import CONSEQUENCE_CAP
from bot.engine.normalize import prepare
from bot.engine.root import RootFinder

LOGS = Path(__file__).parent / "data" / "real_logs"


def _root(engine, text: str):
    prepared = prepare(text)
    return engine.roots.analyse(prepared.lines, prepared.error_lines), prepared


def test_the_cause_quoted_inside_a_wrapper_is_the_root(engine):
    log = (LOGS / "qwen3-vl-moe-unsupported.log").read_text(encoding="utf-8")
    analysis, _ = _root(engine, log)
    assert analysis.root.line_no == 1  # the first ERROR line (0-based), not the profiling line before it
    assert analysis.root.cause.startswith("NotImplementedError: unsupported model type: qwen3_vl_moe")
    assert "Failed to get vocab size" in analysis.root.text  # shown to the user as the whole line


def test_a_signature_on_the_wrapper_alone_is_capped(engine):
    """tokenizer-vocab-size recognises the wrapper's words; the root cause it quotes is another problem."""
    log = (LOGS / "qwen3-vl-moe-unsupported.log").read_text(encoding="utf-8")
    prepared = prepare(log)
    ev = engine.evidence(prepared, {"signatures", "lexical", "dense"})
    position = engine.position["tokenizer-vocab-size"]
    assert ev.signatures[position] == pytest.approx(CONSEQUENCE_CAP)
    assert ev.consequence_only[position] == 1.0
    answer = engine.answer(log)
    assert not (answer.answered and answer.results[0].id == "tokenizer-vocab-size"), answer.results[0]
    assert answer.root.text.startswith("[2026-05-14 18:06:16.762]") and answer.root.line_no == 2


def test_aftermath_after_an_unrecognised_error_does_not_win(engine):
    log = "\n".join([
        "[2025-04-02 10:11:02] [ERROR] load config failed",
        "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 12 column 5 (char 301)",
        "TBE Subprocess[task_distribute] raise error[], main process disappeared!",
        "TBE Subprocess[task_distribute] raise error[], main process disappeared!",
    ])
    analysis, _ = _root(engine, log)
    assert analysis.root.line_no == 0
    assert {2, 3} <= analysis.consequences
    prepared = prepare(log)
    ev = engine.evidence(prepared, {"signatures", "lexical", "dense"})
    assert ev.signatures[engine.position["tbe-main-process-disappeared"]] == pytest.approx(CONSEQUENCE_CAP)
    answer = engine.answer(log)
    assert not (answer.answered and answer.results[0].id == "tbe-main-process-disappeared")


def test_aftermath_alone_still_gets_its_entry(engine):
    """With no earlier error to blame, the TBE entry is the best help there is."""
    answer = engine.answer("TBE Subprocess[task_distribute] raise error[], main process disappeared!")
    assert answer.answered and answer.results[0].id == "tbe-main-process-disappeared"


def test_a_cann_block_is_read_at_its_reason(engine):
    analysis, prepared = _root(engine, (LOGS / "hccl-bind-port-ej0003.log").read_text(encoding="utf-8"))
    assert "EJ0003" in analysis.root.text and "Failed to bind the IP port" in analysis.root.text
    assert "运行时报错" not in analysis.root.text  # the user's own sentence is not the error


def test_ray_prefixed_lines_and_the_reason_of_an_invalid_device(engine):
    analysis, _ = _root(engine, (LOGS / "ray-invalid-device-107001.log").read_text(encoding="utf-8"))
    assert "Set visible device failed, invalid device=1" in analysis.root.cause


def test_cann_inner_error_header_is_not_the_root(engine):
    analysis, _ = _root(engine, (LOGS / "eh9999-init-env.log").read_text(encoding="utf-8"))
    assert "init env failed" in analysis.root.text


def test_python_chain_root_is_the_first_exception():
    finder = RootFinder(None)
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/app.py", line 3, in <module>',
        "KeyError: 'qwen3'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/srv/app.py", line 9, in <module>',
        "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not recognize this architecture.",
    ]
    prepared = prepare("\n".join(lines))
    analysis = finder.analyse(prepared.lines, prepared.error_lines)
    assert analysis.root.text == "KeyError: 'qwen3'"


def test_frames_logged_at_error_level_are_not_the_root():
    """vLLM logs every traceback line with its ERROR prefix: the frame and the code line stay scaffolding."""
    prefix = "(Worker_DP0_TP7_EP7 pid=2112) ERROR 12-11 09:09:33 [multiproc_executor.py:822] "
    old_prefix = "(VllmWorkerProcess pid=1743) ERROR 03-25 12:50:16 multiproc_worker_utils.py:242] "
    lines = [
        "INFO 12-11 09:09:30 [model_runner_v1.py:3100] profiling run",
        prefix + "Traceback (most recent call last):",
        prefix + '  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 3240, in profile_run',
        prefix + "    hidden_states = hidden_states[logit_indices]",
        prefix + "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 7; 60.96 GiB total capacity)",
    ]
    prepared = prepare("\n".join(lines))
    analysis = RootFinder(None).analyse(prepared.lines, prepared.error_lines)
    assert analysis.root.line_no == 4
    assert analysis.root.text.endswith("60.96 GiB total capacity)")
    older = prepare("\n".join(line.replace(prefix, old_prefix) for line in lines))
    assert RootFinder(None).analyse(older.lines, older.error_lines).root.line_no == 4


def test_aftermath_patterns_come_from_the_corpus():
    finder = RootFinder(Aftermath(consequences=[ScopeRule(label="launcher", pattern="(?i)ChildFailedError")]))
    prepared = prepare("RuntimeError: HCCL init failed\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: boom")
    analysis = finder.analyse(prepared.lines, prepared.error_lines)
    assert analysis.consequences == {1}
    assert analysis.root.line_no == 0
