"""The message shortcut "Diagnose with mindie-help" (callback_id `mindie_help_diagnose`, type message_action).

Acknowledged at once; a worker then checks that the bot can post in that conversation and hands the message's
text and files to the shared reply path (SlackBot.request_explicit, surface "shortcut"), which answers in the
message's thread, whichever channel it is in. Where the bot cannot post (it is not a member, or the message is
in a conversation it cannot see), the person who used the shortcut is told so privately, rather than the answer
silently failing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from bot.logs import get_logger, kv
from bot.slack import blocks as bk
from bot.slack.admin_labels import say
from bot.slack.app_util import api_error, guess_lang
from bot.slack.events import event_text
from bot.slack.payloads import id_of, text_of

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.slack.app import SlackBot

log = get_logger()

CALLBACK_ID = "mindie_help_diagnose"
# Errors that mean "the bot cannot read or post in this conversation": the user is told instead.
_CANNOT_POST = {"not_in_channel", "channel_not_found", "is_archived", "access_denied"}


class Shortcuts:
    """Message shortcuts."""

    def __init__(self, bot: "SlackBot") -> None:
        self.bot = bot

    def register(self, app: "App") -> None:
        app.message_shortcut(CALLBACK_ID)(self.bot.tracked(self.on_diagnose))

    def on_diagnose(self, ack: Any, body: dict) -> None:
        ack()  # first: the membership check below is an API call
        self.bot.defer(self.bot.clicks, self.diagnose, body)

    def diagnose(self, body: dict) -> None:
        """On the click pool: check, then queue the answer (request_explicit applies the rate limits and the queue)."""
        message = body.get("message") if isinstance(body.get("message"), dict) else {}
        channel, user = id_of(body, "channel"), id_of(body, "user")
        ts = text_of(message, "ts") or text_of(body, "message_ts")
        text = event_text(message, deep=bool(text_of(message, "bot_id")))  # an alert bot's attachments too
        files = message.get("files") if isinstance(message.get("files"), list) else None
        lang = guess_lang(text[:2000])
        if not channel or not ts:
            log.warning(kv("shortcut_invalid", has_channel=bool(channel), has_ts=bool(ts)))
            return
        if not text.strip() and not files:
            self.note(body, say(lang, "nothing_to_diagnose"))
            return
        if not self.can_post(channel, ts):
            self.note(body, bk.label(lang, "not_in_channel"))
            return
        thread = text_of(message, "thread_ts")
        log.info(kv("shortcut", channel=channel, user=user, in_thread=bool(thread and thread != ts), files=len(files or [])))
        # ts=None: the message itself was usually seen (and claimed) as a message event already; this is a new,
        # explicit request (a replayed shortcut is dropped by its trigger_id). A short reply in a thread is read
        # with the thread's first message, as a short mention there is.
        self.bot.request_explicit(
            surface="shortcut", channel=channel, ts=None, thread_ts=thread or ts,
            root_ts=thread if thread and thread != ts else None, user=user, text=text, files=files,
        )

    def can_post(self, channel: str, ts: str) -> bool:
        """False when Slack says the bot is not in that conversation (reading it needs the same membership)."""
        started = time.monotonic()
        try:
            self.bot.client.conversations_replies(channel=channel, ts=ts, limit=1, inclusive=True)
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            if error in _CANNOT_POST:
                log.info(kv("shortcut_cannot_post", channel=channel, error=error))
                return False
            log.warning(kv("shortcut_check_failed", channel=channel, error=api_error(exc)))
        except Exception as exc:  # the answer's own post will tell
            log.warning(kv("shortcut_check_failed", channel=channel, error=api_error(exc), ms=int((time.monotonic() - started) * 1000)))
        return True

    def note(self, body: dict, text: str) -> None:
        """A private note to whoever used the shortcut (its response_url; chat.postEphemeral when that fails)."""
        if not self.bot.send_response_url(text_of(body, "response_url"), response_type="ephemeral", text=text):
            self.bot.ephemeral(id_of(body, "channel"), id_of(body, "user"), text)
