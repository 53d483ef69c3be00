"""Entries marked `triage` recognise a symptom many causes share (an AI CPU exception, a collective that timed out,
HCCL init's `error code is N`): on a pasted report they are shown as the recognised error's first steps, never as
the diagnosis; a typed question about the error is answered as usual."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from bot.render.text import render_text

AICPU_PASTE = (
    'Traceback (most recent call last):\n'
    '  File "infer.py", line 31, in <module>\n'
    '    out = model.generate(**inputs).cpu()\n'
    'RuntimeError: ACL stream synchronize failed, error code:507018\n'
    '[ERROR] RUNTIME(1234,python):2025-03-01-10:00:00.000.000 [aicpu exception] Aicpu kernel execute failed\n'
)


def _triage_ids(engine) -> list[str]:
    return [e.id for e in engine.entries if e.triage]


def _triage_reply(engine, paste: str, entry_id: str):
    """The paste gets no answer, only the triage of `entry_id`; returns that recognised entry."""
    answer = engine.answer(paste)
    assert not answer.answered
    assert answer.recognised is not None and answer.recognised.id == entry_id
    return answer.recognised


def test_the_corpus_marks_the_symptom_entries_and_only_those(engine):
    ids = set(_triage_ids(engine))
    assert {"aicore-vector-exception", "aicpu-exception-507018", "hccl-comm-init-failed", "stream-sync-timeout-507048"} <= ids
    # Entries that name a specific cause are diagnoses, not triage.
    assert not ids & {"npu-out-of-memory", "socket-bind-failed", "hccl-port-conflict", "set-visible-device-invalid-device"}


def test_a_pasted_symptom_is_recognised_but_not_answered_as_a_diagnosis(engine):
    answer = engine.answer(AICPU_PASTE)
    assert not answer.answered and answer.results == []
    assert answer.confidence < engine.settings.threshold
    assert answer.recognised is not None and answer.recognised.id == "aicpu-exception-507018"
    assert answer.recognised.fix_steps and answer.recognised.matched_lines  # its first steps, and the line it knew
    assert any(c.code == "507018" for c in answer.error_codes)
    contract = answer.contract()
    assert contract["answered"] is False and contract["recognised"]["id"] == "aicpu-exception-507018"
    assert contract["recognised"]["commands"] and contract["recognised"]["matched"]


def test_a_typed_question_about_the_same_error_is_answered(engine):
    answer = engine.answer("what does error 507018 aicpu exception mean?")
    assert answer.answered and answer.results[0].id == "aicpu-exception-507018"
    assert answer.recognised is None


def test_a_specific_cause_next_to_a_symptom_still_answers(engine):
    """The symptom (a stream sync failure) is capped; the line that names the cause (out of memory) answers."""
    paste = ("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; "
             "58.10 GiB already allocated; 0 bytes free)\n" + AICPU_PASTE)
    answer = engine.answer(paste)
    assert answer.answered and answer.results[0].id == "npu-out-of-memory"
    assert all(not engine.entries[engine.position[h.id]].triage or h.confidence < engine.settings.threshold
               for h in answer.results)


@pytest.mark.parametrize("entry_id", ["aicore-vector-exception", "hccl-exec-timeout-ei0002", "hccl-comm-init-failed"])
def test_real_examples_of_a_triage_entry_are_never_answered_by_it(engine, entry_id: str):
    """The entry's own real logs, pasted: a more specific entry may answer, but the triage entry never leads an
    answer; where its signature knows a line, it is shown as the recognised error. (A single pasted line in which no
    root error is found reads like a typed question and is answered; these entries' examples are multi-line.)"""
    entry = engine.entries[engine.position[entry_id]]
    assert entry.triage and entry.real_examples
    recognised = 0
    for example in entry.real_examples:
        answer = engine.answer(example.log)
        if answer.answered:
            assert not engine.entries[engine.position[answer.results[0].id]].triage, example.url
        elif answer.recognised is not None:
            assert engine.entries[engine.position[answer.recognised.id]].triage, example.url
            recognised += answer.recognised.id == entry_id
    assert recognised >= 1


@pytest.mark.parametrize("lang, title, note", [
    ("en", "Recognised, cause not determined:", "not a fix"),
    ("zh", "已识别报错，但无法确定原因", "不是修复方法"),
])
def test_the_terminal_reply_says_it_is_a_triage(engine, lang: str, title: str, note: str):
    answer = engine.answer(AICPU_PASTE, lang=lang)
    console = Console(record=True, width=200)
    render_text(answer, console)
    out = console.export_text()
    assert title in out and note in out
    assert "export ASCEND_LAUNCH_BLOCKING=1" in out.splitlines()  # a command on a line of its own
    assert "L5:" in out  # the line it recognised


def test_the_json_of_a_recognised_symptom_has_no_results(engine):
    data = json.loads(json.dumps(engine.answer(AICPU_PASTE).contract()))
    assert data["results"] == [] and data["recognised"]["title"]


def test_a_typed_question_is_answered_at_the_question_threshold(engine, engine_settings):
    """A typed question has only its words: it is answered from MINDIE_HELP_QUESTION_THRESHOLD (0.40), under the
    paste threshold; with the question threshold raised to the paste threshold it is not."""
    from bot.engine.engine import Engine

    question = "确定性计算具体指的是什么？"
    answer = engine.answer(question)
    assert engine.settings.question_threshold <= answer.confidence < engine.settings.threshold  # the band in between
    assert answer.answered and answer.results[0].id == "deterministic-inference"
    strict = Engine(engine.corpus, engine_settings.model_copy(update={"question_threshold": engine_settings.threshold}),
                    engine.dense)
    assert not strict.answer(question).answered


def test_an_aclnn_shape_check_is_triage_but_a_named_dtype_is_answered(engine):
    """EZ1001 / 161002 only says an operator refused its inputs; when the check names a dtype (even on the next line
    of a broken paste) the dtype entry is the answer."""
    shape = ("RuntimeError: addmm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:112 NPU function error: "
             "call aclnnAddmm failed, error code is 161002\n"
             "[ERROR] 2025-12-23-12:56:15 (PID:1, Device:0, RankID:-1) ERR00100 PTA call acl api failed.\n"
             "[PID: 1] 2025-12-23-12:56:15.164.100 AclNN_Parameter_Error(EZ1001): The k-axis of the two inputs are different.\n")
    _triage_reply(engine, shape, "aclnn-parameter-check-ez1001")
    dtype = ("aclnnQuantMatmulWeightNz failed, error code is 161002\n"
             "AclNN_Parameter_Error(EZ1001):\n"
             "Tensor scale not implemented for DT_FLOAT16,\n"
             "should be in dtype support list\n"
             "[DT_UINT64, DT_BFLOAT16, DT_INT64, DT_FLOAT].\n")
    answer = engine.answer(dtype)
    assert answer.answered and answer.results[0].id == "aclnn-dtype-not-implemented"


def test_numpy2_removed_aliases_point_at_numpy_below_2(engine):
    answer = engine.answer("import torch_npu\nAttributeError: `np.float_` was removed in the NumPy 2.0 release. "
                           "Use `np.float64` instead.\n")
    assert answer.answered and answer.results[0].id == "numpy2-abi-incompatible"
    assert any("numpy<2" in c for c in answer.results[0].commands)


def test_faq_top1_counts_the_entry_a_triage_reply_leads_with_and_says_how_many(engine):
    from bot.evaluation import LabelledQuery, evaluate_retriever

    queries = [LabelledQuery(id="t1", kind="log", query=AICPU_PASTE, expected=["aicpu-exception-507018"]),
               LabelledQuery(id="t2", kind="log", query=AICPU_PASTE, expected=["npu-out-of-memory"])]
    row = evaluate_retriever(engine, queries, "hybrid")
    assert row["top1"] == 0.5 and row["top1_triage"] == 0.5  # the recognised symptom is the entry shown
    assert row["wrongly_abstained"] == 1.0  # yet it is no answer


def test_a_failed_source_build_is_triage_and_a_named_cause_still_answers(engine):
    tail = ("gmake[1]: *** [CMakeFiles/Makefile2:344: CMakeFiles/vllm_ascend_C.dir/rule] Error 2\n"
            "gmake: *** [Makefile:286: vllm_ascend_C] Error 2\n"
            "subprocess.CalledProcessError: Command '['cmake', '--build', '.', '-j=192', '--target=vllm_ascend_C']' "
            "returned non-zero exit status 2.\n")
    recognised = _triage_reply(engine, tail, "vllm-ascend-source-build-failed")
    assert any("--no-build-isolation" in c for c in recognised.commands)
    named = engine.answer("csrc/kernels/pos_encoding_kernels.cpp:30:10: fatal error: "
                          "'inner_interface/inner_kernel_operator_intf.h' file not found\n" + tail)
    assert named.answered and named.results[0].id == "vllm-ascend-kernel-build-cann-mismatch"
