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
    """With no earlier error to blame, the TBE entry is the best help there is (a bare line, or a question quoting
    it, is read as a question)."""
    answer = engine.answer("TBE Subprocess[task_distribute] raise error[], main process disappeared!")
    assert answer.answered and answer.results[0].id == "tbe-main-process-disappeared"
    quoted = engine.answer("multi-node deepseek prints a flood of `TBE Subprocess[task_distribute] raise error[], main process disappeared!`, why?")
    assert quoted.answered and quoted.results[0].id == "tbe-main-process-disappeared"
    tagged = engine.answer("what does '[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!' mean?")
    assert tagged.answered and tagged.results[0].id == "tbe-main-process-disappeared"


def test_a_lone_see_root_cause_above_line_is_not_answered_from_prose(engine):
    """vLLM's "Engine core initialization failed. See root cause above" says nothing of the cause; read as a typed
    question, its words once picked an unrelated SGLang entry."""
    answer = engine.answer("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    assert not answer.answered
    assert any("paste the lines above it" in n for n in answer.notices)
    question = engine.answer("why does vllm say engine core initialization failed?")
    assert not any("paste the lines above it" in n for n in question.notices)


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


def test_a_cann_reason_line_is_the_error_itself_not_a_wrapper(engine):
    """"EI0006 ... Getting socket times out. Reason: ..." quotes its reason; the code before it is the error, so the
    entry that knows the code keeps its full signature and answers."""
    log = (LOGS / "ei0006-get-socket-timeout.log").read_text(encoding="utf-8")
    analysis, prepared = _root(engine, log)
    assert "EI0006" in analysis.root.text and analysis.root.line_no in analysis.reasoned
    ev = engine.evidence(prepared, {"signatures", "lexical", "dense"})
    assert ev.signatures[engine.position["hccl-connect-timeout-ei0006"]] == pytest.approx(1.0)
    answer = engine.answer(log)
    # EI0006 is recognised; its causes vary (a late peer, a wrong IP, TLS), so the entry is its triage, not the fix.
    assert not answer.answered and answer.recognised is not None and answer.recognised.id == "hccl-connect-timeout-ei0006"


def test_a_wrapper_line_still_counts_as_a_wrapper():
    """Only a "Reason:" makes a quoting line the error itself; "with exception:" stays a wrapper."""
    finder = RootFinder(None)
    lines = ["Failed to get vocab size from tokenizer wrapper with exception: NotImplementedError: unsupported model type: x"]
    prepared = prepare("\n".join(lines))
    analysis = finder.analyse(prepared.lines, prepared.error_lines)
    assert 0 in analysis.causes and 0 not in analysis.reasoned


def test_an_unrecognised_pasted_error_is_not_answered_from_prose(engine):
    """A real report whose HCCL error line (with the user's typos) no signature knows: the words are close to the HCCL
    init entry, but closeness is not recognition. The reply says so, quotes the root line, names the family and
    offers the entry as a closest topic."""
    log = (LOGS / "hccl-init-unrecognised.log").read_text(encoding="utf-8")
    answer = engine.answer(log)
    assert not answer.answered and answer.results == []
    assert answer.confidence < engine.settings.threshold
    assert any("no line of this paste matches an error the knowledge base knows" in n for n in answer.notices)
    assert answer.root is not None and "hcclCommInintRootConfig" in answer.root.text
    assert answer.family is not None and answer.family.id == "hccl" and answer.family.triage
    assert answer.candidates[0] == "hccl-comm-init-failed" and answer.suggestions
    # The nearest entry is offered whole, for the person to read, with its own (low) confidence.
    assert answer.closest is not None and answer.closest.id == "hccl-comm-init-failed"
    assert answer.closest.confidence < engine.settings.threshold and answer.closest.fix_steps
    assert answer.contract()["closest"]["id"] == "hccl-comm-init-failed"


def test_the_same_gate_leaves_a_recognised_error_and_a_typed_question_alone(engine):
    known = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity)\nrank 1 exits"
    answer = engine.answer(known)
    assert answer.answered and answer.results[0].id == "npu-out-of-memory"
    assert not any("no line of this paste" in n for n in answer.notices)
    # One typed line is matched on its words: on the FAQ-written sets that is right more than nine times in ten.
    typed = engine.answer("HCCL comm init failed when starting vllm-ascend on two nodes, how do I fix it?")
    assert typed.answered and engine.entries[engine.position[typed.results[0].id]].family == "hccl"
    assert not any("no line of this paste" in n for n in typed.notices)


