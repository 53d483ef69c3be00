"""Ascend's own version files and names:

  ascend_toolkit_install.info   package_name=Ascend-cann-toolkit / version=8.3.RC2 / arch=x86_64
  version.cfg                   runtime_running_version=[7.0.0.5.242:7.0.RC1]
  */version.info                Version=24.1.rc3 (driver) or Version=8.0.RC3 (a CANN package)
  MindIE version.info           "mindie: 3.0.0" / "MindIE-LLM Version : 2.1.RC1" / "ATB-Models Version : ..."
  package files                 Ascend-cann-toolkit_8.0.RC1_linux-aarch64.run, Ascend-hdk-910b-npu-driver_24.1.rc3_...
  image tags                    mindie:2.1.RC1-800I-A2-py311-openeuler24.03-lts, vllm-ascend:v0.10.0rc1-310p, cann:8.0.0-910b-...
"""

from __future__ import annotations

import re

from bot.engine.normalize import PY_D as D, PY_W as W, compile_linear
from bot.environment.parsers import HINT, MAX_LINE, TOOL, Parsed, worth

_PACKAGE_NAME = re.compile(r"^\s*package_name\s*=\s*(\S+)", re.IGNORECASE)
_INFO_VERSION = re.compile(r"^\s*version\s*=\s*(\d[\w.\-]*)\s*$", re.IGNORECASE)
_INFO_ARCH = re.compile(r"^\s*arch\s*=\s*(aarch64|x86_64)\s*$")
_INFO_OTHER = re.compile(r"^\s*(innerversion|compatible_version|compatible_version_fw|os|path|install_path|"
                         r"ascendhal_version|aicpu_version|tdt_version|log_version|prof_version|dvppkernels_version|"
                         r"tsfw_version|package_version|version_dir|required_package_\w+)\s*=", re.IGNORECASE)
_CFG = re.compile(r"^\s*(\w+?)_(?:running|installed|upgrade)_version\s*=\s*\[[\d.]*:(\d[\w.]*)\]")
_MINDIE_INFO = re.compile(r"^\s*(mindie|mindie-llm|mindie-motor|mindie-service|MindIE-LLM Version|MindIE Version|"
                          r"Ascend-mindie)\s*:\s*(\d[\w.\-]*)\s*$", re.IGNORECASE)
_ATB_MODELS_INFO = re.compile(r"^\s*ATB-Models Version\s*:\s*(\d[\w.\-]*)\s*$", re.IGNORECASE)
_ATB_INFO = re.compile(r"^\s*(?:MindIE-ATB Version|Ascend-cann-atb|atb)\s*(?:Version)?\s*:\s*(\d[\w.\-]*)\s*$", re.IGNORECASE)
_PACKAGE_FILE = re.compile(
    r"Ascend-(cann-toolkit|cann-kernels-\w+|cann-\w+-ops|cann-nnal|cann-nnae|mindie|mindie-turbo|hdk-\w+-npu-driver|"
    r"hdk-\w+-npu-firmware)_(\d[\w.]*?)_(?:linux|py\d)", re.IGNORECASE)
_WHEEL = re.compile(r"\b(torch_npu|torch|vllm_ascend|mindie_llm|mindie_turbo)-(\d[\w.]*?)(?:\+\w+)?-(cp|py)(\d)(\d+)")
# An image tag: a registry path, then mindie|vllm-ascend|cann:<version>[-<suffix>], ending the word. On RE2 (under
# `re` the path prefix tried at every position made "1/1/1/..." quadratic). The path captures nothing and a name
# matches exactly when a non-word character (or the line's start) is before it, so the pattern keeps only that;
# the version and suffix classes cannot hold the end marks, so "ends the word" is checked after the match
# (_IMAGE_END) instead of by the old look-ahead.
_IMAGE = compile_linear(rf"(?i)(?:^|[^{W}])(mindie|vllm-ascend|cann):v?({D}[{W}.]*)(?:-([{W}.\-]+))?")
_IMAGE_END = "'\"`)"



_WORDS = ("=", "mindie", "atb", "ascend-", ".whl", "torch_npu-", "torch-", "vllm_ascend-", "vllm-ascend:", "cann:")


