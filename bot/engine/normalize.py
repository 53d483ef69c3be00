"""Turn whatever a user pasted into clean lines, find the error-bearing ones, and mask variable parts.

Every step is linear in the size of the input, whatever the input (issue #11: one message with a long run of
spaces or unclosed Slack markup froze the bot for minutes under Python's backtracking `re`). Line patterns run
on RE2; Slack markup, code fences, ANSI escapes and control characters are taken apart by hand-written scanners
built on str methods, which also keeps hostile inputs with a match every few characters fast (RE2's Python
wrapper costs microseconds per match). This module does not use `re`.
"""

from __future__ import annotations

import html
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import BinaryIO

import re2


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 8 << 20
    return options


def _compile(pattern: str) -> re2._Regexp:
    return re2.compile(pattern, _options())


# RE2's \w, \d, \s and \b are ASCII; Python's (which the corpus and the labelled sets were written against) are
# Unicode: "端口1025" has no word boundary before 1025. These classes give the line patterns Python's meaning.
_W = r"\p{L}\p{N}_"  # Python's \w: str.isalnum() or "_"
_NOT_W = rf"[^{_W}]"
_WB_START = rf"(?:^|{_NOT_W})"  # a \b before a word character; it consumes a character, so only for yes/no patterns
_WB_END = rf"(?:{_NOT_W}|$)"  # a \b after a word character
_D = r"\p{Nd}"  # Python's \d
_S = r"[\t\x0b\x0c\r\x1c-\x1f \x{85}\p{Z}]"  # Python's \s (str.isspace()) without the newline: patterns see one line
_NOT_S = r"[^\t\n\x0b\x0c\r\x1c-\x1f \x{85}\p{Z}]"  # Python's \S
# The same, for line patterns elsewhere (bot/environment): RE2, and Python's meaning of the classes.
compile_linear = _compile
PY_W, PY_D, PY_S, PY_NOT_S = _W, _D, _S, _NOT_S

_ERROR_LINE = _compile(
    r"(?m)ERROR|Error|error[:\]]|Exception|Traceback|FAIL|[Ff]ail(?:ed|ure)?" + _WB_END + "|" + _WB_START + "fault" + _WB_END
    + r"|core ?dump|Segmentation fault|refused|denied|cannot|can't|not found|No such file|undefined symbol|timed? ?out|"
    r"no response|报错|错误|失败|异常|超时|"
    + _WB_START + "MIE" + _D + "{2}[EWI][0-9A-F]{6,7}" + _WB_END + "|" + _WB_START + "E[A-Z]" + _D + "{4}" + _WB_END
)
_WARN_LINE = _compile("(?m)" + _WB_START + "WARN(?:ING)?" + _WB_END + r"|\[W(?:ARN)?\]|警告")
_FINAL_EXCEPTION = _compile(
    "^" + _S + "*(?:[A-Za-z_][" + _W + ".]*(?:Error|Exception|Interrupt|Exit)|[" + _W + ".]*Error)" + _WB_END
)
_FINAL_WORDS = ("Error", "Exception", "Interrupt", "Exit")  # a cheap test before the pattern: most lines have none
# "(?m)" so that one search over a whole text finds log lines without a call per line; `[^"\n]` keeps a match on
# its own line. `\s{2,}at` (a Java frame) follows the optional leading blanks, as in `^\s*...|\s{2,}at` before.
_LOG_LINE = _compile(
    "(?m)^(?:" + _S + "*(?:\\[?" + _D + "{4}-" + _D + "{2}-" + _D + "{2}[ T]" + _D + "{2}:" + _D + "{2}|"
    "\\[?" + _D + "{2}:" + _D + "{2}:" + _D + "{2}|"
    r"\[(?:INFO|WARN|WARNING|ERROR|DEBUG|error|info|warn)\]|"
    "(?:INFO|WARN|WARNING|ERROR|DEBUG|CRITICAL|FATAL)" + _WB_END + "|"
    "File \"[^\"\\n]+\", line " + _D + "+|Traceback \\(most recent call last\\)|"
    "[EWIF]" + _D + "{4} " + _D + "{2}:" + _D + "{2})|" + _S + "{2,}at [" + _W + ".$]+\\()"
)
# Bytes twins for searching a long text from an offset: RE2's Python wrapper re-encodes a str (and counts
# characters up to the offset) on every call, so repeated searches over a str are quadratic; over bytes they
# are not. "(?m)" above lets ^ match at the line start a search begins from.
_ERROR_BYTES = re2.compile(_ERROR_LINE.pattern.encode(), _options())
_WARN_BYTES = re2.compile(_WARN_LINE.pattern.encode(), _options())
_LOG_BYTES = re2.compile(_LOG_LINE.pattern.encode(), _options())

