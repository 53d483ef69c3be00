"""Find the line that is the cause, not the echo.

Real logs carry one root error and many echoes of it: wrapper exceptions that quote it ("... with exception:
NotImplementedError: ..."), later exceptions of a chain, CANN's repeated code lines, workers dying and launchers
giving up. The root is the first error in time that is not a known consequence, read at its innermost cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import re2

from bot.corpus.loader import re2_options
from bot.corpus.schema import Aftermath
from bot.engine.normalize import is_log_line

MAX_LINE = 8_000
_OPTIONS = re2_options()
# A cause quoted inside a wrapper's message; the text after the marker is the innermost cause.
_NESTED = re2.compile(
    r"(?i)(?:with exception|exception was|caused by|root cause|original error|error message(?: is)?|reason)\s*[:=]\s*(.{8,})",
    _OPTIONS,
)
# Lines that name an error but are scaffolding around it, never a cause of their own.
_SCAFFOLD = re2.compile(
    r"(?i)^\s*(?:Traceback \(most recent call last\)|File \"[^\"]*\", line \d+|The above exception was the direct cause|"
    r"During handling of the above exception|\^+\s*$|\[?ERROR\]?\s*$|raise\s|return\s|self\.|\w+\s*=|"
    r"E[A-Z0-9]\d{4}:? Inner Error!?\s*$)",
    _OPTIONS,
)
# A logger's own prefix (vLLM's "(Worker pid=1) ERROR 12-11 09:09:33 [file.py:822] ", older releases without the
# "["): its level says where the line was logged, not that the line is an error, so a traceback frame logged at
# ERROR stays scaffolding.
_LOG_PREFIX = re2.compile(
    r"^\s*(?:\([^)]{1,80}\)\s+)?(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\s+\[?[\w./-]{1,120}(?::\d+)?\]\s?",
    _OPTIONS,
)
_EXCEPTION = re2.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault))\s*(?::|$)", _OPTIONS)
_CANN_CODE = re2.compile(r"\bE[A-Z0-9]\d{4}\b", _OPTIONS)
# An exception raised in the middle of a line: a traceback flattened onto one line ("return x.normal_() RuntimeError:
# ..."), as pasted from a web page or an issue title.
_EXCEPTION_INSIDE = re2.compile(r"\s(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\s*:\s*\S", _OPTIONS)
_REASON = re2.compile(r"(?i)\breason\s*[:=]", _OPTIONS)
_CJK = re2.compile(r"[\x{4e00}-\x{9fff}]", _OPTIONS)
_TECHNICAL = re2.compile(r"[A-Za-z_]\w*(?:Error|Exception)\b|\[ERROR\]|\bERROR\b|\bE[A-Z0-9]\d{4}\b|\bMIE\d{2}|[A-Za-z]{3,}[ _][a-z]+ failed", _OPTIONS)
# A line pasted from a log or a traceback rather than typed by a person: it opens with an exception (a typed
# question may name one, but does not start with "RuntimeError: ...") or carries a logger's [ERROR] tag.
# A command-line tool's own error line ("docker: Error response from daemon: ...", pip's "ERROR: Could not find a
# version ...", "fatal: ...") is copied, not typed, just like an exception line or a logger's [ERROR].
_PASTED = re2.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)\s*:|.{0,80}\[(?:ERROR|error|E)\]"
                      r"|(?:[\w./-]{1,40}: )?(?:Error|ERROR|error|fatal|FATAL)(?: response from daemon)?: )", _OPTIONS)
# "this will produce the following error:", "报错如下：": a sentence that introduces the paste.
_INTRO = re2.compile(r"[:：]\s*$", _OPTIONS)
# An issue title as trackers template it: "[Bug]: ...", "[Installation]: ...", "【Ascend 310P】...".
_TITLE = re2.compile(r"(?i)^\s*(?:\[(?:bug|installation|usage|feature|question|performance|doc|misc|rfc|help)\]|【)", _OPTIONS)
NEAR = 8  # lines after the first error in which a CANN block's "Reason:" still belongs to it
_STRONG = re2.compile(
    r"(?i)\[ERROR\]|\bERROR\b|\bE[A-Z0-9]\d{4}\b|\bMIE\d{2}E[0-9A-F]{6,7}\b|\bfailed\b|\bfailure\b|\bexception\b|"
    r"segmentation fault|core dumped|\btimed? ?out\b|\berror\b|报错|失败|异常",
    _OPTIONS,
)


def looks_pasted(line: str) -> bool:
    """A line copied from a log or a traceback rather than typed by a person (who may quote an error in a sentence)."""
    return bool(is_log_line(line) or _PASTED.search(line[:MAX_LINE]))


@dataclass
class RootError:
    line_no: int  # 0-based
    text: str  # the whole line, as the user will recognise it
    cause: str  # the innermost cause on that line: the quoted exception of a wrapper, or the whole line

    @property
    def pasted(self) -> bool:
        """The root line came from a log or a traceback, not from the person's own sentence."""
        return looks_pasted(self.text)

    @property
    def focus(self) -> str:
        """What retrieval should read: a wrapper's quoted cause alone (the wrapper's words point elsewhere);
        otherwise the whole line, whose "Reason:" belongs with the message before it."""
        return self.cause if self.cause != self.text and not _REASON.search(self.text[:MAX_LINE]) else self.text


