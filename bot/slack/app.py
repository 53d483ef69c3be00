"""The Bolt app: Slack surfaces (mention, slash command, DM, auto-reply, file share, buttons) on top of the engine.

Only `Engine.answer()` / `Engine.environment()` / `Engine.status()` and the `Answer` model are used; nothing here
knows how answers are found. Every request is acknowledged first (Bolt acks events before the listener runs;
commands and actions call `ack()` before anything that can wait). Two exceptions, both a few milliseconds: a vote
is stored before its click is acknowledged (so an acknowledged vote survives a SIGKILL, issue #13), and a short
`/mindie-help env` paste is checked in the ack itself (issue #12). Listeners only decide and enqueue: answers are
prepared on the bot's own worker threads (bot/slack/work.py), clicks on a second small pool, so Bolt's threads are
always free to acknowledge (issue #11); a request's de-duplication claims travel with its deferred work and are
finished when that work is done. Payloads reach Bolt sanitised (bot/slack/payloads.py); everything user-derived that goes into a
message passes blocks.esc.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.webhook import WebhookClient

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.engine.models import Answer
from bot.engine.normalize import detect_lang, looks_like_log, prepare
from bot.engine.normalize import strip_mentions as _strip_user_mentions
from bot.feedback import FeedbackStore, fingerprint
from bot.settings import Settings
from bot.slack import blocks as bk
from bot.slack.dedupe import Cooldown, Deduper, SharedMarks, TTLCache
from bot.storage import DatabaseUnavailable, SharedState
from bot.slack.files import FileText, download_text, file_name, needs_info, origin_of
from bot.slack.limits import RateLimiter
from bot.slack.payloads import id_of, sanitize, sanitize_file, text_of
from bot.slack.work import AUTOMATIC, EXPLICIT, WorkQueue
from bot.logs import get_logger, kv, register_secret

if TYPE_CHECKING:  # the engine is only called through answer()/status()
    from bot.engine.engine import Engine

log = get_logger()

# Message subtypes that carry something a person wrote; everything else (edits, deletions, joins, topic
# changes, ...) is ignored. `bot_message` is only considered for bots listed in MINDIE_HELP_ANSWER_BOT_IDS.
HUMAN_SUBTYPES = {None, "file_share", "thread_broadcast"}
MIN_AUTO_CHARS = 12  # shorter channel messages are chit-chat; they never reach the engine
THREAD_CONTEXT_CHARS = 25  # a mention shorter than this in a thread is answered with the thread's first message
ANSWERED_THREAD_TTL = 7 * 24 * 3600.0
SHARE_TTL = 24 * 3600.0
ESCALATIONS_PER_CHANNEL_HOUR = 6
LIMIT_NOTE_SECONDS = 60.0  # at most one "slow down" note per user per minute
ENV_ACK_CHARS = 20_000  # `/mindie-help env` pastes up to this long are checked in the ack itself
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")  # matched against ids Slack sends, never against message text
_HELP_WORDS = {"help", "-h", "--help", "usage", "?", "hi", "hello", "hey", "帮助", "用法", "你好", "您好"}
_TEXT_ONLY_ERRORS = {"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_attachments"}
# Interactions that carry a one-time trigger_id: a second request with the same one is a replay.
_INTERACTIONS = {"block_actions", "shortcut", "message_action", "view_submission", "view_closed", "block_suggestion"}
CLAIMS = "mindie_help_claims"  # context key: the de-duplication claims this request holds until it is handled


class _QuietBoltWarnings(logging.Filter):
    """Log hygiene for Bolt's own loggers (Bolt copies its base logger's filters to all of them).

    * Bolt warns that SLACK_BOT_TOKEN from the environment is unused because we pass our own WebClient
      (which carries that same token, plus retry handlers and the base URL): nothing to act on, dropped.
    * Bolt logs the whole request body (message text) on a bad signature, and request payloads in some
      warnings: only the first line, without the body, is kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        if "`token` will be unused" in message:
            return False
        if record.levelno < logging.ERROR and ("body:" in message or "\n" in message or len(message) > 300):
            first = message.split("\n", 1)[0]
            record.msg = first.split("(signature:", 1)[0].split("body:", 1)[0].strip()[:300] + " (payload withheld)"
            record.args = None
        return True


def guess_lang(text: str) -> str:
    """The language of messages the bot writes itself (usage, errors): the engine's own rule, so they agree."""
    return detect_lang((text or "")[:20_000].split("\n"))


def user_ref(user: str | None) -> str | None:
    """A mention of a Slack user id, only when it is one: a payload's "user" goes into message text."""
    return f"<@{user}>" if isinstance(user, str) and _USER_ID.fullmatch(user) else None


def retry_handlers() -> list:
    """Connection errors and HTTP 429 (honouring Retry-After) are retried by slack_sdk itself."""
    return [ConnectionErrorRetryHandler(max_retry_count=2), RateLimitErrorRetryHandler(max_retry_count=3)]


def api_base_url(settings: Settings) -> str | None:
    if not settings.slack_api_url:
        return None
    url = settings.slack_api_url.strip()
    return url if url.endswith("/") else url + "/"


def make_web_client(settings: Settings) -> WebClient:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    kwargs: dict[str, Any] = {"token": token, "timeout": 30, "retry_handlers": retry_handlers()}
    base = api_base_url(settings)
    if base:
        kwargs["base_url"] = base
    return WebClient(**kwargs)


def normalise_group(group: str | None) -> str | None:
    """Accept `S0123ABC`, `S0123ABC|handle` or `<!subteam^S0123ABC>`; return the id."""
    if not group:
        return None
    match = re.search(r"(S[A-Z0-9]{2,})", group.strip())
    return match.group(1) if match else None


