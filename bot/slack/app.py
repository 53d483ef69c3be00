"""The Bolt app's core: state, plumbing and the one reply path every Slack surface shares.

The surfaces live in their own modules and register themselves here: events (mention, DM, auto-reply:
bot/slack/events.py), the slash command (commands.py; its admin subcommands in admin.py), buttons (actions.py),
the Diagnose message shortcut (shortcuts.py) and App Home (home.py).

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
from slack_sdk.webhook import WebhookClient

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.engine.models import Answer
from bot.engine.normalize import looks_like_log
from bot.feedback import FeedbackStore, fingerprint
from bot.settings import Settings
from bot.slack import answer_view as views
from bot.slack import blocks as bk
from bot.slack.dedupe import Cooldown, Deduper, SharedMarks, TTLCache
from bot.storage import DatabaseUnavailable, SharedState
from bot.slack.files import FileText, download_text, file_name, needs_info, origin_of
from bot.slack.limits import RateLimiter
from bot.slack.payloads import sanitize, sanitize_file, text_of
from bot.slack.work import EXPLICIT, WorkQueue
from bot.slack.app_util import (  # noqa: F401 (re-exported for callers of bot.slack.app)
    HELP_WORDS, api_base_url, api_error, guess_lang, is_chitchat, make_web_client, normalise_group, retry_handlers, split_lang_flag,
    strip_mentions, user_ref,
)
from bot.slack.actions import Actions
from bot.slack.admin import Admin
from bot.slack.commands import Commands
from bot.slack.events import Events, event_text
from bot.slack.home import Home
from bot.slack.shortcuts import Shortcuts
from bot.logs import get_logger, kv, register_secret

if TYPE_CHECKING:  # the engine is only called through answer()/status()
    from bot.engine.engine import Engine

log = get_logger()

THREAD_CONTEXT_CHARS = 25  # a mention shorter than this in a thread is answered with the thread's first message
ANSWERED_THREAD_TTL = 7 * 24 * 3600.0
SHARE_TTL = 24 * 3600.0
ESCALATIONS_PER_CHANNEL_HOUR = 6
LIMIT_NOTE_SECONDS = 60.0  # at most one "slow down" note per user per minute
_TEXT_ONLY_ERRORS = {"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_attachments"}
# Interactions that carry a one-time trigger_id: a second request with the same one is a replay.
_INTERACTIONS = {"block_actions", "shortcut", "message_action", "view_submission", "view_closed", "block_suggestion"}
REPLY_EVENT = "mindie_help_reply"  # message metadata on each answer: which message it answers (see replied_to())
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
        self.shares: TTLCache[tuple[Answer, str]] = TTLCache(SHARE_TTL, 2_000)
        self.details: TTLCache[tuple[Answer, str]] = TTLCache(SHARE_TTL, 2_000)  # Show details, on this replica
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
        track = self.tracked
        app.middleware(self._dedupe_events)
        self.events = Events(self)
        self.commands = Commands(self)
        self.actions = Actions(self)
        self.admin = Admin(self)  # /mindie-help help|stats|reload|channel, dispatched by Commands
        self.shortcuts = Shortcuts(self)
        self.home = Home(self)
        for surface in (self.events, self.commands, self.actions, self.shortcuts, self.home):
            surface.register(app)
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

    def tracked(self, fn: Callable[..., Any]) -> Callable[..., Any]:
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

    def forget_channel_mode(self, channel: str) -> None:
        """A channel's settings were just changed here: the next channel_mode() reads them, not the cached copy."""
        self._channels.pop(channel)

    def replace_engine(self, engine: "Engine") -> "Engine":
        """Swap in a new engine (a corpus reload) and return the old one. Under the engine lock: an answer being
        prepared finishes on the old engine, the next one uses the new engine."""
        with self._engine_lock:
            old, self.engine = self.engine, engine
        return old

    def on_other_request(self, ack: Any, body: dict) -> None:
        ack()
        log.debug(kv("request_ignored", type=(body or {}).get("type")))

    def identify(self, context: Any) -> None:
        if self.bot_user_id is None and context is not None:
            self.bot_user_id = context.get("bot_user_id")
            self.bot_id = context.get("bot_id")

    def on_other_event(self, event: dict) -> None:
        log.debug(kv("event_ignored", type=event.get("type")))

    def on_error(self, error: Exception, body: dict) -> None:
        log.error(kv("listener_error", error=type(error).__name__, body_type=text_of(body or {}, "type")), exc_info=error)

    def ask(self, text: str, received: float | None = None, lang: str | None = None) -> Answer:
        """Call the engine (serialised: one diagnosis at a time); it caps the input itself and says so. The time
        budget runs from when the request arrived: a reply that waited in the queue reads only the error lines.
        `lang` forces the reply language (`--en` / `--zh`)."""
        started = received if received is not None else time.monotonic()
        with self._engine_lock:
            return self.engine.answer(text, deadline=started + self.settings.answer_budget_seconds,
                                      lang=lang if lang in ("en", "zh") else None)

    # --- the reply path every surface shares ------------------------------------------------------------

    def render_reply(self, answer: Answer, query: str, fp: str, *, thread_ts: str | None, private: bool = False,
                     share_value: dict[str, Any] | None = None, extra_notes: list[str] | None = None,
                     shared_by: str | None = None, question: str | None = None) -> bk.Rendered:
        """The first message for an answer, with its buttons: Show details, votes, Resolved, Ask a human (every
        answer), Share (private answers). The details are kept for the click, and can be rebuilt from the
        button's own digest of the question on a replica that never saw it."""
        lang = answer.lang
        details = None
        if (answer.answered and answer.results) or answer.closest is not None:
            key = uuid.uuid4().hex[:16]
            self.details.set(key, (answer, fp))
            details = {"k": key, "q": question_digest(query, answer), "l": lang}
        escalate = {"t": thread_ts, "l": lang, "f": fp[:16], "q": excerpt_for_humans(query)}
        if private:
            escalate["p"] = "1"
        resolve = {"t": thread_ts, "l": lang, "f": fp[:16], "e": answer.results[0].id} if answer.answered and answer.results and not private else None
        return views.render_answer(answer, fp=fp, threshold=self.settings.threshold, details_value=details, share_value=share_value,
                                   escalate_value=escalate, resolve_value=resolve, extra_notes=extra_notes, shared_by=shared_by,
                                   question=question)

    def close(self) -> None:
        """Stop the worker threads once they are idle (shutdown)."""
        self.answers.close()
        self.clicks.close()
        self.admin.close()

    # --- rate limits --------------------------------------------------------------------------

    def limited(self, user: str | None, channel: str | None) -> int:
        """0 when this explicit request may go ahead, else roughly how many seconds the user should wait."""
        if user and not self.user_limit.allow(("user", user)):
            return self.user_limit.wait_seconds(("user", user))
        if channel and not self.channel_limit.allow(("channel", channel)):
            return self.channel_limit.wait_seconds(("channel", channel))
        return 0

    def limit_note(self, channel: str | None, user: str | None, wait: int, lang: str, response_url: str | None = None) -> None:
        log.info(kv("rate_limited", channel=channel, user=user, wait=wait))
        if not user or not self.limit_notes.allow(user):
            return  # one note per minute: the notes themselves must not become a flood
        text = bk.label(lang, "rate_limited", seconds=wait)
        if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, text=text):
            self.ephemeral(channel, user, text)

    def busy(self, channel: str | None, user: str | None, lang: str, response_url: str | None = None) -> None:
        text = bk.label(lang, "busy")
        if not self.send_response_url(response_url, response_type="ephemeral", replace_original=False, text=text):
            self.ephemeral(channel, user, text)

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

    def post(self, channel: str, thread_ts: str | None, rendered: bk.Rendered, reply_to: str | None = None) -> dict | None:
        """chat.postMessage; a Block Kit rejection is retried as plain text. Returns the API response data.

        `reply_to` (the ts of the message answered) travels as message metadata, so a replica that resumes a dead
        replica's work can tell whether that message was answered already (replied_to())."""
        kwargs: dict[str, Any] = {"channel": channel, "unfurl_links": False, "unfurl_media": False}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        if reply_to:
            kwargs["metadata"] = {"event_type": REPLY_EVENT, "event_payload": {"reply_to": reply_to}}
        try:
            return self.client.chat_postMessage(text=rendered.text, blocks=rendered.blocks, **kwargs).data  # type: ignore[return-value]
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            if error not in _TEXT_ONLY_ERRORS:
                raise
            log.warning(kv("blocks_rejected", channel=channel, error=error))
            return self.client.chat_postMessage(text=rendered.text, **kwargs).data  # type: ignore[return-value]

    def bot_messages_in_thread(self, channel: str, thread_ts: str, *, limit: int = 100, metadata: bool = False) -> list[dict]:
        """The bot's own messages in a thread, as Slack lists them now (memory is lost on restart and a dead
        replica's is elsewhere); none when Slack cannot be asked."""
        try:
            kwargs: dict[str, Any] = {"include_all_metadata": True} if metadata else {}
            data = self.client.conversations_replies(channel=channel, ts=thread_ts, limit=limit, **kwargs)
        except Exception as exc:
            log.warning(kv("thread_check_failed", channel=channel, error=api_error(exc)))
            return []
        return [m for m in data.get("messages") or [] if isinstance(m, dict) and (
            (self.bot_id and m.get("bot_id") == self.bot_id) or (self.bot_user_id and m.get("user") == self.bot_user_id))]

    def replied_to(self, channel: str, thread_ts: str | None, ts: str | None) -> bool:
        """Whether the bot's reply to message `ts` is already in its thread: one whose metadata names `ts`, or,
        when `ts` starts the thread, any reply by the bot (in case metadata is not returned). On an API error it
        says False: answering twice is better than not at all."""
        if not thread_ts or not ts:
            return False
        for message in self.bot_messages_in_thread(channel, thread_ts, limit=200, metadata=True):
            meta = message.get("metadata")
            if not isinstance(meta, dict) or meta.get("event_type") != REPLY_EVENT:
                if thread_ts == ts:
                    return True
                continue
            payload = meta.get("event_payload")
            if isinstance(payload, dict) and payload.get("reply_to") == ts:
                return True
        return False

    def post_error(self, channel: str, thread_ts: str | None, lang: str, ref: str) -> None:
        try:
            self.post(channel, thread_ts, bk.render_error(ref, lang))
        except Exception as exc:
            log.error(kv("error_message_failed", channel=channel, ref=ref, error=api_error(exc)))

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
                result = FileText(file_name(info), skipped=f"could not read it ({api_error(exc)})")
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

    def request_explicit(self, *, surface: str, channel: str, ts: str | None, user: str | None, text: str, **kwargs: Any) -> None:
        """On Bolt's thread: rate limits and the queue; the answer itself is prepared by a worker."""
        received = time.monotonic()
        if not self.dedupe.claim_message(channel, ts):
            log.info(kv("duplicate_message", surface=surface, channel=channel, ts=ts))
            return
        wait = self.limited(user, channel)
        if wait:
            self.defer(self.clicks, self.limit_note, channel, user, wait, guess_lang(text[:2000]))
            return
        job = functools.partial(self.answer_explicit, surface=surface, channel=channel, ts=ts, user=user, text=text, received=received, **kwargs)
        if not self.defer(self.answers, job):
            self.defer(self.clicks, self.busy, channel, user, guess_lang(text[:2000]))

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
        own, forced = split_lang_flag(strip_mentions(text))
        lang = forced or guess_lang(own)
        try:
            if self.dedupe.resumed_message(channel, ts) and self.replied_to(channel, thread_ts, ts):
                log.info(kv("resumed_already_answered", surface=surface, channel=channel, ts=ts))
                return  # the replica that died holding this message had answered it
            if not files and is_chitchat(own):  # "thanks!": a friendly line, not a knowledge gap
                self.post(channel, thread_ts, bk.render_text(bk.label(lang, "chitchat"), lang), reply_to=ts)
                log.info(kv("chitchat", surface=surface, channel=channel))
                return
            fetched = self.fetch_files(files)
            query = self.compose(own, fetched)
            if root_ts and root_ts != ts and not fetched and len(own) < THREAD_CONTEXT_CHARS and not looks_like_log(own):
                root = self.thread_root_text(channel, root_ts)
                query = "\n".join(p for p in (root, own) if p.strip())
            lang = forced or (guess_lang(query) if query else lang)
            notes = self.file_notes(fetched, lang)
            if not query.strip() or (own.lower() in HELP_WORDS and not fetched):
                usage = bk.label(lang, "usage")
                self.post(channel, thread_ts, bk.render_text("\n".join(notes + [usage]), lang), reply_to=ts)
                log.info(kv("usage", surface=surface, channel=channel, skipped_files=len(notes)))
                return
            answer = self.ask(query, received, forced)
            fp = fingerprint(query)
            rendered = self.render_reply(answer, query, fp, thread_ts=thread_ts, extra_notes=notes)
            self.post(channel, thread_ts, rendered, reply_to=ts)
            if thread_ts:
                self.answered_threads.set((channel, thread_ts), time.time())
            if not answer.answered:
                self.record_gap(query, answer, surface, channel)
            self.log_reply(surface, channel, user, query, answer, fp, started)
        except Exception as exc:
            log.error(kv("explicit_failed", surface=surface, channel=channel, ref=ref, error=api_error(exc)), exc_info=not isinstance(exc, SlackApiError))
            self.post_error(channel, thread_ts, lang, ref)

    def thread_root_text(self, channel: str, root_ts: str) -> str:
        try:
            data = self.client.conversations_replies(channel=channel, ts=root_ts, limit=1, inclusive=True)
        except Exception as exc:
            log.warning(kv("thread_root_failed", channel=channel, error=api_error(exc)))
            return ""
        for message in data.get("messages") or []:
            if isinstance(message, dict) and message.get("ts") == root_ts:
                files = self.fetch_files(message.get("files"))
                deep = bool(message.get("bot_id")) and message.get("bot_id") in self.settings.answer_bot_ids
                return self.compose(strip_mentions(event_text(message, deep=deep)), files)
        return ""

    # --- message events: DMs and auto-replies ------------------------------------------------------

    # --- buttons: acknowledged at once, handled on the click pool -------------------------------------

    def ephemeral(self, channel: str | None, user: str | None, text: str, thread_ts: str | None = None) -> None:
        if not channel or not user:
            return
        try:
            kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": text}
            if thread_ts:
                kwargs["thread_ts"] = thread_ts
            self.client.chat_postEphemeral(**kwargs)
        except Exception as exc:
            log.warning(kv("ephemeral_failed", channel=channel, error=api_error(exc)))

    # --- bookkeeping ---------------------------------------------------------------------------

    def record_gap(self, query: str, answer: Answer, surface: str, channel: str | None) -> None:
        try:
            self.feedback.record_unanswered(query, lang=answer.lang, surface=surface, channel=channel, suggestions=answer.suggestions)
        except Exception as exc:
            log.error(kv("gap_store_failed", error=type(exc).__name__))

    def log_reply(self, surface: str, channel: str | None, user: str | None, query: str, answer: Answer, fp: str, started: float) -> None:
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


DIGEST_CHARS = 1_500


def question_digest(query: str, answer: Answer) -> str:
    """What to answer again when a click lands on a replica that never saw the question: the question itself
    when short, else the lines that decided the answer (the root error and the matched lines)."""
    if len(query) <= DIGEST_CHARS:
        return query
    lines = [answer.root.text] if answer.root else []
    for hit in answer.results[:3]:
        lines += [m.text for m in hit.matched_lines[:3]]
    digest = "\n".join(dict.fromkeys(line for line in lines if line.strip()))
    return digest[:DIGEST_CHARS] or query[:DIGEST_CHARS]


def excerpt_for_humans(query: str, limit: int = 300) -> str:
    """The start of the question for the support channel: enough to triage, not the whole log."""
    flat = " ".join(query.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def build_app(settings: Settings, engine: "Engine", **kwargs: Any) -> App:
    """The configured Bolt App (see SlackBot for the state behind it)."""
    return SlackBot(settings, engine, **kwargs).app
