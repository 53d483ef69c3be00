"""The normaliser as it was before issue #11, on Python's `re`: the reference the RE2/scanner version must agree
with on every input small enough for it (tests/test_hostile.py compares them). Not used by the bot: several
of these patterns take quadratic time on hostile input (a long run of spaces, unclosed Slack markup)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import BinaryIO

# Slack mrkdwn escapes and markup (https://api.slack.com/reference/surfaces/formatting)
_FENCE = re.compile(r"```(?:[a-zA-Z0-9_+-]*\n)?")
_INLINE_CODE = re.compile(r"`([^`\n]*)`")
_USER_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
_SPECIAL_MENTION = re.compile(r"<!(?:subteam\^[A-Z0-9]+(?:\|[^>]*)?|here|channel|everyone)(?:\|[^>]*)?>")
_CHANNEL_LINK = re.compile(r"<#[CG][A-Z0-9]+(?:\|([^>]*))?>")
_LABELLED_LINK = re.compile(r"<((?:https?|mailto|file|ftp)[^|>\s]*)\|([^>]*)>")
_BARE_LINK = re.compile(r"<((?:https?|mailto|file|ftp)[^>\s]*)>")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# What `strings` would keep of a binary paste: runs of printable ASCII, CJK and full-width punctuation. Stray
# Latin letters that random bytes decode to would otherwise read as garbled model output.
_READABLE_RUN = re.compile(r"[\t\x20-\x7e\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]{4,}")

_ERROR_LINE = re.compile(
    r"ERROR|Error|error[:\]]|Exception|Traceback|FAIL|[Ff]ail(?:ed|ure)?\b|\bfault\b|core ?dump|Segmentation fault|"
    r"refused|denied|cannot|can't|not found|No such file|undefined symbol|timed? ?out|no response|报错|错误|失败|异常|超时|"
    r"\bMIE\d{2}[EWI][0-9A-F]{6,7}\b|\bE[A-Z]\d{4}\b"
)
_WARN_LINE = re.compile(r"\bWARN(?:ING)?\b|\[W(?:ARN)?\]|警告")
_FINAL_EXCEPTION = re.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)|[\w.]*Error)\b:?")
_LOG_LINE = re.compile(
    r"^\s*(?:\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}|\[(?:INFO|WARN|WARNING|ERROR|DEBUG|error|info|warn)\]|"
    r"(?:INFO|WARN|WARNING|ERROR|DEBUG|CRITICAL|FATAL)\b|File \"[^\"]+\", line \d+|Traceback \(most recent call last\)|"
    r"\s{2,}at [\w.$]+\(|[EWIF]\d{4} \d{2}:\d{2})"
)

# Masks for lexical/dense matching: values that differ between users' logs carry no meaning.
_MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), " "),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), " "),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), " "),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), " ip "),
    (re.compile(r"(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}/?"), " path "),
    (re.compile(r"\b[0-9a-f]{16,}\b"), " "),
    (re.compile(r"(?<![\w])\d+(?:\.\d+)?(?![\w])"), " "),
]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass
class Prepared:
    """A user's text after clean-up, ready for the retrievers."""

    text: str
    lines: list[str]
    error_lines: list[int]  # 0-based indices into lines
    is_log: bool
    lang: str
    truncated_bytes: int = 0
    was_binary: bool = False
    notices: list[str] = field(default_factory=list)

    @property
    def focus(self) -> str:
        """Text the lexical and dense retrievers read: the error lines of a log, or the whole question."""
        if self.was_binary:  # the readable strings of random bytes hold chance words; trust only error lines
            return mask("\n".join(self.lines[i] for i in focus_line_indices(self)))[:4000]
        if not self.is_log:
            return mask(self.text)[:4000]
        prose = [ln for ln in self.lines if ln.strip() and not _LOG_LINE.search(ln)]
        if not self.error_lines:  # a log with nothing wrong in it: only the user's own words and its last lines
            tail = [ln for ln in self.lines if ln.strip()][-5:]
            return mask("\n".join(prose[:3] + tail))[:4000]
        chosen = focus_line_indices(self)
        parts = [self.lines[i] for i in chosen]
        asked = [ln for ln in prose if _CJK.search(ln)]
        return mask("\n".join(asked[:3] + parts))[:4000]


    def focus_on_root(self, root_line: int, root_text: str, skip: set[int], causes: dict[int, str]) -> str:
        """The focus of a log whose root error is known: that cause first, then the other error lines with
        echoes (aftermath lines) left out and wrapper lines read at the cause they quote."""
        if self.was_binary or not self.is_log:
            return self.focus
        chosen = [i for i in focus_line_indices(self) if i not in skip and i != root_line]
        prose = [ln for ln in self.lines if ln.strip() and not _LOG_LINE.search(ln) and _CJK.search(ln)]
        return mask("\n".join(prose[:3] + [root_text] + [causes.get(i, self.lines[i]) for i in chosen]))[:4000]


