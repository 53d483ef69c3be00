"""Structured logs on stderr. Every record passes a filter that masks Slack tokens, bearer headers and
registered secrets, whichever library wrote it; the bot logs lengths and fingerprints, never message text."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any

LOGGER_NAME = "mindie_help"

# Slack token shapes (bot, user, app-level, config, legacy workspace), bearer headers, request signatures.
_TOKEN = re.compile(r"\b(?:xox[abposer]|xapp|xoxe\.xox[bp])-[A-Za-z0-9-]{6,}")
_BEARER = re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?bearer\s+)[^\s'\",}]+")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
_SECRETS: list[str] = []


def register_secret(value: str | None) -> None:
    """Remember a secret (e.g. the signing secret) so it is masked in any log line that contains it."""
    if value and len(value) >= 6 and value not in _SECRETS:
        _SECRETS.append(value)


def scrub(text: str) -> str:
    text = _TOKEN.sub("[redacted-token]", text)
    text = _BEARER.sub(r"\1[redacted]", text)
    text = _SIGNATURE.sub("v0=[redacted]", text)
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, "[redacted-secret]")
    return text


class RedactingFilter(logging.Filter):
    """Rewrites a record with secrets removed before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not break logging
            return True
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
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
    """`event=name k=v ...`; values with spaces are quoted; None values are left out."""
    parts = [f"event={event}"]
    parts += [f"{key}={_fmt_value(value)}" for key, value in fields.items() if value is not None]
    return " ".join(parts)


def get_logger(name: str = LOGGER_NAME) -> logging.Logger:
    return logging.getLogger(name)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_text:
            payload["exc"] = record.exc_text
        return json.dumps(payload, ensure_ascii=False)


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = f"ts={self.formatTime(record, '%Y-%m-%dT%H:%M:%S')} level={record.levelname.lower()} logger={record.name}"
        message = record.getMessage()
        if not message.startswith("event="):
            message = "msg=" + json.dumps(message, ensure_ascii=False)
        line = f"{base} {message}"
        if record.exc_text:
            line += " exc=" + json.dumps(record.exc_text, ensure_ascii=False)
        return line


class LibraryDebugFilter(logging.Filter):
    """At DEBUG, only the bot's own loggers speak DEBUG: the Slack SDK logs whole request bodies (message text,
    users' pastes) at DEBUG, and Bolt and urllib3 log payload details there too (issue #11, finding 7)."""

    OWN = ("mindie_help", "bot.")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG:
            return True
        name = record.name
        return (name == "mindie_help" or name.startswith(self.OWN)) and not name.startswith("mindie_help.bolt")


def setup_logging(level: str = "INFO", as_json: bool = True) -> None:
    level = level.upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if as_json else KeyValueFormatter())
    handler.addFilter(LibraryDebugFilter())
    handler.addFilter(RedactingFilter())
    # The handler's own level also holds back libraries that lower their loggers' levels after import.
    handler.setLevel(level)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    quiet = ("sentence_transformers", "transformers", "urllib3", "filelock", "jieba", "bm25s", "httpx", "slack_sdk", "slack_bolt", "faiss")
    for noisy in quiet:  # slack_sdk logs request bodies at DEBUG: never below INFO, whatever the level asked
        logging.getLogger(noisy).setLevel(logging.WARNING if logging.getLevelName(level) > logging.DEBUG else logging.INFO)