def event_text(event: dict[str, Any], deep: bool) -> str:
    """The message text; for integration bots (deep) also attachments (pretext, title, text, fallback, fields) and blocks."""
    parts: list[str] = [text_of(event, "text") or ""]
    if deep:
        for att in event.get("attachments") or []:
            if not isinstance(att, dict):
                continue
            for key in ("pretext", "title", "text", "fallback", "footer"):
                if isinstance(att.get(key), str) and att[key]:
                    parts.append(att[key])
            for fld in att.get("fields") if isinstance(att.get("fields"), list) else []:
                if isinstance(fld, dict):
                    parts.append(f"{fld.get('title', '')}: {fld.get('value', '')}".strip(": "))
            parts.extend(_blocks_text(att.get("blocks") or []))
        parts.extend(_blocks_text(event.get("blocks") or []))
    parts = [p for p in parts if isinstance(p, str)]
    seen: set[str] = set()
    unique = []
    for part in parts:
        key = part.strip()
        if key and key not in seen:
            seen.add(key)
            unique.append(part)
    return "\n".join(unique)


def _blocks_text(blocks: list[Any]) -> list[str]:
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text", "text") and isinstance(node.get("text"), str):
                out.append(node["text"])
            for key in ("text", "fields", "elements", "blocks"):
                value = node.get(key)
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks)
    # rich_text splits a message into many small text elements: join each block's pieces.
    return ["".join(out)] if out else []


def strip_mentions(text: str) -> str:
    """The text without user mentions (a linear scanner: a regex here froze the bot on unclosed `<@U1|`)."""
    return _strip_user_mentions(text or "").strip()


