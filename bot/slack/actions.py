"""Buttons: feedback votes, share, ask a human. Each click is acknowledged at once and handled on the click pool."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from bot.engine.models import Answer
from bot.feedback import fingerprint
from bot.logs import get_logger, kv
from bot.slack import blocks as bk
from bot.slack.app_util import api_error, guess_lang, user_ref
from bot.slack.dedupe import TTLCache
from bot.slack.payloads import id_of, text_of
from bot.storage import DatabaseUnavailable

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.slack.app import SlackBot

log = get_logger()

ESCALATION_TTL = 7 * 24 * 3600.0


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



class Actions:
    """block_actions of the bot's own buttons."""

    def __init__(self, bot: "SlackBot") -> None:
        self.bot = bot
        self._escalations: TTLCache[str] = TTLCache(ESCALATION_TTL, 10_000)  # stand-in while the database is down

    def register(self, app: "App") -> None:
        track = self.bot.tracked
        app.action(bk.ACTION_FEEDBACK_UP)(track(self.on_feedback))
        app.action(bk.ACTION_FEEDBACK_DOWN)(track(self.on_feedback))
        app.action(bk.ACTION_SHARE)(track(self.on_share))
        app.action(bk.ACTION_ESCALATE)(track(self.on_escalate))

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
                outcome = self.bot.feedback.record_vote(user=user, entry_id=entry, fingerprint=fp, helpful=helpful, channel=channel,
                                                    now=_action_time(action))
            except Exception as exc:
                failure = exc
        ack()
        if not (user and entry and fp):
            log.warning(kv("feedback_invalid", has_user=bool(user), has_entry=bool(entry)))
            return
        if failure is not None or outcome is None:
            log.error(kv("feedback_store_failed", entry=entry, error=type(failure).__name__), exc_info=failure)
            self.bot.defer(self.bot.clicks, self._reply_to_click, body, bk.render_error(uuid.uuid4().hex[:8], lang).text)
            return
        log.info(kv("feedback", entry=entry, fp=fp[:12], helpful=helpful, outcome=outcome, channel=channel))
        thanks = bk.label(lang, "thanks_up" if helpful else "thanks_down")
        if outcome == "changed":
            thanks += bk.label(lang, "thanks_changed")
        self.bot.defer(self.bot.clicks, self._reply_to_click, body, thanks)

    def on_share(self, ack: Any, body: dict, action: dict) -> None:
        ack()
        self.bot.defer(self.bot.clicks, self.share, body, action, time.monotonic())

    def on_escalate(self, ack: Any, body: dict, action: dict) -> None:
        ack()
        self.bot.defer(self.bot.clicks, self.escalate, body, action)

    def share(self, body: dict, action: dict, received: float | None = None, cached: tuple[Answer, str] | None = None) -> None:
        value = bk.parse_value(action.get("value"))
        user = id_of(body, "user")
        response_url = text_of(body, "response_url")
        try:
            cached = cached or (self.bot.shares.get(value["k"]) if value.get("k") else None)
            if cached is None:  # after a restart: answer the question again, on the answer pool
                if not self.bot.defer(self.bot.answers, self._share_again, body, action, received):
                    raise RuntimeError("answer queue full")
                return
            answer, fp = cached
            rendered = bk.render_answer(answer, fp=fp, shared_by=user_ref(user))
            if not self.bot.send_response_url(response_url, response_type="in_channel", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
            self.bot.send_response_url(response_url, delete_original=True)
            log.info(kv("shared", channel=id_of(body, "channel"), fp=fp[:12]))
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("share_failed", ref=ref, error=api_error(exc)))
            self._reply_to_click(body, bk.render_error(ref, _lang_of(value, action)).text)

    def _share_again(self, body: dict, action: dict, received: float | None) -> None:
        query = bk.parse_value(action.get("value")).get("q") or ""
        self.share(body, action, received, (self.bot.ask(query, received), fingerprint(query)))

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
        group = f"<!subteam^{self.bot.escalation_group}> " if self.bot.escalation_group else ""
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
            if (user and self.bot.escalating_users.active(user)) or not self.bot.escalating_channels.allow(channel):
                log.info(kv("escalation_limited", channel=channel))
                self._release_escalation(channel, thread_key)
                claimed = False
                self._reply_to_click(body, bk.label(lang, "escalated_recently"))
                return
            self.bot.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text, unfurl_links=False)
            if user:
                self.bot.escalating_users.allow(user)
            log.info(kv("escalated", channel=channel, group=bool(group), fp=value.get("f"), private=private))
            ack_text = bk.label(lang, "escalated_ack") + (bk.label(lang, "escalated_private") if private else "")
            self._reply_to_click(body, ack_text)
        except Exception as exc:
            if claimed:  # nobody was told: let the next click try again
                self._release_escalation(str(channel), thread_key)
            ref = uuid.uuid4().hex[:8]
            error = api_error(exc)
            log.error(kv("escalation_failed", channel=channel, ref=ref, error=error))
            if error in ("slack:not_in_channel", "slack:channel_not_found", "slack:is_archived"):
                self._reply_to_click(body, bk.label(lang, "not_in_channel"))
            else:
                self._reply_to_click(body, bk.render_error(ref, lang).text)

    def _claim_escalation(self, channel: str, thread_key: str, user: str | None, fp: Any) -> str | None:
        """None when this click may escalate; else who asked first."""
        key = f"{channel}:{thread_key}"
        try:
            earlier = self.bot.state.claim_escalation(channel, thread_key, user=user, fingerprint=str(fp) if fp else None)
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
            self.bot.state.release_escalation(channel, thread_key)
        except DatabaseUnavailable:
            pass

    def _reply_to_click(self, body: dict, text: str) -> None:
        """An ephemeral note to whoever clicked: via response_url, else chat.postEphemeral."""
        if self.bot.send_response_url(text_of(body, "response_url"), response_type="ephemeral", replace_original=False, text=text):
            return
        container = body.get("container") or {}
        channel = id_of(body, "channel") or text_of(container, "channel_id")
        self.bot.ephemeral(channel, id_of(body, "user"), text, text_of(container, "thread_ts"))