@pytest.mark.parametrize("line, pasted", [
    ("RuntimeError: create_config HCCLUtils.cpp:140 HCCL function error", True),
    ("[2025-06-12 08:08:24.544+00:00] [12646] [server] [ERROR] [endpoint.cpp:45] : Failed to init engine", True),
    ("2025-04-08 18:07:20,444 ERROR worker.py:12 -- init failed", True),
    ("the service failed to start with EZ1001, why?", False),
    ("服务启动失败，报错 EE1001，怎么办", False),
    # a command-line tool's own error line is copied too
    ("docker: Error response from daemon: failed to create task for container: OCI runtime create failed", True),
    ("ERROR: Could not find a version that satisfies the requirement torch-npu==2.7.1.dev20250724", True),
    ("how do I fix an error: the service fails to start", False),
])
def test_a_root_line_knows_whether_it_was_pasted(line: str, pasted: bool):
    analysis = RootFinder(None).analyse([line], [0])
    assert analysis.root is not None and analysis.root.pasted is pasted


@pytest.mark.parametrize("paste, root", [
    ("When importing torch_npu, I encountered the following error:\nImportError: libhccl.so: cannot open shared object file: No such file or directory",
     "ImportError: libhccl.so"),
    ("[Bug]: v0.15.0rc1, server failed to start with mooncake connector\nImportError: ascend_transport.so: cannot open shared object file",
     "ImportError: ascend_transport.so"),
    ("报错如下：\n[ERROR] 2025-05-12 16:17:25 model_deploy_config.cpp:102 Failed to deploy",
     "[ERROR] 2025-05-12"),
    # A sentence that names the error itself stays the root: it is the user's words for the same line.
    ("在910b部署时会报错显示AssertionError: Invalid device id\nAssertionError: Invalid device id", "在910b部署"),
])
def test_a_sentence_around_the_paste_is_not_the_root(paste: str, root: str):
    prepared = prepare(paste)
    analysis = RootFinder(None).analyse(prepared.lines, prepared.error_lines)
    assert analysis.root is not None and analysis.root.text.startswith(root), analysis.root


def test_a_traceback_flattened_onto_one_line_is_read_from_its_exception():
    """Pasted from a web page, a traceback can lose its newlines: the line opens with code ("return ...") but the
    exception in it is the error."""
    line = ("return tensor.normal_(0, std) RuntimeError: Run:OpParamMaker.cpp:128 NPU error,NPU error code is:100000 "
            "EZ9999: Inner Error! EZ9999 Kernel task happen error, retCode=0x2a, [aicpu exception].")
    analysis = RootFinder(None).analyse([line], [0])
    assert analysis.root is not None and analysis.root.line_no == 0
    # A frame line with no exception in it stays scaffolding.
    assert RootFinder(None).analyse(["    return self._call_impl(*args, **kwargs) failed"], [0]).root is None


def test_aftermath_that_quotes_its_cause_is_read_at_the_cause(engine):
    """"HCCL watchdog thread terminated with exception: ... EI0013 ..." is a consequence line, but the cause it quotes
    is the error; the line is read as a wrapper around it, not skipped."""
    lines = ["[rank11]:[E313 06:55:06.502205450 compiler_depend.ts:1795] To avoid data inconsistency, we are taking the entire process down.",
             "[rank11]:[E313 06:55:06.502248200 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread terminated with exception: "
             "[PID: 335] 2026-03-13-06:55:06.896.485 Execution_Error_ROCE_CQE(EI0013): An error CQE occurred during operator execution."]
    prepared = prepare("\n".join(lines))
    analysis = engine.roots.analyse(prepared.lines, prepared.error_lines)
    assert engine.roots.is_consequence(lines[1])  # the aftermath rule does see it
    assert analysis.root is not None and analysis.root.line_no == 1 and "EI0013" in analysis.root.cause
    assert not analysis.root.cause.startswith("[rank11]")


UNKNOWN_ENV = "(APIServer pid=1) WARNING 06-12 19:52:19 [envs.py:1710] Unknown vLLM environment variable detected: VLLM_ASCEND_ENABLE_NZ\n"


def test_a_harmless_warning_alone_is_explained_but_never_outranks_a_real_error(engine):
    alone = engine.answer(UNKNOWN_ENV)
    assert alone.answered and alone.results[0].id == "vllm-unknown-env-variable-warning"
    assert any("VLLM_ASCEND_ENABLE_NZ" in c for c in alone.results[0].commands)  # the variable from the line
    with_error = engine.answer(UNKNOWN_ENV + "(EngineCore pid=136) ERROR 06-12 19:52:19 [core.py:1138] RuntimeError: "
                               "call aclnnFooBarBaz failed, error code is 361001\n")
    assert all(h.id != "vllm-unknown-env-variable-warning" for h in with_error.results)