# Masks for lexical/dense matching: values that differ between users' logs carry no meaning. They run on an ASCII
# "shadow" of the text (see _shadow), where RE2's ASCII \b, \w and \d mean what Python's Unicode ones mean.
# The shadow writes every digit as an ASCII one, so a hex mask whose match holds another script's digit is
# refused (the last field): Python's [0-9a-f] is ASCII, and such a digit is a word character that no \b
# can sit next to, so Python finds no match there either.
_MASKS: list[tuple[re2._Regexp, bytes, bool]] = [
    (re2.compile(rb"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", _options()), b" ", False),
    (re2.compile(rb"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", _options()), b" ", False),
    (re2.compile(rb"\b0x[0-9a-fA-F]+\b", _options()), b" ", True),
    (re2.compile(rb"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b", _options()), b" ip ", False),
    (re2.compile(rb"(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}/?", _options()), b" path ", False),
    (re2.compile(rb"\b[0-9a-f]{16,}\b", _options()), b" ", True),
]
_DIGITS = b"0123456789"
_ONE_DIGIT = bytes.maketrans(b"123456789", b"000000000")  # every digit "0": one find() jumps to the next digit
_ASCII_WORD = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
MASK_INPUT_CHARS = 20_000  # retrievers read at most 4,000 masked characters; this much input always yields them

_CJK = _compile(r"[\x{3400}-\x{4dbf}\x{4e00}-\x{9fff}\x{f900}-\x{faff}]")
_FENCE_TAG = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-"
_LINK_SCHEMES = ("http", "mailto", "file", "ftp")
_CSI_PARAMETERS = "".join(map(chr, range(0x30, 0x40)))  # 0-9:;<=>?
_CSI_INTERMEDIATES = "".join(map(chr, range(0x20, 0x30)))  # space to /
# C0 controls but tab, newline and carriage return, and DEL; for terminals also C1 (U+009B is an 8-bit CSI).
_CONTROL_CODES = [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]
_CONTROL_TO_SPACE = {code: " " for code in _CONTROL_CODES}
_TERMINAL_UNSAFE_TO_SPACE = {**_CONTROL_TO_SPACE, 0x0D: " ", **{code: " " for code in range(0x80, 0xA0)}}
_BINARY_BYTES = bytes(b for b in range(32) if b < 9 or 13 < b)  # what looks_binary counts
_TEXT_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"
BINARY_WINDOW = 8192
OMITTED = "[... {n:,} bytes omitted by mindie-help ...]"
MAX_LINES = 20_000  # lines the retrievers look at; a longer paste keeps its head, its tail and its error lines
MAX_KEPT_LINE = 8_000  # bytes of one middle error line kept by sampling (signatures read no further)


def _is_readable(code: int) -> bool:
    """What `strings` would keep of a binary paste: printable ASCII, tab, CJK and full-width punctuation."""
    return code == 9 or 0x20 <= code <= 0x7E or 0x3000 <= code <= 0x303F or 0x4E00 <= code <= 0x9FFF or 0xFF00 <= code <= 0xFFEF


class _ReadableTable(dict):
    """str.translate table: readable characters kept, every other one turned into a NUL separator."""

    def __missing__(self, code: int) -> int:
        value = code if _is_readable(code) else 0
        if code < 0x10000:  # the cache stays bounded by the BMP
            self[code] = value
        return value


class _ShadowTable(dict):
    """str.translate table for _shadow: non-ASCII decimals -> "0", other word characters -> "_", the rest -> \\x01."""

    def __missing__(self, code: int) -> int:
        char = chr(code)
        value = code if code < 128 else 0x30 if char.isdecimal() else 0x5F if char.isalnum() else 0x01
        if code < 0x10000:
            self[code] = value
        return value


_READABLE = _ReadableTable()
_SHADOW = _ShadowTable()


