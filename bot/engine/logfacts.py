"""Values a user's log states about their own setup (port, address, model folder, library, device id, NIC, pid),
used to fill a command's {placeholder} when no signature captured it: a `Failed to listen 172.17.0.3:40032` log
gets `lsof -i :40032`, not `lsof -i :{port}`.

Every pattern is RE2 (linear time) and runs on lines already capped by the normaliser; the first value found in
the error lines wins, then the first anywhere. A value still has to pass placeholders.safe_value() for the
placeholder it fills (a "path" holding `$(...)` is never pasted into a command).
"""

from __future__ import annotations

import re2

from bot.corpus.loader import re2_options
from bot.corpus.schema import PLACEHOLDER

MAX_LINE = 4_000
MAX_LINES = 2_000

# fact name -> patterns; group 1 is the value. Ordered from the most to the least specific.
_PATTERNS: dict[str, list[str]] = {
    "port": [
        r"(?i)\bport[\s:=\[]+(\d{2,5})\b",
        r"\b(?:\d{1,3}\.){3}\d{1,3}:(\d{2,5})\b",
        r"(?i)(?:localhost|0\.0\.0\.0|127\.0\.0\.1):(\d{2,5})\b",
        r"(?i)--port[= ](\d{2,5})\b",
    ],
    "ip": [
        r"(?i)\b(?:ip|host|addr(?:ess)?|listen(?: on)?)[\s:=\[]+((?:\d{1,3}\.){3}\d{1,3})\b",
        r"\b((?:\d{1,3}\.){3}\d{1,3}):\d{2,5}\b",
    ],
    "model_path": [
        r"(?i)\"?model_?weight_?path\"?\s*[:=]\s*\"?(/[^\s\"',]+)",
        r"(?i)\"?model_?(?:path|dir|name_or_path)\"?\s*[:=]\s*\"?(/[^\s\"',]+)",
        r"(?i)(?:vllm serve|--model[= ]|--model-path[= ]|model=)\s*[\"']?(/[^\s\"',)]+)",
        r"(/[^\s\"',:]*/(?:models?|weights?|ckpt|checkpoints?)/[^\s\"',:]+?)/config\.json",
    ],
    "lib": [
        r"(lib[A-Za-z0-9_+.\-]+\.so(?:\.[0-9]+)*)\s*:\s*cannot open shared object file",
        r"(?i)(?:fail(?:ed)? to (?:open|load) library|cannot load)[:\s]+\S*?/?(lib[A-Za-z0-9_+.\-]+\.so(?:\.[0-9]+)*)",
        r"/(lib[A-Za-z0-9_+.\-]+\.so(?:\.[0-9]+)*)\s*:\s*(?:undefined symbol|cannot allocate memory in static TLS block)",
    ],
    "lib_path": [
        r"(/\S+/lib[A-Za-z0-9_+.\-]+\.so(?:\.[0-9]+)*)\s*:\s*(?:undefined symbol|cannot allocate memory in static TLS block|cannot open shared object)",
    ],
    "device": [
        r"(?i)invalid device(?: id)?\s*[=:]?\s*(\d{1,2})\b",
        r"(?i)\bdevice(?:_?id)?[\s:=\[]+(\d{1,2})\b",
        r"(?i)\bnpu:(\d{1,2})\b",
    ],
    "ifname": [
        r"\b((?:eth|enp|ens|eno|bond|ib)[0-9][A-Za-z0-9]*)\b",
    ],
    "pid": [
        r"(?i)\bpid[\s:=\[]+(\d{2,8})\b",
    ],
}

# Placeholder names in the corpus -> the fact that fills them.
ALIASES: dict[str, str] = {
    "port": "port", "master_port": "port", "server_port": "port",
    "ip": "ip", "host": "ip", "server_ip": "ip", "master_addr": "ip",
    "model_path": "model_path", "model_dir": "model_path", "weights_dir": "model_path",
    "lib": "lib", "lib_path": "lib_path",
    "device": "device", "device_id": "device",
    "ifname": "ifname", "nic": "ifname",
    "pid": "pid",
}

_COMPILED: dict[str, list[re2._Regexp]] | None = None


def _compiled() -> dict[str, list["re2._Regexp"]]:
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = {name: [re2.compile(p, re2_options()) for p in patterns] for name, patterns in _PATTERNS.items()}
    return _COMPILED


def log_facts(lines: list[str], error_lines: list[int] | None = None) -> dict[str, str]:
    """fact name -> value, from the error lines first, then from every line (at most MAX_LINES of them)."""
    order = list(dict.fromkeys([i for i in (error_lines or []) if 0 <= i < len(lines)] + list(range(min(len(lines), MAX_LINES)))))
    found: dict[str, str] = {}
    for name, patterns in _compiled().items():
        for pattern in patterns:
            for i in order:
                match = pattern.search(lines[i][:MAX_LINE])
                if match and match.group(1):
                    found[name] = match.group(1)
                    break
            if name in found:
                break
    return found


def captures_for(facts: dict[str, str]) -> dict[str, str]:
    """The facts under every placeholder name that they fill."""
    return {alias: facts[fact] for alias, fact in ALIASES.items() if fact in facts}


class LogFacts:
    """The placeholder values a log offers, read on first use: most answers fill every placeholder from what
    their signatures captured, and reading a megabyte paste for facts costs tens of milliseconds."""

    def __init__(self, lines: list[str], error_lines: list[int], code: str | None = None) -> None:
        self._lines, self._error_lines, self._code = lines, error_lines, code
        self._captures: dict[str, str] | None = None

    def captures(self) -> dict[str, str]:
        if self._captures is None:
            self._captures = captures_for(log_facts(self._lines, self._error_lines))
            if self._code:
                self._captures.setdefault("code", self._code)
        return self._captures

    def fill_in(self, captured: dict[str, str], templates: list[str]) -> dict[str, str]:
        """`captured` (what signatures caught wins), completed with the log's facts when a template needs more."""
        wanted = {name for template in templates for name in PLACEHOLDER.findall(template)}
        if wanted <= captured.keys():
            return captured
        return {**self.captures(), **captured}
