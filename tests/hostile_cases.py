"""Hostile inputs: the ones issue #11 names (each froze the bot for seconds to minutes) and their relatives.

Shared by tests/test_hostile.py (normaliser and engine), tests/slack/test_slack_hostile.py (the running bot)
and bench/load_ack.py. Built on demand: several are a megabyte.
"""

from __future__ import annotations

from collections.abc import Callable

MB = 1_000_000
SOCKET_LINE = "[2025-03-11 10:22:41.502] [7321] [ERROR] [server] Socket bind failed, ip 127.0.0.1 port 1025"
OOM_LINE = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"

# The freezes the red team measured (issue #11, finding 1), at the sizes it used.
NAMED: dict[str, Callable[[], str | bytes]] = {
    "spaces-150kb-file": lambda: b" " * 150_000,  # a .log of spaces: 38-74 s
    "log-line-then-40k-spaces": lambda: SOCKET_LINE + "\n" + " " * 40_000,  # a DM: 8.4 s
    "spaces-1mb-line": lambda: " " * MB,  # past 90 s
    "closed-mentions-1e5": lambda: "<@U1>" * 100_000,  # 18.7 s
    "unclosed-user-mention": lambda: "<@U1|" * (MB // 5),
    "unclosed-here": lambda: "<!here|" * (MB // 7),
    "unclosed-channel": lambda: "<#C1|" * (MB // 5),
    "unclosed-link": lambda: "<http" * (MB // 5),
}

# Relatives: a match every few characters, many lines, long lines, odd encodings.
MORE: dict[str, Callable[[], str | bytes]] = {
    "backticks": lambda: "`" * MB,
    "code-fences": lambda: "```" * (MB // 3),
    "ansi-csi": lambda: "\x1b[m" * (MB // 3),
    "ansi-osc-unterminated": lambda: "\x1b]" * (MB // 2),
    "numbers": lambda: "1 " * (MB // 2),
    "numbers-commas": lambda: "1," * (MB // 2),
    "one-letter-lines": lambda: "a\n" * (MB // 2),
    "error-lines": lambda: "ERROR x\n" * (MB // 8),
    "signature-lines": lambda: (SOCKET_LINE + "\n") * (MB // 95),
    "one-error-line-1mb": lambda: "ERROR " + "x" * MB,
    "tabs-and-spaces": lambda: " \t" * (MB // 2),
    "ampersands": lambda: "&amp;&#" * (MB // 7),
    "cjk": lambda: "端口被占用" * (MB // 15),
    "control-characters": lambda: "\x01a" * (MB // 2),
    "lone-surrogates": lambda: "\ud800 ERROR \udfff" * 50_000,
    "invalid-utf8": lambda: b"\xff\xfe\xfd ERROR \xc3" * 100_000,
    "utf16le-log": lambda: ("\n".join([SOCKET_LINE] * 2000)).encode("utf-16-le"),
    "text-then-binary": lambda: ((SOCKET_LINE + "\n") * 100).encode() + bytes(range(256)) * 400,
    "just-over-1mb-error-in-middle": lambda: (
        ("[2025-03-11 10:00:00] [INFO] heartbeat ok\n" * 12_500) + OOM_LINE + "\n" + ("[2025-03-11 10:00:01] [INFO] heartbeat ok\n" * 12_500)
    ),
}

ALL: dict[str, Callable[[], str | bytes]] = {**NAMED, **MORE}