# --- the prepared text ----------------------------------------------------------------------------


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
    _log_flags: list[bool] | None = field(default=None, repr=False, compare=False)

    def log_flags(self) -> list[bool]:
        """Which lines look like log lines (computed once: focus and language detection both need it)."""
        if self._log_flags is None:
            self._log_flags = log_line_flags(self.lines)
        return self._log_flags

    def _prose(self) -> list[str]:
        return [ln for ln, logged in zip(self.lines, self.log_flags()) if ln.strip() and not logged]

    @property
    def focus(self) -> str:
        """Text the lexical and dense retrievers read: the error lines of a log, or the whole question."""
        if self.was_binary:  # the readable strings of random bytes hold chance words; trust only error lines
            return _mask_head("\n".join(self.lines[i] for i in focus_line_indices(self)))
        if not self.is_log:
            return _mask_head(self.text)
        prose = self._prose()
        if not self.error_lines:  # a log with nothing wrong in it: only the user's own words and its last lines
            tail = [ln for ln in self.lines[-200:] if ln.strip()][-5:]
            return _mask_head("\n".join(prose[:3] + tail))
        chosen = focus_line_indices(self)
        parts = [self.lines[i] for i in chosen]
        asked = [ln for ln in prose if has_cjk(ln)]
        return _mask_head("\n".join(asked[:3] + parts))

    def focus_on_root(self, root_line: int, root_text: str, skip: set[int], causes: dict[int, str]) -> str:
        """The focus of a log whose root error is known: that cause first, then the other error lines with
        echoes (aftermath lines) left out and wrapper lines read at the cause they quote."""
        if self.was_binary or not self.is_log:
            return self.focus
        chosen = [i for i in focus_line_indices(self) if i not in skip and i != root_line]
        prose = [ln for ln in self._prose() if has_cjk(ln)]
        return _mask_head("\n".join(prose[:3] + [root_text] + [causes.get(i, self.lines[i]) for i in chosen]))


