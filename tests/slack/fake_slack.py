"""A fake Slack on 127.0.0.1 over real HTTP: Web API methods, response_url hooks, url_private downloads,
and (for Socket Mode) a WebSocket endpoint. It records every call so tests can assert what the bot did."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlparse

BOT_TOKEN = "xoxb-test-0000000000-1111111111-abcdefabcdefabcdefabcdef"
APP_TOKEN = "xapp-1-A0TEST-0000000000-abcdefabcdefabcdefabcdef0123456789"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T0TEST01"


@dataclass
class Call:
    kind: str  # "api", "response", "file"
    name: str  # API method, response hook name, or file name
    params: dict[str, Any]
    headers: dict[str, str]
    status: int
    ok: bool = True  # the Web API's "ok" (False for error answers such as not_in_channel)
    at: float = field(default_factory=time.monotonic)

    def blocks_json(self) -> str:
        blocks = self.params.get("blocks")
        if isinstance(blocks, str):
            return blocks
        return json.dumps(blocks or [], ensure_ascii=False)

    @property
    def blocks(self) -> list[dict]:
        blocks = self.params.get("blocks")
        if isinstance(blocks, str):
            return json.loads(blocks)
        return blocks or []

    def all_text(self) -> str:
        return (self.params.get("text") or "") + "\n" + self.blocks_json()


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._ts = 1_700_000_000_000_000
        self.rate_limit_once: set[str] = set()  # API method names or "response" to answer 429 once
        self.fail_once: dict[str, str] = {}  # API method -> Slack error code to return once
        self.response_status: dict[str, int] = {}  # response hook name -> HTTP status to return
        self.files: dict[str, tuple[bytes, str]] = {}  # name -> (content, content type)
        self.drip: dict[str, float] = {}  # file name -> seconds between 1-byte writes (a slow-loris download)
        self.redirect_files: dict[str, str] = {}  # file name -> Location of a 302 (to somewhere else)
        self.sent_bytes: dict[str, int] = {}  # file name -> bytes written before the client went away
        self.file_infos: dict[str, dict] = {}  # file id -> files.info "file"
        self.replies: dict[tuple[str, str], list[dict]] = {}  # (channel, ts) -> messages
        self.ws_url: str | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    # --- lifecycle ---
    def start(self) -> "FakeSlack":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.rate_limit_once.clear()
            self.fail_once.clear()
            self.response_status.clear()
            self.files.clear()
            self.drip.clear()
            self.redirect_files.clear()
            self.sent_bytes.clear()
            self.file_infos.clear()
            self.replies.clear()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def api_url(self) -> str:
        return self.url + "api/"

    def response_url(self, name: str) -> str:
        return self.url + "response/" + name

    def file_url(self, name: str) -> str:
        return self.url + "files-pri/" + name

    def add_file(self, file_id: str, name: str, content: bytes, content_type: str = "text/plain", **extra: Any) -> dict:
        self.files[name] = (content, content_type)
        info = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": content_type,
            "filetype": name.rsplit(".", 1)[-1] if "." in name else "text",
            "size": len(content),
            "url_private": self.file_url(name),
            "url_private_download": self.file_url(name) + "?download=1",
            **extra,
        }
        self.file_infos[file_id] = info
        return info

    # --- queries ---
    def api_calls(self, method: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.kind == "api" and (method is None or c.name == method)]

    def posts(self, channel: str | None = None, ok_only: bool = True) -> list[Call]:
        return [
            c
            for c in self.api_calls("chat.postMessage")
            if (channel is None or c.params.get("channel") == channel) and (not ok_only or (c.status == 200 and c.ok))
        ]

    def responses(self, name: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.kind == "response" and (name is None or c.name == name) and c.status == 200]

    def downloads(self) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.kind == "file"]

    def wait_for(self, fetch: Callable[[], list[Call]], count: int = 1, timeout: float = 30.0) -> list[Call]:
        """Poll (bounded) until fetch() returns at least `count` calls."""
        deadline = time.monotonic() + timeout
        while True:
            found = fetch()
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {count} call(s); have {len(found)}: {self.summary()}")
            time.sleep(0.02)

    def summary(self) -> str:
        with self._lock:
            return ", ".join(f"{c.kind}:{c.name}:{c.status}" for c in self.calls)

    # --- internals ---
    def _next_ts(self) -> str:
        with self._lock:
            self._ts += 100
            return f"{self._ts // 1_000_000}.{self._ts % 1_000_000:06d}"

    def _record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def _api(self, method: str, params: dict[str, Any], auth: str | None) -> tuple[int, dict[str, Any], dict[str, str]]:
        token = (auth or "").removeprefix("Bearer ").strip() or params.get("token")
        if method in self.rate_limit_once:
            self.rate_limit_once.discard(method)
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != expected:
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        if method in self.fail_once:
            return 200, {"ok": False, "error": self.fail_once.pop(method)}, {}
        if method == "auth.test":
            return 200, {"ok": True, "url": "https://test.slack.com/", "team": "Test", "user": "mindie-help", "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "is_enterprise_install": False}, {}
        if method == "chat.postMessage":
            if params.get("channel") == "CNOTIN":
                return 200, {"ok": False, "error": "not_in_channel"}, {}
            ts = self._next_ts()
            message = {"type": "message", "text": params.get("text"), "ts": ts, "bot_id": BOT_ID, "user": BOT_USER_ID}
            metadata = params.get("metadata")
            if isinstance(metadata, str):
                metadata = json.loads(metadata)
            if params.get("thread_ts"):  # the thread then lists it, as Slack's conversations.replies would
                stored = {**message, "thread_ts": params["thread_ts"], **({"metadata": metadata} if metadata else {})}
                with self._lock:
                    self.replies.setdefault((str(params.get("channel", "")), str(params["thread_ts"])), []).append(stored)
            return 200, {"ok": True, "channel": params.get("channel"), "ts": ts, "message": message}, {}
        if method == "chat.postEphemeral":
            return 200, {"ok": True, "message_ts": self._next_ts()}, {}
        if method == "files.info":
            info = self.file_infos.get(params.get("file", ""))
            return 200, ({"ok": True, "file": info} if info else {"ok": False, "error": "file_not_found"}), {}
        if method == "conversations.replies":
            with self._lock:
                messages = list(self.replies.get((params.get("channel", ""), params.get("ts", "")), []))
            if str(params.get("include_all_metadata", "")).lower() not in ("1", "true"):  # Slack leaves it out unless asked
                messages = [{k: v for k, v in m.items() if k != "metadata"} for m in messages]
            return 200, {"ok": True, "messages": messages, "has_more": False}, {}
        if method == "chat.getPermalink":
            channel, ts = str(params.get("channel", "")), str(params.get("message_ts", ""))
            if not channel or not ts:
                return 200, {"ok": False, "error": "message_not_found"}, {}
            return 200, {"ok": True, "channel": channel, "permalink": f"https://test.slack.com/archives/{channel}/p{ts.replace('.', '')}"}, {}
        if method == "chat.update":
            return 200, {"ok": True, "channel": params.get("channel"), "ts": params.get("ts"), "text": params.get("text")}, {}
        if method == "views.publish":
            return 200, {"ok": True, "view": {"id": "V" + self._next_ts().replace(".", ""), "type": "home"}}, {}
        if method == "apps.connections.open":
            return 200, ({"ok": True, "url": self.ws_url} if self.ws_url else {"ok": False, "error": "no_ws"}), {}
        return 200, {"ok": False, "error": "unknown_method"}, {}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _reply(self, status: int, body: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _stream(self, name: str, content: bytes, ctype: str, interval: float | None) -> None:
                """Write a file in pieces (one byte per `interval` for a drip), counting what got out."""
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                step = 1 if interval else 1 << 16
                sent = 0
                try:
                    for start in range(0, len(content), step):
                        self.wfile.write(content[start : start + step])
                        self.wfile.flush()
                        sent += len(content[start : start + step])
                        if interval:
                            time.sleep(interval)
                except OSError:
                    pass  # the bot stopped reading: that is the point
                finally:
                    with fake._lock:
                        fake.sent_bytes[name] = sent
                    self.close_connection = True

            def _body(self) -> tuple[bytes, dict[str, Any]]:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ctype = (self.headers.get("Content-Type") or "").lower()
                if "json" in ctype:
                    params = json.loads(raw or b"{}")
                else:
                    params = {k: v[0] for k, v in parse_qs(raw.decode("utf-8"), keep_blank_values=True).items()}
                    if isinstance(params.get("blocks"), str):
                        params["blocks"] = json.loads(params["blocks"])
                return raw, params

            def do_POST(self) -> None:  # noqa: N802
                path = urlparse(self.path).path
                headers = {k.lower(): v for k, v in self.headers.items()}
                _, params = self._body()
                if path.startswith("/api/"):
                    method = path[len("/api/"):]
                    status, body, extra = fake._api(method, params, self.headers.get("Authorization"))
                    fake._record(Call("api", method, params, headers, status, ok=bool(body.get("ok"))))
                    self._reply(status, json.dumps(body).encode(), headers=extra)
                    return
                if path.startswith("/response/"):
                    name = path[len("/response/"):]
                    if "response" in fake.rate_limit_once:
                        fake.rate_limit_once.discard("response")
                        fake._record(Call("response", name, params, headers, 429))
                        self._reply(429, b"rate_limited", "text/plain", {"Retry-After": "1"})
                        return
                    status = fake.response_status.get(name, 200)
                    fake._record(Call("response", name, params, headers, status))
                    self._reply(status, b"ok" if status == 200 else b"error", "text/plain")
                    return
                self._reply(404, b"{}")

            def do_GET(self) -> None:  # noqa: N802
                path = urlparse(self.path).path
                headers = {k.lower(): v for k, v in self.headers.items()}
                if path.startswith("/files-pri/"):
                    name = path[len("/files-pri/"):]
                    if self.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
                        fake._record(Call("file", name, {}, headers, 302))
                        self._reply(302, b"", "text/html", {"Location": "https://test.slack.com/?redir=login"})
                        return
                    if name in fake.redirect_files:
                        fake._record(Call("file", name, {}, headers, 302))
                        self._reply(302, b"", "text/plain", {"Location": fake.redirect_files[name]})
                        return
                    content, ctype = fake.files.get(name, (b"", ""))
                    status = 200 if ctype else 404
                    fake._record(Call("file", name, {}, headers, status))
                    if status == 200 and (name in fake.drip or len(content) > 1 << 20):
                        self._stream(name, content, ctype, fake.drip.get(name))
                        return
                    self._reply(status, content, ctype or "text/plain")
                    return
                self._reply(404, b"{}")

        return Handler


class FakeSocketModeServer:
    """A WebSocket endpoint speaking Slack's Socket Mode envelope protocol (hello, envelopes, acks)."""

    def __init__(self) -> None:
        self.acks: list[dict] = []
        self.connected = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._ws: Any = None
        self._runner: Any = None
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> "FakeSocketModeServer":
        from aiohttp import web

        async def handler(request: "web.Request") -> "web.WebSocketResponse":
            ws = web.WebSocketResponse(autoping=True)
            await ws.prepare(request)
            self._ws = ws
            await ws.send_str(json.dumps({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0TEST"}}))
            self.connected.set()
            async for msg in ws:
                if msg.type == web.WSMsgType.TEXT:
                    try:
                        self.acks.append(json.loads(msg.data))
                    except ValueError:
                        pass
            return ws

        async def setup() -> None:
            app = web.Application()
            app.router.add_get("/link", handler)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        self._thread.start()
        asyncio.run_coroutine_threadsafe(setup(), self._loop).result(10)
        return self

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link"

    def send(self, envelope: dict) -> None:
        assert self._ws is not None, "no client connected"
        asyncio.run_coroutine_threadsafe(self._ws.send_str(json.dumps(envelope)), self._loop).result(10)

    def stop(self) -> None:
        async def teardown() -> None:
            if self._ws is not None:
                await self._ws.close()
            if self._runner is not None:
                await self._runner.cleanup()

        try:
            asyncio.run_coroutine_threadsafe(teardown(), self._loop).result(10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
