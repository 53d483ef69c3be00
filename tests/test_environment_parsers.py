"""Environment parsers on real pastes (tests/data/env, sources in SOURCES.md) and on broken ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.environment.extract import extract
from bot.environment.parsers import ascend_files, informal, npu_smi, packages, system
from bot.environment.versions import parse_version

DATA = Path(__file__).parent / "data" / "env"

# fixture -> facts it must give (exactly these values; other components may be absent but never wrong)
EXPECTED: dict[str, dict[str, str]] = {
    "npu-smi-a3-26.0.rc2.txt": {"driver": "26.0.rc2", "chip": "Ascend910"},
    "npu-smi-a3-processes.txt": {"chip": "Ascend910"},
    "npu-smi-a3-no-version-line.txt": {"chip": "Ascend910"},
    "npu-smi-910b4-1-25.2.0.txt": {"driver": "25.2.0", "chip": "910B4-1"},
    "npu-smi-910b1-23.0.3.txt": {"driver": "23.0.3", "chip": "910B1"},
    "npu-smi-910b2-25.2.0.txt": {"driver": "25.2.0", "chip": "910B2"},
    "npu-smi-910b2c-and-toolkit-info.txt": {"driver": "25.0.rc1.1", "chip": "910B2C", "cann": "8.3.RC2", "arch": "x86_64"},
    "npu-smi-310p3.txt": {"chip": "310P3"},
    "npu-smi-24.1.rc3-libatb.txt": {"driver": "24.1.rc3", "chip": "910B1"},
    "npu-smi-tool-older-than-driver.txt": {"driver": "23.0.rc3"},  # the driver is "Version:", not the tool's 23.0.rc2.2
    "sglang-check-env-npu-smi.txt": {"driver": "24.1.0.3", "python": "3.11.13", "torch": "2.6.0", "transformers": "4.55.2",
                                     "vllm": "0.8.5.post1"},
    "pip-list-torch-vllm.txt": {"torch": "2.7.1", "torch_npu": "2.7.1rc1", "torchvision": "0.23.0", "vllm": "0.11.0", "python": "3.11"},
    "collect-env-2025-02.txt": {"torch": "2.5.1", "python": "3.10.16", "arch": "aarch64", "glibc": "2.35", "os": "Ubuntu 22.04.5 LTS"},
    "collect-env-sectioned.txt": {"torch": "2.5.1", "arch": "aarch64", "glibc": "2.28"},
    "collect-env-torch-2.10-cpu.txt": {"torch": "2.10.0", "python": "3.10.12", "arch": "aarch64"},
    "env-markdown-table.txt": {"cann": "9.1.0", "torch": "2.10.0", "torch_npu": "2.10.0.post4", "vllm": "0.27.1",
                               "vllm_ascend": "0.19.1rc2.dev1908"},
    "llamafactory-env.txt": {"python": "3.8.20", "torch": "2.1.0", "transformers": "4.46.1", "arch": "aarch64", "glibc": "2.34"},
    "llamafactory-informal.txt": {"torch_npu": "2.1.0.post3", "cann": "8.0.RC1", "chip": "910b"},
    "llamafactory-inline-cann7.txt": {"python": "3.10.15", "torch": "2.1.0", "transformers": "4.45.0", "cann": "7.0.RC1.3",
                                      "chip": "910B3"},
    "informal-910b4-cann9.txt": {"chip": "910B4-1", "vllm_ascend": "0.23.0rc1", "cann": "9.0.1", "torch_npu": "2.10.0.post2",
                                 "driver": "25.2.3"},
    "informal-chinese-keys.txt": {"cann": "8.0.RC2", "python": "3.10.15", "transformers": "4.45.1", "torch": "2.3.1", "torch_npu": "2.3.1"},
    "informal-env-list-a2.txt": {"torch": "2.10.0", "torch_npu": "2.10.0", "transformers": "5.5.3", "vllm": "0.20.2",
                                 "vllm_ascend": "0.20.2rc1", "cann": "9.0.0", "triton_ascend": "3.2.1"},
    "inline-versions-version-cfg.txt": {"torch": "2.1.0", "torch_npu": "2.1.0rc1", "cann": "7.0.RC1", "driver": "23.0.rc3"},
    "gpustack-cann-driver.txt": {"cann": "8.0.RC3", "driver": "24.1.rc3"},
    "vllm-ascend-0.9.0-question.txt": {"vllm": "0.9.0", "vllm_ascend": "0.9.0", "cann": "8.1.RC1"},
    "docker-310p-image-tag.txt": {"vllm_ascend": "0.9.2rc1"},
    "npu-smi-dcmi-8005.txt": {"vllm_ascend": "0.10.0rc1"},
}


def facts(name: str) -> dict[str, str | None]:
    return {f.component: f.value for f in extract((DATA / name).read_text(encoding="utf-8")).facts}


def test_every_fixture_is_listed_with_its_source():
    sources = (DATA / "SOURCES.md").read_text(encoding="utf-8")
    fixtures = sorted(p.name for p in DATA.glob("*.txt"))
    assert len(fixtures) >= 12
    for name in fixtures:
        assert f"`{name}`" in sources, f"{name} has no source URL in SOURCES.md"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_pastes_parse_to_the_versions_they_show(name: str):
    found = facts(name)
    for component, value in EXPECTED[name].items():
        assert found.get(component) == value, f"{name}: {component} is {found.get(component)!r}, expected {value!r}"


def test_npu_smi_910b_cards_hold_hbm_and_a_cut_row_claims_nothing():
    cards = extract((DATA / "npu-smi-910b2-25.2.0.txt").read_text()).cards
    assert [(c.npu, c.name, c.health, c.hbm_used_mb, c.hbm_total_mb) for c in cards[:2]] == [
        (0, "910B2", "OK", 3382, 65536), (1, "910B2", "OK", 3381, 65536)]
    # the third row is cut after its Memory-Usage pair: its HBM is unknown, not "0 MB of nothing"
    assert cards[2].hbm_used_mb is None and cards[2].hbm_total_mb is None


def test_npu_smi_a3_layout_has_two_chips_per_npu():
    cards = extract((DATA / "npu-smi-a3-26.0.rc2.txt").read_text()).cards
    assert [(c.npu, c.chip, c.family, c.hbm_used_mb) for c in cards] == [(0, 0, "A3", 3419), (0, 1, "A3", 2874)]


def test_npu_smi_310p_reads_device_memory_not_hbm():
    cards = extract((DATA / "npu-smi-310p3.txt").read_text()).cards
    assert len(cards) == 4
    assert {(c.memory_kind, c.hbm_total_mb) for c in cards} == {("DDR", 21527)}
    assert cards[0].npu == 32768 and cards[0].name == "310P3"


def test_npu_smi_process_table():
    found = extract((DATA / "npu-smi-a3-processes.txt").read_text())
    assert [(p.npu, p.chip, p.pid, p.name, p.memory_mb) for p in found.processes] == [(0, 0, 632268, "python3.1", 197)]
    assert found.cards[0].hbm_used_mb == 31877  # "31877/ 65536" without a space


def test_npu_smi_errors_are_signals():
    found = extract((DATA / "npu-smi-dcmi-8005.txt").read_text())
    assert any("-8005" in s.detail for s in found.signals)


def test_npu_smi_board_view():
    board = """npu-smi info -t board -i 0
        NPU ID                         : 0
        Software Version               : 24.1.rc2
        Firmware Version               : 7.5.0.1.129
        Compatibility                  : NOK
        Board ID                       : 0x02
