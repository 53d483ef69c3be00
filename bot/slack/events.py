"""Events: mentions, direct messages and the quiet auto-reply to logs pasted in channels.

Listeners only decide and enqueue (Bolt has already acknowledged the event); the answer is prepared on the bot's
workers through SlackBot's shared reply path.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from bot.engine.normalize import looks_like_log
from bot.feedback import fingerprint
from bot.logs import get_logger, kv
from bot.slack import blocks as bk
from bot.slack.app_util import guess_lang
from bot.slack.payloads import text_of
from bot.slack.work import AUTOMATIC
from bot.slack.app_util import api_error

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.slack.app import SlackBot

log = get_logger()

# Message subtypes that carry something a person wrote; everything else (edits, deletions, joins, topic
# changes, ...) is ignored. `bot_message` is only considered for bots listed in MINDIE_HELP_ANSWER_BOT_IDS.
HUMAN_SUBTYPES = {None, "file_share", "thread_broadcast"}
MIN_AUTO_CHARS = 12  # shorter channel messages are chit-chat; they never reach the engine


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


class Events:
    """app_mention and message events."""

    def __init__(self, bot: "SlackBot") -> None:
        self.bot = bot

    def register(self, app: "App") -> None:
        track = self.bot.tracked
        app.event("app_mention")(track(self.on_mention))
        app.event("message")(track(self.on_message))

    def on_mention(self, event: dict, context: Any, body: dict) -> None:
        self.bot.identify(context)
        if self._skip_reason(event, context) is not None:
            return
        channel, ts = text_of(event, "channel"), text_of(event, "ts")
        if not channel:
            return
        if self.bot.channel_mode(channel)[0] == "off":  # an admin switched the bot off here: say so, privately
            log.info(kv("mention_ignored", channel=channel, reason="channel_off"))
            user = text_of(event, "user")
            self.bot.defer(self.bot.clicks, self.bot.ephemeral, channel, user, bk.label(guess_lang((text_of(event, "text") or "")[:2000]), "channel_off"))
            return
        self.bot.request_explicit(
            surface="mention", channel=channel, ts=ts, thread_ts=text_of(event, "thread_ts") or ts,
            root_ts=text_of(event, "thread_ts"), user=text_of(event, "user"),
            text=event_text(event, deep=bool(event.get("bot_id"))), files=event.get("files"),
        )

    def _skip_reason(self, event: dict, context: Any) -> str | None:
        """Why a message must not be answered: edits, joins, our own messages, other bots."""
        subtype = text_of(event, "subtype")
        bot_id = text_of(event, "bot_id")
        user = text_of(event, "user")
        if (bot_id and bot_id == self.bot.bot_id) or (user and user == self.bot.bot_user_id):
            return "self"
        if subtype == "bot_message" or bot_id:
            if bot_id and bot_id in self.bot.settings.answer_bot_ids and subtype in (None, "bot_message", "file_share", "thread_broadcast"):
                return None
            return "bot"
        if subtype not in HUMAN_SUBTYPES:
            return f"subtype:{subtype}"
        if event.get("hidden"):
            return "hidden"
        return None

    def on_message(self, event: dict, context: Any) -> None:
        self.bot.identify(context)
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
            self.bot.request_explicit(
                surface="dm", channel=channel, ts=ts, thread_ts=text_of(event, "thread_ts"), root_ts=text_of(event, "thread_ts"),
                user=text_of(event, "user"), text=text, files=event.get("files"),
            )
            return
        if not integration and self.bot.bot_user_id and f"<@{self.bot.bot_user_id}" in text:
            return  # the app_mention event answers it
        settings = self.bot.settings
        mode, cooldown = self.bot.channel_mode(channel)
        if mode in ("mention", "off"):
            return
        if mode is None and (not settings.auto_reply or (settings.auto_reply_channels and channel not in settings.auto_reply_channels)):
            return
        who = text_of(event, "user") or text_of(event, "bot_id") or "?"
        if self.bot.cooldown.active(who, cooldown):
            log.info(kv("auto_cooldown", channel=channel, user=who))
            return
        if not text.strip() and not event.get("files"):
            return
        if not self.bot.dedupe.claim_message(channel, ts):
            return
        if not self.bot.defer(self.bot.answers, self.auto_reply, event, text, integration, time.monotonic(), cooldown, priority=AUTOMATIC):
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
            if self.bot.dedupe.resumed_message(channel, ts) and self.bot.replied_to(channel, root, ts):
                log.info(kv("resumed_already_answered", surface="auto", channel=channel, ts=ts))
                return  # the replica that died holding this message had answered it
            fetched = self.bot.fetch_files(files) if files else []
            readable = [f for f in fetched if f.ok]
            is_log = looks_like_log(text) or bool(readable)
            already = (channel, root) in self.bot.answered_threads
            if already and not is_log:
                return  # chatter in a thread the bot already answered
            if not is_log and len(text.strip()) < MIN_AUTO_CHARS:
                return
            query = self.bot.compose(text, readable)
            if not query.strip():
                return
            answer = self.bot.ask(query, received)
            fp = fingerprint(query)
            if not answer.answered or not answer.results:
                if is_log:
                    self.bot.record_gap(query, answer, "auto", channel)
                log.info(kv("auto_silent", channel=channel, chars=len(query), is_log=is_log, confidence=answer.confidence, fp=fp[:12]))
                return
            if not is_log and "signatures" not in answer.results[0].retrievers:
                log.info(kv("auto_silent", channel=channel, reason="no_signature", chars=len(query), fp=fp[:12]))
                return
            if thread_ts and thread_ts != ts and not already and not is_log and self.bot_replied_in_thread(channel, root):
                return  # answered before a restart (the in-memory thread list is empty)
            if not is_log:  # once per thread, whichever replica sees the thread's messages
                if not self.bot.answered_threads.claim((channel, root)):
                    return
                thread_claimed = True
            if not self.bot.cooldown.allow(who, cooldown):
                if thread_claimed:
                    self.bot.answered_threads.release((channel, root))
                return
            rendered = self.bot.render_reply(answer, query, fp, thread_ts=root, extra_notes=self.bot.file_notes(fetched, answer.lang))
            self.bot.post(channel, root, rendered, reply_to=ts)
            self.bot.answered_threads.set((channel, root), time.time())
            self.bot.log_reply("auto", channel, who, query, answer, fp, started)
        except Exception as exc:  # auto-replies fail silently in the channel, loudly in the log
            if thread_claimed:
                self.bot.answered_threads.release((channel, root))
            log.error(kv("auto_failed", channel=channel, error=api_error(exc)), exc_info=not isinstance(exc, SlackApiError))

    def bot_replied_in_thread(self, channel: str, root_ts: str) -> bool:
        """Ask Slack whether the bot already posted in this thread (memory is lost on restart)."""
        if not self.bot.bot_messages_in_thread(channel, root_ts):
            return False
        self.bot.answered_threads.set((channel, root_ts), time.time())
        return True
