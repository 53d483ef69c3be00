"""Issue #11's rules for the environment check (issue #12), which runs on every answer and answers
`/mindie-help env` in the slash command's acknowledgement: its line patterns are linear, and the ones that were
ported from `re` to RE2 mean what they meant (compared with the originals on inputs small enough for them)."""

from __future__ import annotations

import re
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.environment.extract import extract
from bot.environment.parsers import ascend_files, informal, npu_smi

EXTRACT_LIMIT = 5.0  # seconds for ~1.2 MB of hostile lines on a busy 2-core machine (~0.4 s when idle); `re` took minutes

# The patterns as they were on `re` (bot/environment before issue #11's rules reached it).
OLD_PIECE = re.compile(
    r"^\s*(?:[-*•>]\s*)?(?P<key>[A-Za-z\u4e00-\u9fff][\w\u4e00-\u9fff .\-/`*'\"]{0,40}?)\s*"
    r"(?:[:：=]=?|==|\s)\s*[`'\"]?v?(?P<ver>\d+(?:\.\w+)*(?:[ .]rc\d+)?(?:\+\w+)?)[`'\"]?"
    r"\s*(?:\(.*\)|\[.*\]|（.*）|[\u4e00-\u9fff]{0,6})?\s*$", re.IGNORECASE)
OLD_SPLIT = re.compile(r"[,，;；、]\s*|\s+且\s+|\s+and\s+")
OLD_TABLE_ROW = re.compile(r"^\s*\|\s*([^|]{1,40}?)\s*\|\s*`?v?(\d[\w.+\-]*)`?(?:\s*\([^|]*\))?\s*\|")
OLD_IMAGE = re.compile(r"\b(?:[\w.\-]+/)*(mindie|vllm-ascend|cann):v?(\d[\w.]*?)(?:-([\w.\-]+))?(?=\s|$|['\"`)])", re.IGNORECASE)
OLD_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
OLD_KEY_VALUE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/.\-]*?)\s+:\s+(\S.*?)\s*$")

# Each line costs the old patterns 1-500 ms; 2,500 of them is what extract() reads of a paste at most.
HOSTILE_LINES = {
    "word, spaces, key word": "a" + " " * 480 + "torch!",
    "key and a digit, spaces": "torch 1" + " " * 480 + "!",
    "table cell of spaces": "| torch" + " " * 480 + "!",
    "npu-smi memory cell of digits": "| 1 | 0000:00:00.0 | " + "1" * 400 + " /",
    "key, spaces, no value": "a" + " " * 480 + ":",
    "npu-smi key padded": "Software Version" + " " * 300 + "   :" + " " * 150,
    "image path of slashes": "mindie " + "1/" * 240 + "(",
    "split on spaces": "torch x_running_version=[" + " " * 460 + "|",
}


def test_the_environment_check_is_linear_on_hostile_lines():
    for name, line in HOSTILE_LINES.items():
        started = time.perf_counter()
        extract("\n".join([line] * 2500))
        took = time.perf_counter() - started
        assert took < EXTRACT_LIMIT, f"{name}: {took:.1f} s"


PIECES = [*"aZ09_ .,:;/-+=|`'\"()[]（）\t", "torch", "CANN", "版本", "驱动", " and ", "且", "，", "、", "rc1", " RC2",
          "2.1.0", "8.0.RC1", "v", "==", "：", "mindie", "vllm-ascend", "cann", "/", "py311", "-800I-A2", "１", "\xa0",
          "\u3000", "Software Version", "   :", " / ", "12", "端口"]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def _groups(match):
    return None if match is None else (match.group(0), match.groups())


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_ported_patterns_mean_what_the_re_originals_meant(text):
    assert _groups(informal._PIECE.match(text)) == _groups(OLD_PIECE.match(text))
    assert _groups(informal._TABLE_ROW.match(text)) == _groups(OLD_TABLE_ROW.match(text))
    assert bool(informal._SPLIT.search(text)) == bool(OLD_SPLIT.search(text))
    assert informal._SPLIT.split(text) == OLD_SPLIT.split(text)
    assert npu_smi._PAIR.findall(text) == OLD_PAIR.findall(text)
    assert _groups(npu_smi._KEY_VALUE.match(text)) == _groups(OLD_KEY_VALUE.match(text))
    ours = [m.groups() for m in ascend_files._IMAGE.finditer(text)
            if m.end() == len(text) or text[m.end()].isspace() or text[m.end()] in ascend_files._IMAGE_END]
    assert ours == [m.groups() for m in OLD_IMAGE.finditer(text)]