"""
    parsed = npu_smi.parse(board.splitlines())
    assert {(f.component, f.value) for f in parsed.facts} == {("driver", "24.1.rc2"), ("firmware", "7.5.0.1.129")}
    assert [s.kind for s in parsed.signals] == ["firmware-compatibility"]


def test_npu_smi_key_value_views_give_no_false_facts():
    found = extract((DATA / "npu-smi-info-l-and-memory.txt").read_text())
    assert found.facts == [] and found.coverage > 0.5


def test_pip_freeze_conda_list_and_collect_env_lines():
    text = """torch==2.5.1
torch-npu @ file:///tmp/torch_npu-2.5.1.post1-cp310-cp310-manylinux_2_17_aarch64.whl
# Name                    Version                   Build  Channel
transformers              4.51.3                   pypi_0    pypi
vllm-ascend               0.9.1                    pypi_0    pypi
[pip3] numpy==1.26.4
[conda] mindie-turbo 2.1rc1 pypi_0 pypi
"""
    found = {f.component: (f.value, f.source) for f in extract(text).facts}
    assert found["torch"] == ("2.5.1", "pip freeze")
    assert found["torch_npu"][0] == "2.5.1.post1"
    assert found["transformers"][0] == "4.51.3" and found["vllm_ascend"][0] == "0.9.1"
    assert found["mindie_turbo"][0] == "2.1.RC1"  # pip's 2.1rc1, in Ascend's spelling


def test_install_commands_are_hints_below_installed_versions():
    text = "pip install vllm==0.9.1\nvllm 0.9.2\nvllm-ascend 0.9.2rc1\n"
    assert facts_of(text)["vllm"] == "0.9.2"


def test_cann_version_files():
    text = """cat /usr/local/Ascend/ascend-toolkit/latest/version.cfg
