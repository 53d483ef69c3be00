"""Structured key=value logging for the Slack layer, with secrets scrubbed from every record.

Rules: never log a token, the signing secret or a user's message text. Log lengths and fingerprints.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

LOGGER_NAME = "mindie_help.slack"

# Slack token shapes (bot, user, app-level, config, legacy workspace) and bearer headers.
_TOKEN = re.compile(r"\b(?:xox[abposer]|xapp|xoxe\.xox[bp])-[A-Za-z0-9-]{6,}")
_BEARER = re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?bearer\s+)[^\s'\",}]+")
_SECRETS: list[str] = []


def register_secret(value: str | None) -> None:
    """Remember a secret (e.g. the signing secret) so it is scrubbed from any log line that contains it."""
    if value and len(value) >= 6 and value not in _SECRETS:
        _SECRETS.append(value)


def scrub(text: str) -> str:
    text = _TOKEN.sub("[redacted-token]", text)
    text = _BEARER.sub(r"\1[redacted]", text)
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, "[redacted-secret]")
    return text


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with tokens and registered secrets removed (applies to any library's logs)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not break logging
            return True
        clean = scrub(message)
        if clean != message or record.args:
            record.msg = clean
            record.args = None
        if record.exc_info and not record.exc_text:
            formatter = logging.Formatter()
            record.exc_text = scrub(formatter.formatException(record.exc_info))
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def _fmt_value(value: Any) -> str:
    if isinstance(value, float):
        value = round(value, 3)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if text == "" or re.search(r"[\s=\"]", text):
        return json.dumps(text, ensure_ascii=False)
    return text


def kv(event: str, **fields: Any) -> str:
    """`event=name k=v ...`; values with spaces are quoted. None values are skipped."""
    parts = [f"event={event}"]
    parts += [f"{key}={_fmt_value(value)}" for key, value in fields.items() if value is not None]
    return " ".join(parts)


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


def log(level: int, event: str, **fields: Any) -> None:
    get_logger().log(level, kv(event, **fields))


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = f"ts={self.formatTime(record, '%Y-%m-%dT%H:%M:%S')} level={record.levelname.lower()} logger={record.name}"
        message = record.getMessage()
        if not message.startswith("event="):
            message = "msg=" + json.dumps(message, ensure_ascii=False)
        line = f"{base} {message}"
        if record.exc_info:
            line += " exc=" + json.dumps(scrub(self.formatException(record.exc_info)), ensure_ascii=False)
        elif record.exc_text:
            line += " exc=" + json.dumps(record.exc_text, ensure_ascii=False)
        return line


def install_redaction(logger: logging.Logger | None = None) -> None:
    """Add the redacting filter to every handler of the root logger (idempotent)."""
    root = logger or logging.getLogger()
    for handler in root.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def configure_logging(level: str = "INFO", structured: bool = True) -> None:
    """Set up stderr logging if nobody did, quiet noisy libraries, and scrub secrets everywhere."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(KeyValueFormatter() if structured else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    # slack_sdk logs request/response details at DEBUG; keep them out unless explicitly asked.
    if root.level > logging.DEBUG:
        for name in ("slack_sdk", "slack_bolt", "urllib3"):
            logging.getLogger(name).setLevel(max(root.level, logging.WARNING))
    install_redaction(root)