def is_error_line(line: str) -> bool:
    return _ERROR_LINE.search(line) is not None


def focus_line_indices(prepared: Prepared, limit: int = 12) -> list[int]:
    """First error, final exception line, and the error lines between, capped at limit (FAQ: read the first error)."""
    errors = prepared.error_lines
    chosen = errors[: limit - 1]
    final = _final_exception_index(prepared)
    if final is not None and final not in chosen:
        chosen.append(final)
    return sorted(set(chosen))


def _final_exception_index(prepared: Prepared) -> int | None:
    for i in range(len(prepared.lines) - 1, -1, -1):
        if _FINAL_EXCEPTION.match(prepared.lines[i]):
            return i
    return None


def looks_binary(data: bytes) -> bool:
    """A NUL, or more than 10 % control bytes, in the first 8 KB."""
    sample = data[:8192]
    return b"\x00" in sample or (bool(sample) and sum(b < 9 or 13 < b < 32 for b in sample) / len(sample) > 0.1)


def decode_input(data: str | bytes) -> tuple[str, bool]:
    """Decode bytes leniently; report whether the input looked binary."""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace"), looks_binary(data)
    sample = data[:8192]
    binary = "\x00" in sample or (bool(sample) and len(_CONTROL.findall(sample)) / len(sample) > 0.1)
    return data, binary


def readable_runs(text: str) -> str:
    """The readable strings of a binary paste, one per line."""
    return "\n".join(_READABLE_RUN.findall(text))


def _strip_fences(text: str) -> str:
    """A fence ending its line (``` or ```lang) leaves that line empty; a fence glued to code goes without a trace
    at a line's start, and starts a new line after other text."""
    out: list[str] = []
    last = 0
    for m in _FENCE.finditer(text):
        out.append(text[last : m.start()])
        sofar = "".join(out)
        if m.group(0).endswith("\n"):
            out.append("\n")
        elif sofar and not sofar.endswith("\n"):
            out.append("\n")
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def clean_slack(text: str) -> str:
    text = _strip_fences(text)
    text = _INLINE_CODE.sub(r"\1", text)
    text = _USER_MENTION.sub(" ", text)
    text = _SPECIAL_MENTION.sub(" ", text)
    text = _CHANNEL_LINK.sub(lambda m: "#" + (m.group(1) or "channel"), text)
    text = _LABELLED_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _BARE_LINK.sub(r"\1", text)
    # Slack escapes only &, < and >; html.unescape also handles the rare numeric entity.
    return html.unescape(text)


def clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    text = clean_slack(text)
    text = _CONTROL.sub(" ", text)
    return text


def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return re.sub(r"[ \t]+", " ", text).strip()


def detect_lang(lines: list[str]) -> str:
    """'zh' when the person wrote Chinese: some prose line (log lines count only when there is no prose) that is all
    Chinese, or holds two different Chinese characters making at least a tenth of its letters."""
    prose = [ln for ln in lines if not _LOG_LINE.search(ln)] or lines
    for line in prose[:2000]:
        line = line[:2000]
        cjk = _CJK.findall(line)
        if not cjk:
            continue
        letters = len(cjk) + len(re.findall(r"[A-Za-z]", line))
        if letters == len(cjk) or (len(cjk) * 10 >= letters and len(set(cjk)) >= 2):
            return "zh"
    return "en"


