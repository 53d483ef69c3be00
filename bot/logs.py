"""Structured logs on stderr; anything that looks like a Slack token or secret is masked before output."""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_SECRET = re.compile(r"xox[abposr]-[A-Za-z0-9-]+|xapp-[A-Za-z0-9-]+|(?i:signing[_ ]secret\W+)\S+|v0=[0-9a-f]{64}")


def redact(text: str) -> str:
    return _SECRET.sub("[redacted]", text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, ensure_ascii=False)


class PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str = "INFO", as_json: bool = True) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if as_json else PlainFormatter("%(levelname)s %(name)s %(message)s"))
    # The handler's own level also holds back libraries that lower their loggers' levels after import.
    handler.setLevel(level.upper())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("sentence_transformers", "transformers", "urllib3", "filelock", "jieba", "bm25s", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