def parse(lines: list[str]) -> Parsed:
    out = Parsed()
    package: tuple[str, int] | None = None  # the package_name= line a version= line belongs to
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE or not worth(line, _WORDS):
            continue
        if (name := _PACKAGE_NAME.match(line)) is not None:
            package = (name.group(1).lower(), i)
            out.consumed.add(i)
            continue
        if (version := _INFO_VERSION.match(line)) is not None:
            _info_version(out, version.group(1), package, lines, i)
            continue
        if (arch := _INFO_ARCH.match(line)) is not None:
            out.add("arch", arch.group(1), "ascend_toolkit_install.info", i, TOOL)
            continue
        if _INFO_OTHER.match(line):
            out.consumed.add(i)
            continue
        if (cfg := _CFG.match(line)) is not None:
            # version.cfg names each CANN part (runtime, compiler, opp, toolkit ...); they share one release
            out.add("cann", cfg.group(2), "version.cfg", i, TOOL)
            continue
        if (mindie := _MINDIE_INFO.match(line)) is not None:
            out.add("mindie", mindie.group(2), "MindIE version.info", i, TOOL)
            continue
        if (models := _ATB_MODELS_INFO.match(line)) is not None:
            out.add("atb_models", models.group(1), "ATB Models version.info", i, TOOL)
            continue
        if (atb := _ATB_INFO.match(line)) is not None:
            out.add("nnal", atb.group(1), "ATB version.info", i, TOOL)
            continue
        _names(out, line, i)
    return out


def _info_version(out: Parsed, value: str, package: tuple[str, int] | None, lines: list[str], i: int) -> None:
    """version= belongs to the package_name= just above it; a bare Version= is a driver's when it looks like one
    (HDK releases are numbered 20 and up, CANN below 10), or follows a `cat .../driver/version.info`."""
    if package is not None and i - package[1] <= 3:
        name = package[0]
        if "toolkit" in name or "kernels" in name or "nnae" in name or "-ops" in name:
            out.add("cann", value, "ascend_toolkit_install.info", i, TOOL)
        elif "nnal" in name or "atb" in name:
            out.add("nnal", value, "nnal install info", i, TOOL)
        elif "mindie" in name:
            out.add("mindie", value, "MindIE install info", i, TOOL)
        else:
            out.consumed.add(i)
        return
    before = " ".join(lines[max(0, i - 3):i]).lower()
    major = value.split(".", 1)[0]
    if "driver" in before or (major.isdigit() and 20 <= int(major) <= 40):
        out.add("driver", value, "driver version.info", i, TOOL)
    elif "nnal" in before or "atb" in before:
        out.add("nnal", value, "ATB version.info", i, TOOL)
    elif major.isdigit() and 5 <= int(major) < 20:
        out.add("cann", value, "CANN version.info", i, TOOL)
    else:
        out.consumed.add(i)


def _names(out: Parsed, line: str, i: int) -> None:
    """Package file names and image tags: what the user installed or started, trusted below tool output."""
    for match in _PACKAGE_FILE.finditer(line):
        kind, version = match.group(1).lower(), match.group(2)
        if kind.startswith("cann-nnal"):
            out.add("nnal", version, "package file name", i, HINT)
        elif kind.startswith("cann"):
            out.add("cann", version, "package file name", i, HINT)
            chip = re.match(r"cann-kernels-(\w+)|cann-(\w+)-ops", kind)
            if chip and (chip.group(1) or chip.group(2)) not in ("nnal", "nnae", "toolkit"):
                out.add("chip", chip.group(1) or chip.group(2), "package file name", i, HINT)
        elif kind == "mindie":
            out.add("mindie", version, "package file name", i, HINT)
        elif kind == "mindie-turbo":
            out.add("mindie_turbo", version, "package file name", i, HINT)
        elif kind.endswith("npu-driver"):
            out.add("driver", version, "package file name", i, HINT)
        elif kind.endswith("npu-firmware"):
            out.add("firmware", version, "package file name", i, HINT)
    for match in _WHEEL.finditer(line):
        component = {"torch_npu": "torch_npu", "torch": "torch", "vllm_ascend": "vllm_ascend", "mindie_llm": "mindie",
                     "mindie_turbo": "mindie_turbo"}[match.group(1)]
        out.add(component, match.group(2), "wheel file name", i, HINT)
        out.add("python", f"{match.group(4)}.{match.group(5)}", "wheel file name", i, HINT)
    for match in _IMAGE.finditer(line):
        end = match.end()
        if end == len(line) or line[end].isspace() or line[end] in _IMAGE_END:
            _image(out, match.group(1).lower(), match.group(2), (match.group(3) or "").lower(), i)


def _image(out: Parsed, image: str, version: str, suffix: str, i: int) -> None:
    component = {"mindie": "mindie", "vllm-ascend": "vllm_ascend", "cann": "cann"}[image]
    out.add(component, version, "image tag", i, HINT)
    python = re.search(r"py(?:thon)?-?(3)\.?(\d{1,2})\b", suffix)
    if python:
        out.add("python", f"{python.group(1)}.{python.group(2)}", "image tag", i, HINT)
    chip = re.search(r"\b(310p|910b|a3|800i-a2|800i-a3|300i-duo|a2)\b", suffix)
    if chip:
        out.add("chip", chip.group(1), "image tag", i, HINT)
