"""Triage families: the error lines name the family first; for a not-recognised paste whose error lines name
none, the person's own words ("310P 不支持", "返回乱码") do, and another stack's paste gets none."""

from __future__ import annotations

import pytest

from bot.corpus.loader import load_corpus
from bot.engine.families import FamilyDetector
from bot.settings import Settings


@pytest.fixture(scope="module")
def detector() -> FamilyDetector:
    return FamilyDetector(load_corpus(Settings().corpus_dir).families)


@pytest.mark.parametrize(
    ("words", "family"),
    [
        ("我们用的是 Atlas 300I Duo，能支持 W8A8 的 MoE 模型吗", "hardware-support"),
        ("does vllm-ascend support the Orange Pi AI Pro board?", "hardware-support"),
        ("部署以后调用接口返回乱码，中英文夹杂", "precision"),
        ("NPU 上推理速度比 CPU 还慢，是哪里没配对", "performance"),
        ("启动时 device_id 设成 3 不生效，进程还是跑在 0 卡上", "device"),
        ("pip install 之后 torch 被替换了，vllm 和 vllm-ascend 依赖冲突", "version-mismatch"),
        ("every request with an image kills the worker: OOM on the second card", "npu-memory"),
        ("does the latest sglang image support DeepSeek V4 yet?", "model-support"),
        ("torch.npu.is_available() returns False when the job runs under ray job submit", "device"),
        ("qwen2.5-72b 在 910B 上推理结果不符合预期，同样的配置 qwen2-72b 正常", "precision"),
        ("单卡训练正常，换成多卡就报错 RuntimeError", "hccl"),
        ("[Installation]: failed to build the custom kernels from source", "python-env"),
        ("两台机器用 vllm-ascend 部署 Qwen3-235B，实例一直起不来", "model-support"),
        ("在双机 800I A2 上用 DP4 TP4 拉起模型，一直卡住拉不起来", "hccl"),
        ("two nodes with 8 NPUs each: the server is stuck at start-up", "hccl"),
        ("7B 的模型只会回答感叹号，3B 的模型一切正常", "precision"),
        ("升级到 0.13.0 之后性能不如 0.7.3 版本", "performance"),
        ("performance regression after upgrading vllm-ascend", "performance"),
        ("华为昇腾 NPU310P3支持吗", "hardware-support"),
        ("请问支不支持910b4", "hardware-support"),
        ("funasr支持昇腾npu吗？", "model-support"),
        ("910B4四卡推理Qwen3-32B失败，报错显示HCCL API调用失败", "hccl"),
        ("Facing Timeout in Multi-Node Running of Deepseek", "hccl"),
        ("bge-reranker-v2-m3 fails with vllm-ascend 0.22.0 and works with 0.16.0", "version-mismatch"),
        ("升级到 0.11.0 之后启动就报错了", "version-mismatch"),
        ("[New Model]: Kimi-VL models are already supported on vllm, but I cannot run them directly", "model-support"),
        ("ascend 310推理是否适配，后续是否有适配计划？", "hardware-support"),
        ("模型能够在300i duo上启动，curl测试就崩掉了", "hardware-support"),
        ("the server crashes on the first request on an Atlas 300I Duo", "hardware-support"),
        ("[Feature]: Is GLM5.1 supported now?", "model-support"),
        ("请问华为昇腾卡可否用来运行MinerU推理加速呢", "model-support"),
        ("用 lmdeploy 的昇腾镜像起容器后，容器里看不到 NPU", "device"),
        ("llama-box --list-devices cannot show the NPU devices", "device"),
    ],
)
def test_the_persons_own_words_name_the_family(detector: FamilyDetector, words: str, family: str) -> None:
    found = detector.from_prose(["Environment: CANN 8.1.RC1, torch_npu 2.5.1", words])
    assert found is not None and found.id == family


def test_words_about_nothing_in_particular_name_no_family(detector: FamilyDetector) -> None:
    assert detector.from_prose(["hi all", "can someone look at my deployment when they have a minute?"]) is None


@pytest.mark.parametrize(
    ("question", "family"),
    [
        ("用 FunASR 在 910B 上做语音识别，效率不如 CPU，有什么要注意的", "performance"),
        ("does the Atlas 300I Pro support LoRA hot swapping in MindIE?", "hardware-support"),
        ("这个 Fun-ASR-Nano 模型在昇腾上跑不起来，请问是否支持？", "model-support"),
    ],
)
def test_a_not_recognised_question_gets_the_family_of_its_words(engine, question: str, family: str) -> None:
    answer = engine.answer(question)
    assert not answer.answered
    assert answer.family is not None and answer.family.id == family and answer.family.triage


def test_the_error_lines_name_the_family_before_the_words(engine) -> None:
    answer = engine.answer(
        "training output is garbled after a while, then it stops:\n"
        "[ERROR] HCCL(1234,python):2025-01-01-10:00:00.000.000 [hccl_comm.cc:88] EI9999: HcclAllReduce failed, "
        "an unusual internal fault\n"
    )
    assert not answer.answered
    assert answer.family is not None and answer.family.id == "hccl"


def test_another_stacks_paste_gets_no_family(engine) -> None:
    answer = engine.answer("torch.OutOfMemoryError: CUDA out of memory on my RTX 4090, inference is slow and output garbled")
    assert not answer.answered and answer.family is None


@pytest.mark.parametrize("text", [
    "910B上不使用镜像，vllm和vllm-ascend以及CANN版本需要多少可以正常运行啊",
    "which versions of vllm-ascend and CANN work together on 910B?",
])
def test_a_question_about_which_releases_go_together_is_a_version_question(engine, text: str):
    assert engine.families.from_prose([text]).id == "version-mismatch"


