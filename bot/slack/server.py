"""HTTP mode: a small threaded HTTP server in front of Bolt.

POST /slack/events  events, slash commands and interactivity
GET  /healthz       JSON engine status

A request's v0 signature and timestamp are checked on the raw bytes before anything parses them (issue #11,
finding 10: unsigned junk got a 500 and a traceback each). A signed body is then parsed and sanitised
(bot/slack/payloads.py); what cannot be read gets a 400. Bolt receives the sanitised payload as JSON, signed
again with the same secret and timestamp, so its own verification still runs on exactly what it reads.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from slack_bolt import App, BoltRequest, BoltResponse

from bot.logs import get_logger, kv
from bot.slack.payloads import sanitize

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
MAX_BODY_BYTES = 8 * 1024 * 1024  # Slack payloads are far smaller; this only guards memory
SOCKET_TIMEOUT = 30.0
MAX_CLOCK_SKEW = 300  # seconds, as Slack and Bolt allow

log = get_logger()


class SlackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: App, status: Callable[[], dict[str, Any]], signing_secret: str,
                 path: str = EVENTS_PATH) -> None:
        if not signing_secret:
            raise ValueError("HTTP mode needs the signing secret")
        self.bolt_app = app
        self.status = status
        self.signing_secret = signing_secret.encode()
        self.events_path = path
        super().__init__(address, _Handler)

    def signature(self, timestamp: str, body: bytes) -> str:
        return "v0=" + hmac.new(self.signing_secret, b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2}, name="mindie-help-http", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: SlackHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT
    server_version = "mindie-help"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass  # requests are logged by _log() without query strings or bodies

    def _log(self, status: int, length: int) -> None:
        path = self.path.partition("?")[0]
        log.debug(kv("http", method=self.command, path=path, status=status, bytes=length))

    def _send(self, status: int, body: str | bytes | dict, headers: dict[str, Any] | None = None) -> None:
        if isinstance(body, dict):
            body = json.dumps(body)
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        sent_type = False
        for key, values in (headers or {}).items():
            if key.lower() in ("content-length", "connection"):
                continue
            for value in values if isinstance(values, (list, tuple)) else [values]:
                self.send_header(key, str(value))
            sent_type |= key.lower() == "content-type"
        if not sent_type:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self._log(status, len(data))

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.partition("?")[0]
        if path == HEALTH_PATH:
            try:
                status = self.server.status()
                self._send(200, json.dumps(status, default=str), {"Content-Type": "application/json"})
            except Exception as exc:
                log.error(kv("healthz_failed", error=type(exc).__name__))
                self._send(503, {"ok": False, "error": type(exc).__name__}, {"Content-Type": "application/json"})
            return
        self._send(404, "not found")

    def do_POST(self) -> None:  # noqa: N802
        path, _, query = self.path.partition("?")
        if path != self.server.events_path:
            self._drain()
            self._send(404, "not found")
            return
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self.close_connection = True
            self._send(411, "length required")
            return
        length = int(length_header)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(413, "payload too large")
            return
        raw = self.rfile.read(length)
        timestamp = self.headers.get("X-Slack-Request-Timestamp") or ""
        refusal = self._refusal(timestamp, self.headers.get("X-Slack-Signature") or "", raw)
        if refusal and length < 512 and raw.startswith(b"ssl_check=1"):  # Slack's certificate probe, unsigned
            self._send(200, "")
            return
        if refusal:
            log.warning(kv("request_refused", status=401, reason=refusal, bytes=length))
            self._send(401, "")
            return
        payload = _parse(raw, self.headers.get("Content-Type") or "")
        if payload is None:
            log.warning(kv("request_refused", status=400, reason="malformed payload", bytes=length))
            self._send(400, "malformed payload")
            return
        body = json.dumps(payload, ensure_ascii=False)
        headers: dict[str, list[str]] = {}
        for key, value in self.headers.items():
            if key.lower() not in ("content-type", "content-length", "x-slack-signature"):
                headers.setdefault(key.lower(), []).append(value)
        headers["content-type"] = ["application/json"]
        headers["x-slack-signature"] = [self.server.signature(timestamp, body.encode("utf-8"))]
        try:
            response: BoltResponse = self.server.bolt_app.dispatch(BoltRequest(body=body, query=query, headers=headers))
        except Exception as exc:  # Bolt handles listener errors itself; this is a last resort
            log.error(kv("dispatch_failed", error=type(exc).__name__), exc_info=exc)
            self._send(500, "")
            return
        self._send(response.status, response.body or "", response.headers)

    def _refusal(self, timestamp: str, signature: str, raw: bytes) -> str | None:
        """Why the request is not Slack's, or None: checked before the body is parsed at all."""
        if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
            return "missing or non-numeric timestamp"
        if abs(time.time() - int(timestamp)) > MAX_CLOCK_SKEW:
            return "stale timestamp"
        if not hmac.compare_digest(self.server.signature(timestamp, raw), signature):
            return "invalid signature"
        return None

    def _drain(self) -> None:
        length = self.headers.get("Content-Length")
        if length and length.isdigit() and int(length) <= MAX_BODY_BYTES:
            self.rfile.read(int(length))
        else:
            self.close_connection = True


def _parse(raw: bytes, content_type: str) -> dict[str, Any] | None:
    """A signed body as Slack sends it (JSON, a form, or a form whose `payload` is JSON), sanitised; None when
    it is none of these."""
    try:
        text = raw.decode("utf-8")
        if content_type.split(";")[0].strip().lower() == "application/json" or text.lstrip().startswith("{"):
            return sanitize(json.loads(text))
        form = dict(parse_qsl(text, keep_blank_values=True))
        if "payload" in form:
            return sanitize(json.loads(form["payload"]))
        return sanitize(form)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def make_server(app: App, status: Callable[[], dict[str, Any]], host: str = "0.0.0.0", port: int = 3000, *,
                signing_secret: str) -> SlackHTTPServer:
    """Bind (port 0 picks a free one); call serve_forever() or start_background()."""
    return SlackHTTPServer((host, port), app, status, signing_secret)