@dataclass
class RootAnalysis:
    root: RootError | None
    consequences: set[int] = field(default_factory=set)  # aftermath lines
    causes: dict[int, str] = field(default_factory=dict)  # line -> the cause quoted inside it
    # Lines whose quoted text is a CANN block's "Reason:": the message before it is the error itself, not a wrapper.
    reasoned: set[int] = field(default_factory=set)


class RootFinder:
    def __init__(self, aftermath: Aftermath | None):
        patterns = [rule.pattern for rule in aftermath.consequences] if aftermath else []
        self._aftermath = re2.Set.SearchSet(_OPTIONS)
        for pattern in patterns:
            self._aftermath.Add(pattern)
        self._aftermath.Compile()
        self._any = bool(patterns)

    def is_consequence(self, line: str) -> bool:
        return self._any and bool(self._aftermath.Match(line[:MAX_LINE]))

    def analyse(self, lines: list[str], error_lines: list[int]) -> RootAnalysis:
        # Aftermath lines need not look like errors ("main process disappeared!"), so every line is checked.
        consequences = {i for i, line in enumerate(lines) if line.strip() and self.is_consequence(line)}
        causes: dict[int, str] = {}
        reasoned: set[int] = set()
        candidates: list[int] = []
        for i in error_lines:
            line = lines[i][:MAX_LINE]
            if i in consequences:
                # "HCCL watchdog thread terminated with exception: ... EI0013 ..." is aftermath quoting its cause:
                # the quoted part is the error, so the line is read as a wrapper around it.
                quoted = _NESTED.search(line)
                if not quoted or self.is_consequence(quoted.group(1)) or not _STRONG.search(quoted.group(1)):
                    continue
                consequences.discard(i)
            prefix = _LOG_PREFIX.match(line)
            content = line[prefix.end():] if prefix else line
            if content.strip() and _SCAFFOLD.search(content):
                inside = _EXCEPTION_INSIDE.search(content)  # a flattened traceback: read from its exception on
                content = content[inside.start():] if inside else ""
            if not content.strip():
                continue
            nested = _NESTED.search(line)
            if nested:
                causes[i] = nested.group(1).strip()
                if _REASON.search(line):
                    reasoned.add(i)
            if _STRONG.search(content) or _EXCEPTION.search(content):
                candidates.append(i)
        # The user's own sentences ("运行时报错，...", "I'm getting this error:", an issue title "[Bug]: ... fails")
        # name the error but are not it: log lines come first.
        logged = [i for i in candidates if not self._typed(lines[i][:MAX_LINE])]
        root = self._pick(lines, logged or candidates, causes)
        return RootAnalysis(root=root, consequences=consequences, causes=causes, reasoned=reasoned)

    @staticmethod
    def _typed(line: str) -> bool:
        """A sentence the person wrote around the paste, not a line of it."""
        if _EXCEPTION.search(line) or _TECHNICAL.search(line):
            return False  # it names the error itself ("...报错 AssertionError: Invalid device id")
        return bool(_CJK.search(line) or _INTRO.search(line) or _TITLE.search(line))

    @staticmethod
    def _pick(lines: list[str], candidates: list[int], causes: dict[int, str]) -> RootError | None:
        """The first error in time, except that a CANN/ACL block's "Reason:" line right after it is the cause
        the block reports (wrappers such as "RuntimeError: ... error code is 11" print before it)."""
        if not candidates:
            return None
        first = candidates[0]
        near = [i for i in candidates if i - first <= NEAR]
        reasoned = [i for i in near if i in causes and _REASON.search(lines[i][:MAX_LINE])]
        coded = [i for i in reasoned if _CANN_CODE.search(lines[i][:MAX_LINE])]
        if coded or reasoned:
            first = (coded or reasoned)[0]
        text = lines[first].strip()[:2000]
        return RootError(line_no=first, text=text, cause=causes.get(first, text)[:2000])