def reduce_to_focus(prepared: Prepared, limit: int = 12) -> Prepared:
    """The prepared text cut down to the lines that matter most (first error, final exception and the error
    lines between, at most `limit`): what is left to read when an answer's time budget has run out."""
    keep = focus_line_indices(prepared, limit)
    if not keep:
        written = [i for i, line in enumerate(prepared.lines) if line.strip()]
        keep = sorted(set(written[: limit // 2] + written[-(limit // 2) :]))
    errors = set(prepared.error_lines)
    flags = prepared.log_flags()
    lines = [prepared.lines[i][:MAX_KEPT_LINE] for i in keep]
    return Prepared(
        text="\n".join(lines),
        lines=lines,
        error_lines=[n for n, i in enumerate(keep) if i in errors],
        is_log=prepared.is_log,
        lang=prepared.lang,
        truncated_bytes=prepared.truncated_bytes,
        was_binary=prepared.was_binary,
        notices=prepared.notices + ["the time budget ran out, so only the first error, the final exception and the error lines between were read"],
        _log_flags=[flags[i] for i in keep],
    )


def is_error_line(line: str) -> bool:
    return _ERROR_LINE.search(line) is not None


def is_log_line(line: str) -> bool:
    return _LOG_LINE.search(line) is not None


class JoinedLines:
    """Lines joined once as UTF-8 bytes (RE2 works on bytes; a str is re-encoded on every call), with where each line
    starts, so a pattern can search the whole text and jump from one matching line to the next."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.data = "\n".join(lines).encode("utf-8", "surrogatepass")
        self.starts = [0]
        at = self.data.find(b"\n")
        while at != -1:
            self.starts.append(at + 1)
            at = self.data.find(b"\n", at + 1)

    def matching(self, pattern: re2._Regexp, limit: int | None = None) -> list[int]:
        """Indices of the lines a bytes pattern matches, in order, at most `limit`: one RE2 search per matching
        line over the joined bytes, rather than one call per line (each costs microseconds in RE2's wrapper). The
        search goes on from the start of the next line, so each line is listed once."""
        data, starts = self.data, self.starts
        found: list[int] = []
        pos = 0
        while (limit is None or len(found) < limit) and (match := pattern.search(data, pos)) is not None:
            at = match.start() + (data[match.start() : match.start() + 1] == b"\n")  # a \b consumed at line end
            n = bisect_right(starts, at) - 1
            found.append(n)
            if n + 1 >= len(starts):
                break
            pos = starts[n + 1]
        return found


def matching_lines(pattern: re2._Regexp, lines: list[str], limit: int | None = None) -> list[int]:
    """JoinedLines(lines).matching(pattern, limit), for a single search over the lines."""
    return JoinedLines(lines).matching(pattern, limit)


def log_line_flags(lines: list[str]) -> list[bool]:
    """is_log_line for every line."""
    flags = [False] * len(lines)
    for n in matching_lines(_LOG_BYTES, lines):
        flags[n] = True
    return flags


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
        line = prepared.lines[i]
        if any(word in line for word in _FINAL_WORDS) and _FINAL_EXCEPTION.search(line):
            return i
    return None


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


# --- decoding and binary input --------------------------------------------------------------------


def looks_binary(data: bytes) -> bool:
    """A NUL, or more than 10 % control bytes, in the first 8 KB."""
    return _binary_window(data[:BINARY_WINDOW])


def _binary_window(window: bytes) -> bool:
    if not window:
        return False
    return b"\x00" in window or (len(window) - len(window.translate(None, _BINARY_BYTES))) / len(window) > 0.1


def _binary_text_window(window: str) -> bool:
    """looks_binary for text already decoded (a Slack message, or a file decoded before)."""
    if not window:
        return False
    raw = window.encode("utf-8", "surrogatepass")  # control characters are single bytes in UTF-8
    return "\x00" in window or (len(raw) - len(raw.translate(None, _TEXT_CONTROL_BYTES))) / len(window) > 0.1


def binary_offset(data: str | bytes) -> int | None:
    """Where binary content starts (0: all of it; None: nowhere), judged in 8 KB windows, so that a log with a
    core dump or a tarball appended is read as the log it starts with."""
    test = _binary_window if isinstance(data, bytes) else _binary_text_window
    for start in range(0, len(data), BINARY_WINDOW):
        if test(data[start : start + BINARY_WINDOW]):  # type: ignore[arg-type]
            return start
    return None


def scrub_surrogates(text: str) -> str:
    """Replace lone surrogates (a "\\ud800" in Slack's JSON, undecodable argv bytes) with U+FFFD: nothing
    downstream (RE2, SQLite, JSON output, the terminal) can encode them."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _utf16(data: bytes) -> str | None:
    """UTF-16 text (Windows tools write it, often with a BOM): decoded, or None when the bytes are not UTF-16."""
    if data.startswith(b"\xff\xfe"):
        return data[2:].decode("utf-16-le", "replace")
    if data.startswith(b"\xfe\xff"):
        return data[2:].decode("utf-16-be", "replace")
    sample = data[:BINARY_WINDOW]
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    # ASCII in UTF-16: every other byte is zero, and almost never the other ones
    if odd.count(0) > 0.6 * len(odd) and even.count(0) < 0.05 * len(even):
        return data.decode("utf-16-le", "replace")
    if even.count(0) > 0.6 * len(even) and odd.count(0) < 0.05 * len(odd):
        return data.decode("utf-16-be", "replace")
    return None


def decode_bytes(data: bytes) -> str:
    """UTF-16 when it is; UTF-8 (a cut multi-byte tail tolerated); GB18030 (common for Chinese logs); lenient UTF-8."""
    utf16 = _utf16(data)
    if utf16 is not None:
        return utf16
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8").removeprefix("\ufeff")
    try:
        return data.decode("gb18030")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def decode_input(data: str | bytes) -> tuple[str, int | None]:
    """The text of an input, free of lone surrogates, and the character offset where binary content starts
    (None when it is all text)."""
    if isinstance(data, bytes):
        utf16 = _utf16(data)
        if utf16 is not None:
            data = utf16
        else:
            offset = binary_offset(data)
            if offset is None:
                return decode_bytes(data), None
            head = decode_bytes(data[:offset]) if offset else ""
            return head + data[offset:].decode("utf-8", errors="replace"), len(head)
    text = scrub_surrogates(data)
    return text, binary_offset(text)


def readable_runs(text: str) -> str:
    """The readable strings of a binary paste (runs of 4 or more readable characters), one per line."""
    return "\n".join(run for run in text.translate(_READABLE).split("\x00") if len(run) >= 4)


# --- Slack markup, ANSI, control characters ------------------------------------------------------


def _strip_fences(text: str) -> str:
    """Remove ``` fences, keeping the user's line numbers: a fence on a line of its own (with or without a language
    tag) leaves that line empty; a fence glued to code (how Slack sends a code block: ```[ERROR] ...) goes
    without a trace, so the code keeps its line. A tag is only a tag when the line ends after it: the glued
    "```RuntimeError: ..." keeps its first word."""
    if "```" not in text:
        return text
    parts = text.split("```")
    out = [parts[0]]
    last = parts[0][-1:]
    for part in parts[1:]:
        tag = len(part) - len(part.lstrip(_FENCE_TAG))
        if part[tag : tag + 1] == "\n":
            sep, rest = "\n", part[tag + 1 :]
        else:  # glued: nothing at a line's start; "text```code" puts the code on a line of its own
            sep, rest = ("" if last in ("", "\n") else "\n"), part
        out += [sep, rest]
        last = (sep + rest)[-1:] or last
    return "".join(out)


def _strip_inline_code(text: str) -> str:
    """`x` -> x. Backticks pair up left to right within a line; an odd last one stays."""
    if "`" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        count = line.count("`")
        if count % 2 == 0:
            if count:
                lines[i] = line.replace("`", "")
        else:
            last = line.rfind("`")
            lines[i] = line[:last].replace("`", "") + line[last:]
    return "\n".join(lines)


def _slack_id(value: str) -> bool:
    return bool(value) and value.isascii() and value.isalnum() and value == value.upper()


def _no_space(value: str) -> bool:
    return value.split(None, 1) == [value]


def _markup(content: str) -> str | None:
    """What one `<...>` of Slack markup reads as, or None when it is not markup."""
    head, bar, label = content.partition("|")
    kind = content[:1]
    if kind == "@":  # <@U123> or <@U123|name>
        return " " if head[1:2] in ("U", "W") and _slack_id(head[2:]) else None
    if kind == "!":  # <!here>, <!channel>, <!everyone>, <!subteam^S123|@team>
        special = head in ("!here", "!channel", "!everyone") or (head.startswith("!subteam^") and _slack_id(head[9:]))
        return " " if special else None
    if kind == "#":  # <#C123|name>
        return "#" + (label or "channel") if head[1:2] in ("C", "G") and _slack_id(head[2:]) else None
    if content.startswith(_LINK_SCHEMES):  # <https://x|label> or <https://x>
        if bar:
            return (label or head) if _no_space(head) else None
        return content if _no_space(content) else None
    return None


def _replace_markup(text: str, users_only: bool = False) -> str:
    """Mentions and links: each `<` is matched with the next `>` unless another `<` comes first (Slack escapes
    both inside markup), so every character is looked at a bounded number of times."""
    opener = "<@" if users_only else "<"
    start = text.find(opener)
    if start == -1:
        return text
    out: list[str] = []
    done = 0
    close = -1
    while start != -1:
        if close < start:
            close = text.find(">", start + 1)
            if close == -1:
                break
        inner = text.find("<", start + 1, close)
        if inner != -1:
            start = text.find(opener, inner)
            continue
        content = text[start + 1 : close]
        replacement = _markup(content) if not users_only or content[:1] == "@" else None
        if replacement is not None:
            out.append(text[done:start])
            out.append(replacement)
            done = close + 1
        start = text.find(opener, close + 1)
    out.append(text[done:])
    return "".join(out)


def strip_mentions(text: str) -> str:
    """Only the user mentions (<@U123>) replaced by a space: what the Slack layer reads a message without."""
    return _replace_markup(text, users_only=True)


def _strip_ansi(text: str) -> str:
    """ANSI escape sequences removed: CSI (colours, cursor), OSC (titles, clipboard) ended by BEL or ESC \\,
    and two-character escapes. An ESC that starts none of them is left for the control-character pass."""
    if "\x1b" not in text:
        return text
    parts = text.split("\x1b")
    out = [parts[0]]
    i = 1
    while i < len(parts):
        part = parts[i]
        first = part[:1]
        if first == "[":
            rest = part[1:].lstrip(_CSI_PARAMETERS).lstrip(_CSI_INTERMEDIATES)
            if rest and "@" <= rest[0] <= "~":
                out.append(rest[1:])
                i += 1
                continue
        elif first == "]":
            bell = part.find("\x07")
            if bell != -1:
                out.append(part[bell + 1 :])
                i += 1
                continue
            if i + 1 < len(parts) and parts[i + 1].startswith("\\"):  # ended by ESC \
                out.append(parts[i + 1][1:])
                i += 2
                continue
        if first and ("@" <= first <= "Z" or "\\" <= first <= "_"):
            out.append(part[1:])
        else:
            out.append("\x1b" + part)
        i += 1
    return "".join(out)


def strip_control(text: str) -> str:
    """Control characters (C0 but tab and newlines, DEL, C1) as spaces, after ANSI sequences are removed:
    what is left is safe to print to a terminal."""
    return _strip_ansi(scrub_surrogates(text)).translate(_TERMINAL_UNSAFE_TO_SPACE)


def clean_slack(text: str) -> str:
    text = _strip_fences(text)
    text = _strip_inline_code(text)
    text = _replace_markup(text)
    # Slack escapes only &, < and >; html.unescape also handles the rare numeric entity. Its own pattern is
    # bounded ({1,32} characters per entity), so it is linear too.
    return html.unescape(text) if "&" in text else text


def clean(text: str) -> str:
    text = scrub_surrogates(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _strip_ansi(text)
    text = clean_slack(text)
    return text.translate(_CONTROL_TO_SPACE)


# --- masks ----------------------------------------------------------------------------------------


def _shadow(text: str) -> bytes:
    """An ASCII stand-in of the text, one byte per character: ASCII as is, other digits "0", other word
    characters "_", anything else \\x01. RE2's ASCII \\b, \\w and \\d on it are Python's on the text."""
    if text.isascii():
        return text.encode("ascii")
    return text.translate(_SHADOW).encode("ascii")


def _digits_end(shadow: bytes, i: int) -> int:
    """The end of the run of digits starting at i."""
    while True:
        chunk = shadow[i : i + 64]
        rest = chunk.lstrip(_DIGITS)
        if rest or len(chunk) < 64:
            return i + len(chunk) - len(rest)
        i += 64


def _mask_numbers(text: str, shadow: bytes) -> str:
    """`(?<!\w)\d+(?:\.\d+)?(?!\w)` -> " ", as a scanner: RE2 has no look-arounds, and a match per number
    through its wrapper would make "1,1,1,..." slow. Each digit run is looked at once."""
    classes = shadow.translate(_ONE_DIGIT)
    out: list[str] = []
    done = 0
    size = len(shadow)
    i = classes.find(b"0")
    while i != -1:
        end = _digits_end(shadow, i)
        if i == 0 or shadow[i - 1] not in _ASCII_WORD:
            match = -1
            if end + 1 < size and shadow[end] == 0x2E and shadow[end + 1] in _DIGITS:  # a fraction
                frac = _digits_end(shadow, end + 1)
                if frac == size or shadow[frac] not in _ASCII_WORD:
                    match = frac
            if match == -1 and (end == size or shadow[end] not in _ASCII_WORD):
                match = end  # a fraction followed by a letter backs off to the integer before its "."
            if match != -1:
                out += [text[done:i], " "]
                done = end = match
        i = classes.find(b"0", end)
    out.append(text[done:])
    return "".join(out)


def mask(text: str) -> str:
    text = scrub_surrogates(text)
    shadow = _shadow(text)
    for pattern, replacement, ascii_only in _MASKS:
        pieces: list[str] = []
        shadow_pieces: list[bytes] = []
        done = 0
        for found in pattern.finditer(shadow):
            start, end = found.span()
            if ascii_only and not text[start:end].isascii():
                continue
            pieces += [text[done:start], replacement.decode()]
            shadow_pieces += [shadow[done:start], replacement]
            done = end
        if done:
            pieces.append(text[done:])
            shadow_pieces.append(shadow[done:])
            text, shadow = "".join(pieces), b"".join(shadow_pieces)
    text = _mask_numbers(text, shadow)
    # Collapse runs of blanks (spaces and tabs only, as before) without a pattern.
    return " ".join(part for part in text.replace("\t", " ").split(" ") if part).strip()


def _mask_head(text: str) -> str:
    return mask(text[:MASK_INPUT_CHARS])[:4000]


# --- language and log detection -------------------------------------------------------------------

def detect_lang(lines: list[str], flags: list[bool] | None = None) -> str:
    """'zh' when the person wrote Chinese, even around an English log: a Chinese user who pastes a long English
    traceback under one Chinese sentence reads Chinese. Lines flagged as log lines do not count unless nothing
    else is there. A prose line is Chinese when it is all Chinese ("谢谢！"), or holds two different Chinese
    characters making at least a tenth of its letters; so a Chinese folder name inside an English error line, or
    garbled output quoted in an English sentence ('ĠĠ的的的'), does not turn an English question into a Chinese one."""
    flags = flags if flags is not None else log_line_flags(lines)
    prose = [ln for ln, logged in zip(lines, flags) if not logged] or lines
    for line in prose[:2_000]:
        cjk, letters = _chinese_and_letters(line[:2_000])
        if cjk and (letters == len(cjk) or _mostly_chinese(cjk, letters)):
            return "zh"
    return "en"


def _chinese_and_letters(text: str) -> tuple[list[str], int]:
    """The text's Chinese characters, and its letters (those and ASCII letters). Most lines are ASCII: they have
    no Chinese, and then the letter count is never read, so it is not counted (0)."""
    if text.isascii():
        return [], 0
    cjk = [ch for ch in text if "\u3400" <= ch <= "\u4dbf" or "\u4e00" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"]
    return cjk, (len(cjk) + sum(1 for ch in text if ch.isascii() and ch.isalpha())) if cjk else 0


def _mostly_chinese(cjk: list[str], letters: int) -> bool:
    """Two different Chinese characters making at least a tenth of the letters."""
    return len(cjk) * 10 >= letters and len(set(cjk)) >= 2


def detect_lang_of_strings(lines: list[str]) -> str:
    """The language of a binary paste's readable strings, taken over all of them: random bytes decode to a stray
    run of Chinese characters now and then, which must not make the reply Chinese, while a short coloured
    Chinese line ('\x1b[31m错误') that counts as binary still reads as Chinese."""
    return "zh" if _mostly_chinese(*_chinese_and_letters("".join(line[:2_000] for line in lines[:2_000]))) else "en"


def looks_like_log(text: str) -> bool:
    """A pasted log or traceback rather than chat: a code block, a traceback, or several log-like lines."""
    if "```" in text or "Traceback (most recent call last)" in text:
        return True
    lines = clean(text[:200_000]).split("\n")
    log_like = len(matching_lines(_LOG_BYTES, lines, limit=3))
    return log_like >= 3 or (log_like >= 2 and bool(matching_lines(_ERROR_BYTES, lines, limit=1)))


# --- sampling long inputs -------------------------------------------------------------------------


class Sampler:
    """Read a paste of any size in bounded memory. All of it when it fits in max_bytes; otherwise its first and
    last 40 % and, in the 20 % between, the error lines of the middle (errors-first: in a long log the first
    error is rarely at either end), with a marker for each gap."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.head_cap = max_bytes * 2 // 5
        self.tail_cap = max_bytes * 2 // 5
        self.middle_cap = max_bytes - self.head_cap - self.tail_cap
        self.total = 0
        self._data = bytearray()  # everything while it fits; then the tail window
        self._head = b""
        self._middle: list[bytes] = []
        self._middle_used = 0
        self._omitted = 0  # bytes dropped since the last kept line
        self._sampling = False

    @property
    def truncated(self) -> bool:
        return self._sampling

    def feed(self, block: bytes) -> None:
        self.total += len(block)
        self._data += block
        if not self._sampling:
            if len(self._data) <= self.max_bytes:
                return
            self._sampling = True
            self._head = bytes(self._data[: self.head_cap])
            del self._data[: self.head_cap]
        if len(self._data) > 2 * self.tail_cap:  # evict in large steps: each byte is examined once
            self._evict(len(self._data) - self.tail_cap)

    def _evict(self, n: int) -> None:
        cut = self._data.rfind(b"\n", 0, n) + 1 or n  # keep whole lines in the tail when there are any
        region = bytes(self._data[:cut])
        del self._data[:cut]
        pos = 0
        while self._middle_used < self.middle_cap and (found := _ERROR_BYTES.search(region, pos)) is not None:
            at = found.start() + (region[found.start() : found.start() + 1] == b"\n")
            start = region.rfind(b"\n", 0, at) + 1
            end = region.find(b"\n", at)
            end = len(region) if end == -1 else end
            line = region[start : min(end, start + MAX_KEPT_LINE, start + self.middle_cap - self._middle_used)]
            self._omitted += start - pos
            if self._omitted:
                self._keep(OMITTED.format(n=self._omitted).encode())
                self._omitted = 0
            self._keep(line)
            self._omitted += end - start - len(line)
            pos = end + 1
        self._omitted += max(0, len(region) - pos)

    def _keep(self, line: bytes) -> None:
        self._middle.append(line)
        self._middle_used += len(line) + 1

    def result(self) -> bytes:
        if not self._sampling:
            return bytes(self._data)
        if len(self._data) > self.tail_cap:
            self._evict(len(self._data) - self.tail_cap)
        middle = self._middle + ([OMITTED.format(n=self._omitted).encode()] if self._omitted else [])
        return b"\n".join([self._head, *middle, bytes(self._data)])


def sample(data: bytes, max_bytes: int) -> bytes:
    """Errors-first sample of an input already in memory (see Sampler)."""
    sampler = Sampler(max_bytes)
    sampler.feed(data)
    return sampler.result()


def read_sampled(stream: BinaryIO, max_bytes: int, chunk: int = 1 << 16) -> tuple[bytes, int]:
    """Read a stream of any size in bounded memory, keeping what Sampler keeps; also return its size."""
    sampler = Sampler(max_bytes)
    while block := stream.read(chunk):
        sampler.feed(block)
    return sampler.result(), sampler.total


def sampling_notice(size: int, max_bytes: int, name: str = "input") -> str:
    part = max_bytes * 2 // 5
    return f"{name} is {size:,} bytes; only its first and last {part:,} bytes and the error lines between were read"


def _cap_lines(lines: list[str]) -> tuple[list[str], int]:
    """At most about MAX_LINES lines for the retrievers: the first and last 40 % and the error lines between,
    with a marker for each gap. Returns the lines and how many were left out."""
    if len(lines) <= MAX_LINES:
        return lines, 0
    head, tail = MAX_LINES * 2 // 5, MAX_LINES * 2 // 5
    middle = lines[head : len(lines) - tail]
    errors = matching_lines(_ERROR_BYTES, middle, limit=MAX_LINES - head - tail)
    kept: list[str] = []
    last = -1
    for n in errors + [len(middle)]:
        if n - last > 1:
            kept.append(OMITTED.format(n=sum(len(ln.encode("utf-8", "surrogatepass")) + 1 for ln in middle[last + 1 : n])))
        if n < len(middle):
            kept.append(middle[n])
        last = n
    return lines[:head] + kept + lines[len(lines) - tail :], len(middle) - len(errors)


def prepare(data: str | bytes, max_bytes: int = 1_000_000) -> Prepared:
    text, binary_from = decode_input(data)
    notices: list[str] = []
    binary = binary_from is not None
    if binary_from == 0:
        text = readable_runs(text)
        notices.append("input looks binary; only its readable text was used")
    elif binary_from is not None:
        text = text[:binary_from] + "\n" + readable_runs(text[binary_from:])
        notices.append("input is text followed by binary data; the text and the readable strings after it were used")
    truncated = 0
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) > max_bytes:
        kept = sample(encoded, max_bytes)
        truncated = len(encoded) - len(kept)
        text = kept.decode("utf-8", errors="ignore")
        notices.append(sampling_notice(len(encoded), max_bytes))
    is_log = looks_like_log(text)
    cleaned = clean(text)
    lines, dropped = _cap_lines(cleaned.split("\n"))
    if dropped:
        cleaned = "\n".join(lines)
        notices.append(f"input has more than {MAX_LINES:,} lines; {dropped:,} lines between its head and tail without an error were left out")
    error_lines = matching_lines(_ERROR_BYTES, lines)
    if not error_lines:  # a log with no error at all: its warnings are the next best clue
        error_lines = matching_lines(_WARN_BYTES, lines)
    flags = log_line_flags(lines)
    if not is_log and len(lines) > 1 and error_lines and any(flags):
        is_log = True
    return Prepared(
        text=cleaned.strip(),
        lines=lines,
        error_lines=error_lines,
        is_log=is_log,
        lang=detect_lang_of_strings(lines) if binary_from == 0 else detect_lang(lines, flags),
        truncated_bytes=truncated,
        was_binary=binary,
        notices=notices,
        _log_flags=flags,
    )