class SocketHandler(SocketModeHandler):
    """Socket Mode with the same payload rules as HTTP mode: sanitised before Bolt reads them, malformed ones
    acknowledged (so Slack does not redeliver them) and dropped."""

    def handle(self, client: BaseSocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        payload = sanitize(req.payload)
        if payload is None:
            log.warning(kv("request_refused", status=400, reason="malformed payload", mode="socket", type=req.type))
            client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
            return
        req.payload = payload
        super().handle(client, req)


class SlackBot:
    """Owns the Bolt app, the engine handle, the feedback store and the dedupe/cooldown state (shared by all
    replicas through the database, with an in-memory stand-in while it is unreachable)."""

    def __init__(
        self,
        settings: Settings,
        engine: "Engine",
        *,
        client: WebClient | None = None,
        feedback: FeedbackStore | None = None,
        workers: int = 8,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self._engine_lock = threading.Lock()
        self.feedback = feedback if feedback is not None else FeedbackStore.from_settings(settings)
        self.state = SharedState(self.feedback.db)
        self.client = client or make_web_client(settings)
        self.dedupe = Deduper(state=self.state)
        self.cooldown = Cooldown(settings.cooldown_seconds, state=self.state)
        self.answered_threads = SharedMarks("thread", ANSWERED_THREAD_TTL, state=self.state)
        self._channels: TTLCache[tuple[str | None, float | None]] = TTLCache(10.0, 5_000)  # per-channel settings, briefly
        self._escalations: TTLCache[str] = TTLCache(ANSWERED_THREAD_TTL, 10_000)  # stand-in while the database is down
        self.shares: TTLCache[tuple[Answer, str]] = TTLCache(SHARE_TTL, 2_000)
        self.escalation_group = normalise_group(settings.escalation_group)
        self.bot_token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
        base = api_base_url(settings)
        self.api_origin = origin_of(base) if base else None  # files are fetched from Slack or from exactly here
        # Work off Bolt's threads: answers on `answers`, clicks on `clicks` (a click never waits for an answer).
        self.answers = WorkQueue("answer", settings.workers)
        self.clicks = WorkQueue("click", 4)
        self.user_limit = RateLimiter(settings.rate_user_per_minute)
        self.channel_limit = RateLimiter(settings.rate_channel_per_minute)
        self.limit_notes = Cooldown(LIMIT_NOTE_SECONDS)
        self.escalating_users = Cooldown(settings.escalation_cooldown_seconds)
        # A few pings per channel per hour (threads are deduplicated on every replica; these two limits are per replica).
        # escalation_cooldown_seconds = 0 turns both escalation limits off.
        per_channel = ESCALATIONS_PER_CHANNEL_HOUR / 60.0 if settings.escalation_cooldown_seconds > 0 else 0.0
        self.escalating_channels = RateLimiter(per_channel, burst=3)
        signing_secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else None
        self.signing_secret = signing_secret or ""
        for secret in (self.bot_token, signing_secret, settings.slack_app_token.get_secret_value() if settings.slack_app_token else None):
            register_secret(secret)
        bolt_logger = logging.getLogger("mindie_help.bolt")
        if not any(isinstance(f, _QuietBoltWarnings) for f in bolt_logger.filters):
            bolt_logger.addFilter(_QuietBoltWarnings())
        self.app = App(
            client=self.client,
            signing_secret=signing_secret or "",
            process_before_response=False,
            listener_executor=ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mindie-help"),
            logger=bolt_logger,
        )
        self.bot_user_id: str | None = None
        self.bot_id: str | None = None
        self._inflight = 0
        self._idle = threading.Condition()
        self._register()
        self.feedback.db.start_maintenance()  # heartbeat (claims of a dead replica can be taken over), queued writes

    # --- plumbing -----------------------------------------------------------------------------

    def _register(self) -> None:
        app = self.app
        track = self._tracked
        app.middleware(self._dedupe_events)
        app.event("app_mention")(track(self.on_mention))
        app.event("message")(track(self.on_message))
        app.command("/mindie-help")(track(self.on_command))
        app.action(bk.ACTION_FEEDBACK_UP)(track(self.on_feedback))
        app.action(bk.ACTION_FEEDBACK_DOWN)(track(self.on_feedback))
        app.action(bk.ACTION_SHARE)(track(self.on_share))
        app.action(bk.ACTION_ESCALATE)(track(self.on_escalate))
        # Anything else that reaches the app is acknowledged and ignored: no 404s, so no Slack retries.
        everything = re.compile(r".*")
        app.event(everything)(track(self.on_other_event))
        for register in (app.command, app.action, app.shortcut, app.view, app.options):
            register(everything)(track(self.on_other_request))
        app.error(self.on_error)

    # In-flight accounting: the middleware counts a request in (synchronously, before Slack gets its ack), the
    # listener wrapper counts it out when the listener returns; work it deferred is counted in by defer() and out
    # when that work is done. wait_idle() lets shutdown (and tests) wait for all of it.
    def _begin(self) -> None:
        with self._idle:
            self._inflight += 1

    def _end(self) -> None:
        with self._idle:
            self._inflight = max(0, self._inflight - 1)
            if self._inflight == 0:
                self._idle.notify_all()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no request is being processed (True) or the timeout passes (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    def defer(self, work: WorkQueue, fn: Callable[..., Any], *args: Any, priority: int = EXPLICIT, **kwargs: Any) -> bool:
        """Run fn on a worker, counted in flight until it is done. False when that queue is full."""

        claims = self.dedupe.hand_off()  # the request's de-duplication claims stay "processing" until the job is done

        def job() -> None:
            try:
                with self.dedupe.tracking(claims):
                    fn(*args, **kwargs)
            finally:
                self._end()

        self._begin()
        if work.submit(job, priority):
            return True
        self.dedupe.take_back(claims)
        self._end()
        log.warning(kv("queue_full", queue=work.name, pending=work.pending()))
        return False

    def _tracked(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Count the request out when the listener is done, and mark its de-duplication claims finished.

        Bolt passes a listener only the arguments its signature names, so the wrapper's signature is the
        listener's plus `context` (where the middleware left the claims)."""
        params = list(inspect.signature(fn).parameters.values())
        wants_context = any(p.name == "context" for p in params)
        if not wants_context:
            params.append(inspect.Parameter("context", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None))

        def wrapper(**kwargs: Any) -> Any:
            context = kwargs.get("context") if wants_context else kwargs.pop("context", None)
            try:
                with self.dedupe.tracking((context or {}).get(CLAIMS) or ()):
                    return fn(**kwargs)
            finally:
                self._end()

        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__name__ = wrapper.__qualname__ = getattr(fn, "__name__", "listener")
        return wrapper

    def _dedupe_events(self, body: dict, request: Any, context: Any, next: Any) -> Any:  # noqa: A002 (Bolt's argument name)
        """A retried delivery (X-Slack-Retry-Num), a duplicate event_id or a replayed command/interaction (same
        trigger_id) is acknowledged and dropped, whichever replica received the first one."""
        claimed: list[tuple[str, str]] = []
        event_id = text_of(body, "event_id")
        trigger_id = text_of(body, "trigger_id")
        if body.get("type") == "event_callback" and event_id:
            outcome = self.dedupe.claim_event(event_id)
            if outcome != "claimed":
                retry = (request.headers.get("x-slack-retry-num") or [None])[0] if request is not None else None
                log.info(kv("duplicate_event", event_id=event_id, retry=retry, outcome=outcome))
                # "busy": another replica holds it unfinished. Not acknowledging makes Slack retry later, by when
                # that replica has answered (then "done") or died (then the retry takes the event over).
                return BoltResponse(status=503 if outcome == "busy" else 200, body="")
            claimed.append(("event", event_id))
        elif isinstance(trigger_id, str) and trigger_id and (body.get("command") or body.get("type") in _INTERACTIONS):
            kind = "command" if body.get("command") else "interaction"
            outcome = self.dedupe.claim_request(kind, trigger_id)
            if outcome != "claimed":
                log.info(kv("replayed_request", kind=kind, type=body.get("type"), outcome=outcome))
                return BoltResponse(status=503 if outcome == "busy" else 200, body="")
            claimed.append((kind, trigger_id))
        if context is not None:
            context[CLAIMS] = claimed
        self._begin()
        return next()

    def status(self) -> dict[str, Any]:
        """/healthz: the engine's status plus the database's (the bot answers even while the database is down)."""
        return {**self.engine.status(), **self.feedback.db.status()}

    def channel_mode(self, channel: str | None) -> tuple[str | None, float | None]:
        """(mode, cooldown) stored for a channel by `mindie-help channel set`; (None, None) = the environment's."""
        if not channel:
            return None, None
        cached = self._channels.get(channel)
        if cached is not None:
            return cached
        try:
            found = self.state.channel_settings(channel)
        except DatabaseUnavailable:
            return None, None
        value = (found.mode, found.cooldown_seconds) if found else (None, None)
        self._channels.set(channel, value)
        return value

    def on_other_request(self, ack: Any, body: dict) -> None:
        ack()
        log.debug(kv("request_ignored", type=(body or {}).get("type")))

    def _identify(self, context: Any) -> None:
        if self.bot_user_id is None and context is not None:
            self.bot_user_id = context.get("bot_user_id")
            self.bot_id = context.get("bot_id")

    def on_other_event(self, event: dict) -> None:
        log.debug(kv("event_ignored", type=event.get("type")))

    def on_error(self, error: Exception, body: dict) -> None:
        log.error(kv("listener_error", error=type(error).__name__, body_type=text_of(body or {}, "type")), exc_info=error)

    def ask(self, text: str, received: float | None = None) -> Answer:
        """Call the engine (serialised: one diagnosis at a time); it caps the input itself and says so. The time
        budget runs from when the request arrived: a reply that waited in the queue reads only the error lines."""
        started = received if received is not None else time.monotonic()
        with self._engine_lock:
            return self.engine.answer(text, deadline=started + self.settings.answer_budget_seconds)

    def close(self) -> None:
        """Stop the worker threads once they are idle (shutdown)."""
        self.answers.close()
        self.clicks.close()

    # --- rate limits --------------------------------------------------------------------------

    def limited(self, user: str | None, channel: str | None) -> int:
        """0 when this explicit request may go ahead, else roughly how many seconds the user should wait."""
        if user and not self.user_limit.allow(("user", user)):
            return self.user_limit.wait_seconds(("user", user))
        if channel and not self.channel_limit.allow(("channel", channel)):
            return self.channel_limit.wait_seconds(("channel", channel))
        return 0

    def _limit_note(self, channel: str | None, user: str | None, wait: int, lang: str, response_url: str | None = None) -> None:
        log.info(kv("rate_limited", channel=channel, user=user, wait=wait))
        if not user or not self.limit_notes.allow(user):
            return  # one note per minute: the notes themselves must not become a flood
        text = bk.label(lang, "rate_limited", seconds=wait)
        if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, text=text):
            self._ephemeral(channel, user, text)

    def _busy(self, channel: str | None, user: str | None, lang: str, response_url: str | None = None) -> None:
        text = bk.label(lang, "busy")
        if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, text=text):
            self._ephemeral(channel, user, text)

    def webhook(self, url: str) -> WebhookClient:
        return WebhookClient(url=url, timeout=15, retry_handlers=retry_handlers())

    def send_response_url(self, url: str | None, **payload: Any) -> bool:
        if not url:
            return False
        try:
            response = self.webhook(url).send_dict(payload)
        except Exception as exc:  # network failure after retries
            log.warning(kv("response_url_failed", error=type(exc).__name__))
            return False
        if response.status_code != 200:
            log.warning(kv("response_url_failed", status=response.status_code, body=(response.body or "")[:100]))
            return False
        return True

    def post(self, channel: str, thread_ts: str | None, rendered: bk.Rendered) -> dict | None:
        """chat.postMessage; a Block Kit rejection is retried as plain text. Returns the API response data."""
        kwargs: dict[str, Any] = {"channel": channel, "unfurl_links": False, "unfurl_media": False}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        try:
            return self.client.chat_postMessage(text=rendered.text, blocks=rendered.blocks, **kwargs).data  # type: ignore[return-value]
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            if error not in _TEXT_ONLY_ERRORS:
                raise
            log.warning(kv("blocks_rejected", channel=channel, error=error))
            return self.client.chat_postMessage(text=rendered.text, **kwargs).data  # type: ignore[return-value]

    def post_error(self, channel: str, thread_ts: str | None, lang: str, ref: str) -> None:
        try:
            self.post(channel, thread_ts, bk.render_error(ref, lang))
        except Exception as exc:
            log.error(kv("error_message_failed", channel=channel, ref=ref, error=_api_error(exc)))

    # --- files --------------------------------------------------------------------------------

    def fetch_files(self, files: list[dict[str, Any]] | None) -> list[FileText]:
        """Download up to 5 shared files within one total time cap (download_timeout_seconds)."""
        out: list[FileText] = []
        deadline = time.monotonic() + self.settings.download_timeout_seconds
        for info in (files if isinstance(files, list) else [])[:5]:
            if not isinstance(info, dict):
                continue
            try:
                if needs_info(info) and isinstance(info.get("id"), str):
                    found = self.client.files_info(file=info["id"]).get("file")
                    info = sanitize_file(found) or info
                result = download_text(
                    info, token=self.bot_token, max_bytes=self.settings.max_file_bytes, api_origin=self.api_origin,
                    max_download=self.settings.max_download_bytes, deadline=deadline,
                )
            except Exception as exc:
                result = FileText(file_name(info), skipped=f"could not read it ({_api_error(exc)})")
            log.info(kv("file", name_len=len(result.name), ok=result.ok, chars=len(result.text), truncated=result.truncated, skipped=result.skipped))
            out.append(result)
        return out

    def file_notes(self, files: list[FileText], lang: str) -> list[str]:
        notes = []
        for f in files:
            if f.skipped:
                notes.append(bk.label(lang, "file_skipped", name=bk.inline_code(f.name), reason=bk.esc(f.skipped)))
            elif f.stopped == "time":
                notes.append(bk.label(lang, "file_slow", name=bk.inline_code(f.name)))
            elif f.truncated:
                notes.append(bk.label(lang, "truncated_file", name=bk.inline_code(f.name), kb=self.settings.max_file_bytes * 2 // 5 // 1024))
        return notes

    @staticmethod
    def compose(text: str, files: list[FileText]) -> str:
        parts = [text.strip()] if text.strip() else []
        parts += [f.text for f in files if f.ok]
        return "\n".join(parts)

    # --- explicit requests: mention, DM, slash command -------------------------------------------

    def on_mention(self, event: dict, context: Any, body: dict) -> None:
        self._identify(context)
        if self._skip_reason(event, context) is not None:
            return
        channel, ts = text_of(event, "channel"), text_of(event, "ts")
        if not channel:
            return
        self.request_explicit(
            surface="mention", channel=channel, ts=ts, thread_ts=text_of(event, "thread_ts") or ts,
            root_ts=text_of(event, "thread_ts"), user=text_of(event, "user"),
            text=event_text(event, deep=bool(event.get("bot_id"))), files=event.get("files"),
        )

    def request_explicit(self, *, surface: str, channel: str, ts: str | None, user: str | None, text: str, **kwargs: Any) -> None:
        """On Bolt's thread: rate limits and the queue; the answer itself is prepared by a worker."""
        received = time.monotonic()
        if not self.dedupe.claim_message(channel, ts):
            log.info(kv("duplicate_message", surface=surface, channel=channel, ts=ts))
            return
        wait = self.limited(user, channel)
        if wait:
            self.defer(self.clicks, self._limit_note, channel, user, wait, guess_lang(text[:2000]))
            return
        job = functools.partial(self.answer_explicit, surface=surface, channel=channel, ts=ts, user=user, text=text, received=received, **kwargs)
        if not self.defer(self.answers, job):
            self.defer(self.clicks, self._busy, channel, user, guess_lang(text[:2000]))

    def answer_explicit(
        self,
        *,
        surface: str,
        channel: str,
        ts: str | None,
        thread_ts: str | None,
        root_ts: str | None,
        user: str | None,
        text: str,
        files: list[dict] | None,
        received: float | None = None,
    ) -> None:
        """Someone asked the bot: it always replies (answer, honest no-match, usage, or a short error)."""
        started = time.monotonic()
        ref = uuid.uuid4().hex[:8]
        own = strip_mentions(text)
        lang = guess_lang(own)
        try:
            fetched = self.fetch_files(files)
            query = self.compose(own, fetched)
            if root_ts and root_ts != ts and not fetched and len(own) < THREAD_CONTEXT_CHARS and not looks_like_log(own):
                root = self.thread_root_text(channel, root_ts)
                query = "\n".join(p for p in (root, own) if p.strip())
            lang = guess_lang(query) if query else lang
            notes = self.file_notes(fetched, lang)
            if not query.strip() or (own.lower() in _HELP_WORDS and not fetched):
                usage = bk.label(lang, "usage")
                self.post(channel, thread_ts, bk.render_text("\n".join(notes + [usage]), lang))
                log.info(kv("usage", surface=surface, channel=channel, skipped_files=len(notes)))
                return
            answer = self.ask(query, received)
            fp = fingerprint(query)
            escalate = {"t": thread_ts, "l": answer.lang, "f": fp[:16]}
            rendered = bk.render_answer(answer, fp=fp, escalate_value=escalate, extra_notes=notes)
            self.post(channel, thread_ts, rendered)
            if thread_ts:
                self.answered_threads.set((channel, thread_ts), time.time())
            if not answer.answered:
                self._record_gap(query, answer, surface, channel)
            self._log_reply(surface, channel, user, query, answer, fp, started)
        except Exception as exc:
            log.error(kv("explicit_failed", surface=surface, channel=channel, ref=ref, error=_api_error(exc)), exc_info=not isinstance(exc, SlackApiError))
            self.post_error(channel, thread_ts, lang, ref)

    def thread_root_text(self, channel: str, root_ts: str) -> str:
        try:
            data = self.client.conversations_replies(channel=channel, ts=root_ts, limit=1, inclusive=True)
        except Exception as exc:
            log.warning(kv("thread_root_failed", channel=channel, error=_api_error(exc)))
            return ""
        for message in data.get("messages") or []:
            if isinstance(message, dict) and message.get("ts") == root_ts:
                files = self.fetch_files(message.get("files"))
                deep = bool(message.get("bot_id")) and message.get("bot_id") in self.settings.answer_bot_ids
                return self.compose(strip_mentions(event_text(message, deep=deep)), files)
        return ""

    def bot_replied_in_thread(self, channel: str, root_ts: str) -> bool:
        """Ask Slack whether the bot already posted in this thread (memory is lost on restart)."""
        try:
            data = self.client.conversations_replies(channel=channel, ts=root_ts, limit=100)
        except Exception as exc:
            log.warning(kv("thread_check_failed", channel=channel, error=_api_error(exc)))
            return False
        for message in data.get("messages") or []:
            if not isinstance(message, dict):
                continue
            if (self.bot_id and message.get("bot_id") == self.bot_id) or (self.bot_user_id and message.get("user") == self.bot_user_id):
                self.answered_threads.set((channel, root_ts), time.time())
                return True
        return False

    def on_command(self, ack: Any, command: dict) -> None:
        raw = text_of(command, "text") or ""
        if raw.strip().split(maxsplit=1)[:1] in (["env"], ["ENV"], ["Env"]):
            self.on_env_command(ack, command, raw.strip()[3:].strip())
            return
        if not raw.strip() or raw.strip().lower() in _HELP_WORDS:
            usage = bk.render_usage(guess_lang(raw.strip()))
            ack(text=usage.text, blocks=usage.blocks, response_type="ephemeral")
            return
        ack()  # first, before anything that can wait: Slack gives up after 3 s
        received = time.monotonic()
        user, channel = text_of(command, "user_id"), text_of(command, "channel_id")
        response_url = text_of(command, "response_url")
        wait = self.limited(user, channel)
        if wait:
            self.defer(self.clicks, self._limit_note, channel, user, wait, guess_lang(raw[:2000]), response_url)
            return
        if not self.defer(self.answers, self.answer_command, command, received):
            self.defer(self.clicks, self._busy, channel, user, guess_lang(raw[:2000]), response_url)

    def answer_command(self, command: dict, received: float | None = None) -> None:
        text = (text_of(command, "text") or "").strip()
        lang = guess_lang(text)
        started = time.monotonic()
        response_url = text_of(command, "response_url")
        channel = text_of(command, "channel_id")
        try:
            answer = self.ask(text, received)
            fp = fingerprint(text)
            share = None
            if answer.answered and answer.results:
                key = uuid.uuid4().hex[:16]
                self.shares.set(key, (answer, fp))
                share = {"k": key, "q": text[:1500]}
            # No excerpt of the question in the escalation: the answer is ephemeral, the question was private.
            rendered = bk.render_answer(answer, fp=fp, share_value=share, escalate_value={"t": None, "l": answer.lang, "f": fp[:16], "p": "1"})
            if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
            if not answer.answered:
                self._record_gap(text, answer, "command", channel)
            self._log_reply("command", channel, text_of(command, "user_id"), text, answer, fp, started)
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("command_failed", channel=channel, ref=ref, error=_api_error(exc)), exc_info=not isinstance(exc, (SlackApiError, RuntimeError)))
            err = bk.render_error(ref, lang)
            if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, **err.as_kwargs()):
                self._ephemeral(channel, text_of(command, "user_id"), err.text)

    def on_env_command(self, ack: Any, command: dict, paste: str) -> None:
        """`/mindie-help env <paste>`: the environment check alone; with nothing pasted, the commands that collect the
        facts. A paste of up to ENV_ACK_CHARS is answered in the ack (the check is linear and needs no model: a few
        milliseconds); a longer one is acknowledged first and checked on a worker, like any answer (issue #11)."""
        lang = guess_lang(paste[:2000])
        user, channel = text_of(command, "user_id"), text_of(command, "channel_id")
        wait = self.limited(user, channel) if paste else 0
        if wait:
            ack(text=bk.label(lang, "rate_limited", seconds=wait), response_type="ephemeral")
            log.info(kv("rate_limited", channel=channel, user=user, wait=wait))
            return
        if len(paste) <= ENV_ACK_CHARS:
            rendered = self.environment_reply(paste, lang, channel)
            ack(text=rendered.text, blocks=rendered.blocks, response_type="ephemeral")
            return
        ack()
        if not self.defer(self.answers, self.answer_env, command, paste, lang):
            self.defer(self.clicks, self._busy, channel, user, lang, text_of(command, "response_url"))

    def environment_reply(self, paste: str, lang: str, channel: str | None) -> bk.Rendered:
        report = self.engine.environment(prepare(paste, self.settings.max_input_bytes).text) if paste else None
        log.info(kv("env_command", channel=channel, chars=len(paste), facts=len(report.facts) if report else 0,
                    verdict=report.verdict if report else None))
        return bk.render_environment_report(report, lang)

    def answer_env(self, command: dict, paste: str, lang: str) -> None:
        channel, response_url = text_of(command, "channel_id"), text_of(command, "response_url")
        try:
            rendered = self.environment_reply(paste, lang, channel)
            if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("env_command_failed", channel=channel, ref=ref, error=_api_error(exc)), exc_info=not isinstance(exc, RuntimeError))
            err = bk.render_error(ref, lang)
            if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, **err.as_kwargs()):
                self._ephemeral(channel, text_of(command, "user_id"), err.text)

    # --- message events: DMs and auto-replies ------------------------------------------------------

    def _skip_reason(self, event: dict, context: Any) -> str | None:
        """Why a message must not be answered: edits, joins, our own messages, other bots."""
        subtype = text_of(event, "subtype")
        bot_id = text_of(event, "bot_id")
        user = text_of(event, "user")
        if (bot_id and bot_id == self.bot_id) or (user and user == self.bot_user_id):
            return "self"
        if subtype == "bot_message" or bot_id:
            if bot_id and bot_id in self.settings.answer_bot_ids and subtype in (None, "bot_message", "file_share", "thread_broadcast"):
                return None
            return "bot"
        if subtype not in HUMAN_SUBTYPES:
            return f"subtype:{subtype}"
        if event.get("hidden"):
            return "hidden"
        return None

    def on_message(self, event: dict, context: Any) -> None:
        self._identify(context)
        reason = self._skip_reason(event, context)
        if reason is not None:
            log.debug(kv("message_ignored", reason=reason, channel=text_of(event, "channel")))
            return
        integration = bool(event.get("bot_id"))
        text = event_text(event, deep=integration)
        channel, ts = text_of(event, "channel"), text_of(event, "ts")
        if not channel:
            return
        if text_of(event, "channel_type") == "im":
            self.request_explicit(
                surface="dm", channel=channel, ts=ts, thread_ts=text_of(event, "thread_ts"), root_ts=text_of(event, "thread_ts"),
                user=text_of(event, "user"), text=text, files=event.get("files"),
            )
            return
        if not integration and self.bot_user_id and f"<@{self.bot_user_id}" in text:
            return  # the app_mention event answers it
        settings = self.settings
        mode, cooldown = self.channel_mode(channel)
        if mode in ("mention", "off"):
            return
        if mode is None and (not settings.auto_reply or (settings.auto_reply_channels and channel not in settings.auto_reply_channels)):
            return
        who = text_of(event, "user") or text_of(event, "bot_id") or "?"
        if self.cooldown.active(who, cooldown):
            log.info(kv("auto_cooldown", channel=channel, user=who))
            return
        if not text.strip() and not event.get("files"):
            return
        if not self.dedupe.claim_message(channel, ts):
            return
        if not self.defer(self.answers, self.auto_reply, event, text, integration, time.monotonic(), cooldown, priority=AUTOMATIC):
            log.warning(kv("auto_dropped", channel=channel, reason="queue_full"))

    def auto_reply(self, event: dict, text: str, integration: bool, received: float | None = None,
                   cooldown: float | None = None) -> None:
        """A channel message: one quiet, confident reply in its thread when it is a pasted log, else silence."""
        channel, ts = text_of(event, "channel"), text_of(event, "ts")
        who = text_of(event, "user") or text_of(event, "bot_id") or "?"
        thread_ts = text_of(event, "thread_ts")
        root = thread_ts or ts
        files = event.get("files") or []
        started = time.monotonic()
        thread_claimed = False
        try:
            fetched = self.fetch_files(files) if files else []
            readable = [f for f in fetched if f.ok]
            is_log = looks_like_log(text) or bool(readable)
            already = (channel, root) in self.answered_threads
            if already and not is_log:
                return  # chatter in a thread the bot already answered
            if not is_log and len(text.strip()) < MIN_AUTO_CHARS:
                return
            query = self.compose(text, readable)
            if not query.strip():
                return
            answer = self.ask(query, received)
            fp = fingerprint(query)
            if not answer.answered or not answer.results:
                if is_log:
                    self._record_gap(query, answer, "auto", channel)
                log.info(kv("auto_silent", channel=channel, chars=len(query), is_log=is_log, confidence=answer.confidence, fp=fp[:12]))
                return
            if not is_log and "signatures" not in answer.results[0].retrievers:
                log.info(kv("auto_silent", channel=channel, reason="no_signature", chars=len(query), fp=fp[:12]))
                return
            if thread_ts and thread_ts != ts and not already and not is_log and self.bot_replied_in_thread(channel, root):
                return  # answered before a restart (the in-memory thread list is empty)
            if not is_log:  # once per thread, whichever replica sees the thread's messages
                if not self.answered_threads.claim((channel, root)):
                    return
                thread_claimed = True
            if not self.cooldown.allow(who, cooldown):
                if thread_claimed:
                    self.answered_threads.release((channel, root))
                return
            rendered = bk.render_answer(answer, fp=fp, extra_notes=self.file_notes(fetched, answer.lang))
            self.post(channel, root, rendered)
            self.answered_threads.set((channel, root), time.time())
            self._log_reply("auto", channel, who, query, answer, fp, started)
        except Exception as exc:  # auto-replies fail silently in the channel, loudly in the log
            if thread_claimed:
                self.answered_threads.release((channel, root))
            log.error(kv("auto_failed", channel=channel, error=_api_error(exc)), exc_info=not isinstance(exc, SlackApiError))

    # --- buttons: acknowledged at once, handled on the click pool -------------------------------------

    def on_feedback(self, ack: Any, body: dict, action: dict) -> None:
        # The vote is stored (or queued, if the database is down) before the ack: an acknowledged click is never
        # lost, even if this replica is killed right after. One upsert: milliseconds, far inside Slack's 3 s. The
        # thank-you note (an HTTP call that can wait) goes to the click pool, after the ack.
        value = bk.parse_value(action.get("value"))
        user = id_of(body, "user")
        container = body.get("container") or {}
        channel = id_of(body, "channel") or text_of(container, "channel_id")
        entry, fp = value.get("e"), value.get("f")
        lang = _lang_of(value, action)
        helpful = action.get("action_id") == bk.ACTION_FEEDBACK_UP
        outcome: str | None = None
        failure: Exception | None = None
        if user and entry and fp:
            try:  # Slack's click time orders the votes of one user, whichever replica stores them
                outcome = self.feedback.record_vote(user=user, entry_id=entry, fingerprint=fp, helpful=helpful, channel=channel,
                                                    now=_action_time(action))
            except Exception as exc:
                failure = exc
        ack()
        if not (user and entry and fp):
            log.warning(kv("feedback_invalid", has_user=bool(user), has_entry=bool(entry)))
            return
        if failure is not None or outcome is None:
            log.error(kv("feedback_store_failed", entry=entry, error=type(failure).__name__), exc_info=failure)
            self.defer(self.clicks, self._reply_to_click, body, bk.render_error(uuid.uuid4().hex[:8], lang).text)
            return
        log.info(kv("feedback", entry=entry, fp=fp[:12], helpful=helpful, outcome=outcome, channel=channel))
        thanks = bk.label(lang, "thanks_up" if helpful else "thanks_down")
        if outcome == "changed":
            thanks += bk.label(lang, "thanks_changed")
        self.defer(self.clicks, self._reply_to_click, body, thanks)

    def on_share(self, ack: Any, body: dict, action: dict) -> None:
        ack()
        self.defer(self.clicks, self.share, body, action, time.monotonic())

    def on_escalate(self, ack: Any, body: dict, action: dict) -> None:
        ack()
        self.defer(self.clicks, self.escalate, body, action)

    def share(self, body: dict, action: dict, received: float | None = None, cached: tuple[Answer, str] | None = None) -> None:
        value = bk.parse_value(action.get("value"))
        user = id_of(body, "user")
        response_url = text_of(body, "response_url")
        try:
            cached = cached or (self.shares.get(value["k"]) if value.get("k") else None)
            if cached is None:  # after a restart: answer the question again, on the answer pool
                if not self.defer(self.answers, self._share_again, body, action, received):
                    raise RuntimeError("answer queue full")
                return
            answer, fp = cached
            rendered = bk.render_answer(answer, fp=fp, shared_by=user_ref(user))
            if not self.send_response_url(response_url, response_type="in_channel", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
            self.send_response_url(response_url, delete_original=True)
            log.info(kv("shared", channel=id_of(body, "channel"), fp=fp[:12]))
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("share_failed", ref=ref, error=_api_error(exc)))
            self._reply_to_click(body, bk.render_error(ref, _lang_of(value, action)).text)

    def _share_again(self, body: dict, action: dict, received: float | None) -> None:
        query = bk.parse_value(action.get("value")).get("q") or ""
        self.share(body, action, received, (self.ask(query, received), fingerprint(query)))

    def escalate(self, body: dict, action: dict) -> None:
        """Tag the support group, once per thread (or private answer) on every replica, and once per user per cooldown.
        An ephemeral answer's question was private: nothing of it is posted."""
        value = bk.parse_value(action.get("value"))
        lang = _lang_of(value, action)
        user = id_of(body, "user")
        container = body.get("container") or {}
        channel = id_of(body, "channel") or text_of(container, "channel_id")
        private = container.get("is_ephemeral") is True or value.get("p") == "1"
        thread_ts = value.get("t") or text_of(container, "thread_ts")
        if not thread_ts and not private:
            thread_ts = text_of(container, "message_ts")
        group = f"<!subteam^{self.escalation_group}> " if self.escalation_group else ""
        text = bk.label(lang, "escalated", group=group, user=user_ref(user) or bk.label(lang, "someone"))
        thread_key = str(thread_ts or f"fp:{value.get('f') or '-'}")  # an ephemeral answer has no thread: its question
        claimed = False
        try:
            if not channel:
                raise RuntimeError("no channel in the action payload")
            earlier = self._claim_escalation(channel, thread_key, user, value.get("f"))
            if earlier is not None:  # one escalation per thread, across replicas and repeated clicks
                log.info(kv("escalation_duplicate", channel=channel, fp=value.get("f")))
                who = user_ref(earlier) or bk.label(lang, "someone")
                self._reply_to_click(body, bk.label(lang, "already_escalated", user=who))
                return
            claimed = True
            if (user and self.escalating_users.active(user)) or not self.escalating_channels.allow(channel):
                log.info(kv("escalation_limited", channel=channel))
                self._release_escalation(channel, thread_key)
                claimed = False
                self._reply_to_click(body, bk.label(lang, "escalated_recently"))
                return
            self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text, unfurl_links=False)
            if user:
                self.escalating_users.allow(user)
            log.info(kv("escalated", channel=channel, group=bool(group), fp=value.get("f"), private=private))
            ack_text = bk.label(lang, "escalated_ack") + (bk.label(lang, "escalated_private") if private else "")
            self._reply_to_click(body, ack_text)
        except Exception as exc:
            if claimed:  # nobody was told: let the next click try again
                self._release_escalation(str(channel), thread_key)
            ref = uuid.uuid4().hex[:8]
            error = _api_error(exc)
            log.error(kv("escalation_failed", channel=channel, ref=ref, error=error))
            if error in ("slack:not_in_channel", "slack:channel_not_found", "slack:is_archived"):
                self._reply_to_click(body, bk.label(lang, "not_in_channel"))
            else:
                self._reply_to_click(body, bk.render_error(ref, lang).text)

    def _claim_escalation(self, channel: str, thread_key: str, user: str | None, fp: Any) -> str | None:
        """None when this click may escalate; else who asked first."""
        key = f"{channel}:{thread_key}"
        try:
            earlier = self.state.claim_escalation(channel, thread_key, user=user, fingerprint=str(fp) if fp else None)
        except DatabaseUnavailable:
            first = self._escalations.add_if_absent(key, user or "")
            return None if first else (self._escalations.get(key) or "")
        if earlier is None:
            self._escalations.set(key, user or "")
            return None
        return earlier.requested_by or ""

    def _release_escalation(self, channel: str, thread_key: str) -> None:
        self._escalations.pop(f"{channel}:{thread_key}")
        try:
            self.state.release_escalation(channel, thread_key)
        except DatabaseUnavailable:
            pass

    def _reply_to_click(self, body: dict, text: str) -> None:
        """An ephemeral note to whoever clicked: via response_url, else chat.postEphemeral."""
        if self.send_response_url(text_of(body, "response_url"), response_type="ephemeral", replace_original=False, text=text):
            return
        container = body.get("container") or {}
        channel = id_of(body, "channel") or text_of(container, "channel_id")
        self._ephemeral(channel, id_of(body, "user"), text, text_of(container, "thread_ts"))

    def _ephemeral(self, channel: str | None, user: str | None, text: str, thread_ts: str | None = None) -> None:
        if not channel or not user:
            return
        try:
            kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": text}
            if thread_ts:
                kwargs["thread_ts"] = thread_ts
            self.client.chat_postEphemeral(**kwargs)
        except Exception as exc:
            log.warning(kv("ephemeral_failed", channel=channel, error=_api_error(exc)))

    # --- bookkeeping ---------------------------------------------------------------------------

    def _record_gap(self, query: str, answer: Answer, surface: str, channel: str | None) -> None:
        try:
            self.feedback.record_unanswered(query, lang=answer.lang, surface=surface, channel=channel, suggestions=answer.suggestions)
        except Exception as exc:
            log.error(kv("gap_store_failed", error=type(exc).__name__))

    def _log_reply(self, surface: str, channel: str | None, user: str | None, query: str, answer: Answer, fp: str, started: float) -> None:
        entry = answer.results[0].id if answer.answered and answer.results else None
        try:  # the activity counts (report, App Home); queued by the store if the database is down
            self.feedback.record_reply(surface=surface, channel=channel, fingerprint=fp, entry_id=entry, answered=answer.answered,
                                       confidence=answer.confidence, lang=answer.lang)
        except Exception as exc:
            log.error(kv("reply_store_failed", error=type(exc).__name__))
        log.info(
            kv(
                "reply",
                surface=surface,
                channel=channel,
                user=user,
                chars=len(query),
                fp=fp[:12],
                answered=answer.answered,
                entry=answer.results[0].id if answer.answered and answer.results else None,
                confidence=answer.confidence,
                lang=answer.lang,
                ms=int((time.monotonic() - started) * 1000),
            )
        )


def _lang_of(value: dict[str, str], action: dict) -> str:
    """The reply language a button carries ("l"), else the language of its label."""
    if value.get("l") in bk.LABELS:
        return value["l"]
    label = action.get("text")
    return guess_lang(text_of(label, "text") or "" if isinstance(label, dict) else "")


def _action_time(action: dict) -> float | None:
    """Slack's own time of a click (action_ts), the same for every replica; None when absent or odd."""
    try:
        value = float(action.get("action_ts"))
    except (TypeError, ValueError):
        return None
    return value if 1e9 < value < 1e11 else None


def _api_error(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError) and exc.response is not None:
        return f"slack:{exc.response.get('error')}"
    return type(exc).__name__


def build_app(settings: Settings, engine: "Engine", **kwargs: Any) -> App:
    """The configured Bolt App (see SlackBot for the state behind it)."""
    return SlackBot(settings, engine, **kwargs).app
