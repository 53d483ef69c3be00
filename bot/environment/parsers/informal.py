"""Versions as people type them in an issue or a chat, in English or Chinese:

  CANN: 8.1.rc1            torch-npu: 2.10.0.post2      CANN版本：8.0.RC2        Driver / npu-smi: 25.2.3
  - PyTorch version: 2.1.0 vLLM Ascend Version: 0.8.4rc1  | torch_npu | 2.10.0.post4 | Same |
  torch 2.1.0, torch-npu 2.1.0rc1, CANN 7.0.RC1 (runtime_running_version=[...]), npu-smi 23.0.rc3
  Ascend driver: 24.1 rc3  固件驱动：HDK25.5   python3.8   NPU type: Ascend910B3   Hardware: 8 × Ascend 910B4-1 64GB

A line counts only when it is nothing but "name <separator> version" (plus a parenthesis or bracket after it), or a
list of such pieces; "vllm 0.9.0 requires torch version 2.7.0" is a sentence and gives nothing.
"""

from __future__ import annotations

import re

from bot.engine.normalize import PY_D as D, PY_S as S, PY_W as W, compile_linear
from bot.environment.parsers import MAX_LINE, TEXT, Parsed, RawFact, worth

# Normalised key (lower case, no spaces, dashes, underscores or the word "version") -> component.
ALIASES: dict[str, str] = {
    "cann": "cann", "canntoolkit": "cann", "ascendcanntoolkit": "cann", "cann包": "cann", "stablecann": "cann",
    "cannkernels": "cann", "toolkit": "cann",
    "torch": "torch", "pytorch": "torch",
    "torchnpu": "torch_npu", "torchnpu版本": "torch_npu", "pytorchnpu": "torch_npu",
    "torchvision": "torchvision",
    "vllm": "vllm", "vllmascend": "vllm_ascend", "vllmascendimage": "vllm_ascend",
    "transformers": "transformers",
    "python": "python",
    "mindie": "mindie", "mindiellm": "mindie", "mindieimage": "mindie", "mindieturbo": "mindie_turbo",
    "atbmodels": "atb_models", "atbllm": "atb_models", "nnal": "nnal", "atb": "nnal",
    "driver": "driver", "npudriver": "driver", "ascenddriver": "driver", "驱动": "driver", "hdk": "driver",
    "ascendhdk": "driver", "固件驱动": "driver", "driver/npusmi": "driver", "npusmi": "driver", "驱动/固件": "driver",
    "firmware": "firmware", "npufirmware": "firmware", "固件": "firmware",
    "tritonascend": "triton_ascend",
}
_STRIP_KEY = re.compile(r"[\s\-_`*'\"]+|version|版本号?|号", re.IGNORECASE)
_KEY_PREFIX = re.compile(r"^(?:current|installed|my|the|used|当前|已安装的?|安装的|使用的?)\s*", re.IGNORECASE)
# _PIECE, _SPLIT and _TABLE_ROW run on RE2 (linear): under `re` a line of a word and 480 spaces cost _PIECE
# 0.15-0.5 s, and the check runs on every answer (issue #11's rule for line patterns). Python's \w, \d, \s as
# bot.engine.normalize defines them for RE2.
_CJK = "\u4e00-\u9fff"
_PIECE = compile_linear(
    rf"(?i)^{S}*(?:[-*•>]{S}*)?(?P<key>[A-Za-z{_CJK}][{W}{_CJK} .\-/`*'\"]{{0,40}}?){S}*"
    rf"(?:[:：=]=?|==|{S}){S}*[`'\"]?v?(?P<ver>{D}+(?:\.[{W}]+)*(?:[ .]rc{D}+)?(?:\+[{W}]+)?)[`'\"]?"
    rf"{S}*(?:\(.*\)|\[.*\]|（.*）|[{_CJK}]{{0,6}})?{S}*$")
