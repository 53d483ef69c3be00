"""HTTP mode: a small threaded HTTP server in front of Bolt.

POST /slack/events  events, slash commands and interactivity (Bolt verifies the v0 signature and the timestamp)
GET  /healthz       JSON engine status
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse

from bot.logs import get_logger, kv

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
MAX_BODY_BYTES = 8 * 1024 * 1024  # Slack payloads are far smaller; this only guards memory
SOCKET_TIMEOUT = 30.0

log = get_logger()


class SlackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: App, status: Callable[[], dict[str, Any]], path: str = EVENTS_PATH) -> None:
        self.bolt_app = app
        self.status = status
        self.events_path = path
        super().__init__(address, _Handler)

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
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._send(400, "body is not UTF-8")
            return
        headers: dict[str, list[str]] = {}
        for key, value in self.headers.items():
            headers.setdefault(key.lower(), []).append(value)
        try:
            response: BoltResponse = self.server.bolt_app.dispatch(BoltRequest(body=body, query=query, headers=headers))
        except Exception as exc:  # Bolt handles listener errors itself; this is a last resort
            log.error(kv("dispatch_failed", error=type(exc).__name__), exc_info=exc)
            self._send(500, "")
            return
        if response.status == 401:
            log.warning(kv("request_refused", status=401, reason="invalid or stale signature", bytes=length))
        self._send(response.status, response.body or "", response.headers)

    def _drain(self) -> None:
        length = self.headers.get("Content-Length")
        if length and length.isdigit() and int(length) <= MAX_BODY_BYTES:
            self.rfile.read(int(length))
        else:
            self.close_connection = True


def make_server(app: App, status: Callable[[], dict[str, Any]], host: str = "0.0.0.0", port: int = 3000) -> SlackHTTPServer:
    """Bind (port 0 picks a free one); call serve_forever() or start_background()."""
    return SlackHTTPServer((host, port), app, status)