# version: 1.0
runtime_running_version=[7.0.0.5.242:7.0.RC1]
compiler_running_version=[7.0.0.5.242:7.0.RC1]
cat /usr/local/Ascend/driver/version.info
Version=24.1.rc3
ascendhal_version=7.35.23
"""
    parsed = ascend_files.parse(text.splitlines())
    assert {(f.component, f.value) for f in parsed.facts} == {("cann", "7.0.RC1"), ("driver", "24.1.rc3")}


def test_mindie_and_atb_version_info():
    text = "mindie: 3.0.0\nmindie-llm: 3.0.0\nplatform: aarch64\nMindIE-ATB Version : 8.5.1\nATB-Models Version : 3.0.0\n"
    found = facts_of(text)
    assert found["mindie"] == "3.0.0" and found["nnal"] == "8.5.1" and found["atb_models"] == "3.0.0"


def test_package_file_names_and_image_tags():
    text = ("./Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run --install\n"
            "docker run -it swr.cn-south-1.myhuaweicloud.com/ascendhub/mindie:2.1.RC1-800I-A2-py311-openeuler24.03-lts bash\n")
    found = facts_of(text)
    assert found["cann"] == "8.2.RC1" and found["mindie"] == "2.1.RC1" and found["python"] == "3.11"


def test_system_commands():
    text = """$ python --version
Python 3.11.6
$ uname -m
aarch64
$ cat /etc/os-release
NAME="openEuler"
VERSION="22.03 (LTS-SP4)"
ID="openEuler"
VERSION_ID="22.03"
PRETTY_NAME="openEuler 22.03 (LTS-SP4)"
"""
    parsed = system.parse(text.splitlines())
    assert {(f.component, f.value, f.source) for f in parsed.facts} >= {
        ("python", "3.11.6", "python --version"), ("arch", "aarch64", "uname -m"), ("os", "openEuler 22.03 (LTS-SP4)", "/etc/os-release")}


def test_sentences_give_no_versions():
    text = ("vllm 0.9.0 requires torch version 2.7.0. torch has this version, but Torch-NPU does not have this version.\n"
            "驱动版本也核对无误7.0.RC1.alpha003\n"
            "Please upgrade CANN to the latest version and retry with python 3 support\n")
    found = facts_of(text)
    assert "torch" not in found and "driver" not in found and "cann" not in found


def test_conflicting_values_leave_the_component_unknown():
    found = extract("torch: 2.1.0\nCANN: 8.0.RC1\ntorch: 2.4.0\n").facts
    torch = next(f for f in found if f.component == "torch")
    assert torch.value is None and torch.conflicting == ["2.1.0", "2.4.0"]
    assert next(f for f in found if f.component == "cann").value == "8.0.RC1"


def test_implausible_values_are_dropped_not_guessed():
    found = facts_of("driver: 7.0.RC1\nCANN: 24.1.rc3\ntorch: 12.1\nPython: 2.7.18\nNPU driver | 467992 |\n")
    assert found == {}


@pytest.mark.parametrize("text", [
    "", "\n\n", "|||||\n+---+\n| 0 |", "| 0     910B3 | OK |", "| 0 | 0000:C1:00.0 | 0 0 / 0 3397 / |",
    "npu-smi Version:", "package_name=Ascend-cann-toolkit\nversion=\n", "version=banana", "torch==", "Python 3.",
    "x" * 100_000, "| " + "0 " * 20_000 + "|", "\x00\x01\x02 torch 2.1.0 \ufffd", "runtime_running_version=[:]",
    "NPU   Name | Health\n| 0  910B | OK | 90 30 0 / 0 |\n| nonsense | 0000:C1:00.0 |\n",
])
def test_broken_and_partial_pastes_never_crash(text: str):
    found = extract(text)
    for fact in found.facts:
        assert fact.value is None or parse_version(fact.value) is not None or fact.component in ("chip", "os", "arch")


def test_hostile_input_stays_fast():
    import time

    text = ("| " + "0 " * 5000 + "|\n" + "a" * 1990 + "\n" + "torch==" + "1." * 900 + "\n") * 300
    started = time.perf_counter()
    extract(text)
    assert time.perf_counter() - started < 1.0


def test_versions_order_like_the_release_trains():
    v = parse_version
    assert v("8.0.RC3") < v("8.0.0") < v("8.1.RC1") < v("8.5.1") < v("9.0.0")
    assert v("24.1.rc2") < v("24.1.0") < v("24.1.0.3") < v("25.0.rc1.1") < v("25.2.0")
    assert v("2.7.1rc1") < v("2.7.1") < v("2.7.1.post1")
    assert v("2.5.1.post1.dev20250528") < v("2.5.1.post1")
    assert v("2.1") == v("2.1.0") and v("2.10.0+cpu") == v("2.10.0")
    assert v("8.0.RC3.beta1").series() == "8.0.RC3" and v("8.1.rc1").text == "8.1.RC1"
    assert v("abc") is None and v("0000:9D:00.0") is None and v("1.2.linux") is None


def facts_of(text: str) -> dict[str, str | None]:
    return {f.component: f.value for f in extract(text).facts}


def test_informal_aliases_cover_both_languages():
    assert informal.key_component("CANN版本") == "cann"
    assert informal.key_component("torch-npu版本") == "torch_npu"
    assert informal.key_component("Driver / npu-smi") == "driver"
    assert informal.key_component("vLLM Ascend Version") == "vllm_ascend"
    assert informal.key_component("Current transformers version") == "transformers"
    assert informal.key_component("当前CANN版本") == "cann"
    assert packages.normalise("Torch_NPU") == "torch-npu"