_GLUED = re.compile(r"^\s*(?:[-*•]\s*)?(python|py)\s*(3\.\d{1,2}(?:\.\d{1,3})?)\s*$", re.IGNORECASE)
_SPLIT = compile_linear(rf"[,，;；、]{S}*|{S}+且{S}+|{S}+and{S}+")
_TABLE_ROW = compile_linear(rf"^{S}*\|{S}*([^|]{{1,40}}?){S}*\|{S}*`?v?({D}[{W}.+\-]*)`?(?:{S}*\([^|]*\))?{S}*\|")
_CHIP = re.compile(r"\b(?:Ascend\s*|NPU type:\s*Ascend)?(910B\d?(?:C|-1)?|910_93\d\d|910A|910ProA|910ProB|910PremiumA|"
                   r"310P\d?|950(?:PR|DT)?)\b", re.IGNORECASE)
_ATLAS = re.compile(r"\bAtlas\s*(300I\s*Duo|300I\s*Pro|800I\s*A2|800T\s*A2|800I\s*A3|800T\s*A3|900\s*A3|A2|A3)\b|"
                    r"(?<![0-9A-Za-z])(300I\s*Duo|800[IT]\s*A[23])\b", re.IGNORECASE)
_HDK = re.compile(r"\bHDK\s*[:：]?\s*(\d{2}\.\d+(?:\.\w+)*)", re.IGNORECASE)
_PYTHON_INLINE = re.compile(r"(?<![\w.])python\s*==\s*(3\.\d{1,2}(?:\.\d{1,3})?)\b", re.IGNORECASE)


# A line without any of these words cannot hold a fact this parser reads.
_WORDS = ("cann", "torch", "vllm", "transformers", "python", "py3", "mindie", "atb", "nnal", "driver", "firmware", "hdk",
          "triton", "toolkit", "npu", "910", "310", "950", "atlas", "300i", "800i", "800t", "驱动", "固件")


def key_component(key: str) -> str | None:
    """"Current transformers version" and "当前CANN版本" name the same thing as "transformers" and "CANN"."""
    return ALIASES.get(_STRIP_KEY.sub("", _KEY_PREFIX.sub("", key.strip().lower())))


def parse(lines: list[str]) -> Parsed:
    out = Parsed()
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE or not line.strip() or not worth(line, _WORDS):
            continue
        table = _TABLE_ROW.match(line)
        if table and (component := key_component(table.group(1))) is not None:
            out.add(component, table.group(2), "text", i, TEXT)
        else:
            for piece in [line, *(_SPLIT.split(line) if _SPLIT.search(line) else [])]:
                if _piece(out, piece, i) and piece is line:
                    break
        for chip in _CHIP.finditer(line):
            out.facts.append(_chip_fact(chip.group(1), i))
        for atlas in _ATLAS.finditer(line):
            out.facts.append(_chip_fact("Atlas " + " ".join((atlas.group(1) or atlas.group(2)).split()), i))
        for hdk in _HDK.finditer(line):
            out.add("driver", hdk.group(1), "text", i, TEXT)
        for python in _PYTHON_INLINE.finditer(line):
            out.add("python", python.group(1), "text", i, TEXT)
    return out


def _piece(out: Parsed, piece: str, i: int) -> bool:
    glued = _GLUED.match(piece)
    if glued:
        out.add("python", glued.group(2), "text", i, TEXT)
        return True
    match = _PIECE.match(piece)
    if match is None:
        return False
    component = key_component(match.group("key"))
    if component is None:
        if match.group("ver").count(".") >= 2:  # "numpy: 1.26.4" in a version listing: environment output, unused
            out.consumed.add(i)
        return False
    version = re.sub(r"[ ](rc\d+)$", r".\1", match.group("ver"), flags=re.IGNORECASE)  # "24.1 rc3" -> "24.1.rc3"
    out.add(component, version, "text", i, TEXT)
    return True


def _chip_fact(name: str, i: int) -> RawFact:
    return RawFact("chip", name, "text", i, TEXT)