def detect_lang_of_strings(lines: list[str]) -> str:
    """A binary paste's language, over all its readable strings: zh when two different Chinese characters make at
    least a tenth of the letters."""
    text = "".join(ln[:2000] for ln in lines[:2000])
    cjk = _CJK.findall(text)
    letters = len(cjk) + len(re.findall(r"[A-Za-z]", text))
    return "zh" if len(set(cjk)) >= 2 and len(cjk) * 10 >= letters else "en"


def looks_like_log(text: str) -> bool:
    """A pasted log or traceback rather than chat: a code block, a traceback, or several log-like lines."""
    if "```" in text or "Traceback (most recent call last)" in text:
        return True
    lines = clean(text[:200_000]).split("\n")
    log_like = sum(1 for ln in lines if _LOG_LINE.search(ln))
    errorish = sum(1 for ln in lines if _ERROR_LINE.search(ln))
    return log_like >= 3 or (log_like >= 2 and errorish >= 1)


OMITTED = "[... {n:,} bytes omitted by mindie-help ...]"


def _join(head: bytes, tail: bytes, omitted: int) -> bytes:
    return head + b"\n" + OMITTED.format(n=omitted).encode() + b"\n" + tail


def head_and_tail(data: bytes, max_bytes: int) -> bytes:
    """The first and last halves of max_bytes: a long log keeps both its first error and its final exception."""
    if len(data) <= max_bytes:
        return data
    half = max_bytes // 2
    return _join(data[:half], data[-half:], len(data) - 2 * half)


def read_head_and_tail(stream: BinaryIO, max_bytes: int, chunk: int = 1 << 16) -> tuple[bytes, int]:
    """Read a stream of any size in bounded memory, keeping what head_and_tail keeps; also return its size."""
    half = max_bytes // 2
    head, tail, total = bytearray(), bytearray(), 0
    while block := stream.read(chunk):
        total += len(block)
        take = max_bytes - len(head)  # the whole input may still fit: fill the head first
        head += block[:take]
        tail += block[take:]
        if len(tail) > max_bytes:  # only the last `half` bytes of the rest can matter
            del tail[: len(tail) - half]
    if total <= max_bytes:
        return bytes(head), total
    return _join(bytes(head[:half]), (bytes(head) + bytes(tail))[-half:], total - 2 * half), total


def prepare(data: str | bytes, max_bytes: int = 1_000_000) -> Prepared:
    text, binary = decode_input(data)
    if binary:
        text = readable_runs(text)
    notices: list[str] = []
    truncated = 0
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) > max_bytes:
        truncated = len(encoded) - max_bytes
        text = head_and_tail(encoded, max_bytes).decode("utf-8", errors="ignore")
        notices.append(f"input was {len(encoded):,} bytes; only its first and last {max_bytes // 2:,} were read")
    if binary:
        notices.append("input looks binary; only its readable text was used")
    is_log = looks_like_log(text)
    cleaned = clean(text)
    lines = cleaned.split("\n")
    error_lines = [i for i, ln in enumerate(lines) if _ERROR_LINE.search(ln)]
    if not error_lines:  # a log with no error at all: its warnings are the next best clue
        error_lines = [i for i, ln in enumerate(lines) if _WARN_LINE.search(ln)]
    if not is_log and len(lines) > 1 and error_lines and any(_LOG_LINE.search(ln) for ln in lines):
        is_log = True
    return Prepared(
        text=cleaned.strip(),
        lines=lines,
        error_lines=error_lines,
        is_log=is_log,
        lang=detect_lang_of_strings(lines) if binary else detect_lang(lines),
        truncated_bytes=truncated,
        was_binary=binary,
        notices=notices,
    )