@pytest.mark.parametrize(
    ("line", "family"),
    [
        # built against another release of what it links: a version mismatch, whatever the exception type says
        ("OSError: /usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so: undefined symbol: _ZN3Mki2DlC1E", "version-mismatch"),
        ("ImportError: ascend_extension.so: undefined symbol: _ZN7c10_npu3acl20AclrtPeekAtLastErrorE", "version-mismatch"),
        ("AttributeError: module 'torch_npu.npu' has no attribute 'profile'", "version-mismatch"),  # an API that moved
        ("TypeError: __init__() got an unexpected keyword argument 'box_type'", "version-mismatch"),
        # a name, submodule or attribute the caller was written against is gone from the installed release
        ("ImportError: cannot import name 'HcclOpModeSetFeature' from 'mindspeed.features_manager' (/x/__init__.py)", "version-mismatch"),
        ("ModuleNotFoundError: No module named 'mindspore.comm.func'", "version-mismatch"),
        ("AttributeError: 'AscendQwen2DecoderLayer' object has no attribute 'attention_type'", "version-mismatch"),
        ("TypeError: forward() missing 1 required positional argument: 'interpolation'", "version-mismatch"),
        ("RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the current working operator name is HcclBroadcast.", "hccl"),
        ("NPU function error: call aclnnMoeDistributeDispatchV4 failed, error code is 561000", "hccl"),
        ("ModuleNotFoundError: No module named 'vllm._C'", "python-env"),  # a build without its extension, not an API drift
        ("ImportError: cannot import name 'soft_unicode' from 'markupsafe'", "python-env"),  # not the serving stack's own
        ("E1122 ImageProcessorDptr.hpp:819] Failed to recognize Ascend chip. (Code = -1)", "device"),
        ("Call aclInit(nullptr) failed : 507008", "device"),
        ("Warning  FailedScheduling  default-scheduler  0/3 nodes are available: 3 Insufficient huawei.com/Ascend910.", "device"),
        ("OSError: (External) NpuAclnnOpRunner: aclnnInplaceFillScalar", "cann-error"),
        ("[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!", "cann-error"),
        ("The error from device(6), serial number is 13, there is an aivec error, core id is 5", "cann-error"),
        ("PackagesNotFoundError: The following packages are not available from current channels:", "python-env"),
        ("collect2: error: ld returned 1 exit status", "python-env"),
        ("ModuleNotFoundError: No module named 'decord'", "python-env"),  # simply not installed
        ("ImportError: libcann_kb.so: cannot open shared object file: No such file or directory", "python-env"),
    ],
)
def test_an_error_line_names_its_family(detector: FamilyDetector, line: str, family: str) -> None:
    assert detector.of_line(line)[0] == family


def test_what_a_root_line_names_outranks_the_generic_code_on_it(engine) -> None:
    """A CANN code such as EZ9999 says only that something failed; the words on the same line say what: a MoE
    dispatch collective that failed is the HCCL family's, not the generic CANN error family's."""
    paste = ("[rank1]: RuntimeError: call aclnnMoeDistributeDispatchV4 failed, detail:EZ9999: Inner Error!\n"
             "[rank1]: EZ9999: [PID: 2201] 2026-01-01 mc2 kernel launch failed")
    answer = engine.answer(paste)
    assert not answer.answered and answer.family is not None and answer.family.id == "hccl"
    # The runtime's reason names the device family: no device context on the calling thread.
    no_context = engine.answer("EE1001: 2025-04-11-10:12:09.580.593 The argument is invalid.Reason: rtGetDevMsg execute "
                               "failed, reason=[context pointer null]\nTraceBack (most recent call last):")
    assert no_context.family is not None and no_context.family.id == "device"
    # A code with nothing more specific on its line keeps the code's family.
    plain = engine.answer("[ERROR] RUNTIME(3301,python):2026-01-01 EE9999: Inner Error, the kernel is not found\n"
                          "EE9999: rtKernelLaunch failed")
    assert plain.family is not None and plain.family.id == "cann-error"


def test_the_closest_topics_of_a_not_recognised_reply_follow_its_family(engine) -> None:
    """The reply names a family and its first steps; the closest topics it offers put that family's entries first
    (here an HCCL time-out entry, rather than the 300I Duo entry that shares the words "800I A2")."""
    answer = engine.answer("在双机800I A2上，使用vllm-ascend v0.13.0rc1拉起 DSv3.2-w8a8模型，DP4 TP4 一直卡住拉不起来"
                           "（DP2 TP8可以拉起来）")
    assert not answer.answered and answer.family is not None and answer.family.id == "hccl"
    families = {e.id: e.family for e in engine.entries}
    assert answer.closest is not None and families[answer.closest.id] == "hccl"
    assert answer.candidates[0] != answer.closest.id  # the ranking itself is unchanged; only the topics are ordered


def test_versions_the_table_says_do_not_fit_name_the_version_family(engine) -> None:
    """No line names a family, but the paste's own versions do not fit (torch 2.7.0 under a torch_npu built for
    2.5.1): a not-recognised reply names the version-mismatch family and its first steps."""
    paste = ("pip list | grep torch\ntorch                2.7.0\ntorch-npu            2.5.1.post1\n"
             "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\n    main()\n"
             "RuntimeError: the worker stopped without a message")
    answer = engine.answer(paste)
    assert not answer.answered
    assert answer.environment is not None and any(c.verdict == "mismatch" for c in answer.environment.checks)
    assert answer.family is not None and answer.family.id == "version-mismatch"
