"""Buttons: feedback votes, share, ask a human. Each click is acknowledged at once and handled on the click pool."""

from __future__ import annotations

import time
from collections.abc import Callable
import uuid
from typing import TYPE_CHECKING, Any

from bot.engine.models import Answer
from bot.feedback import fingerprint
from bot.logs import get_logger, kv
from bot.slack import answer_view as views
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


def _channel_of(body: dict) -> str | None:
    """The conversation a click happened in (block_actions carry it in `channel`, ephemeral ones in the container)."""
    return id_of(body, "channel") or text_of(body.get("container") or {}, "channel_id")


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
        self._escalations: TTLCache[str] = TTLCache(ESCALATION_TTL, 10_000)  # stand-ins while the database is down
        self._resolved: TTLCache[str] = TTLCache(ESCALATION_TTL, 10_000)

    def register(self, app: "App") -> None:
        track = self.bot.tracked
        app.action(bk.ACTION_FEEDBACK_UP)(track(self.on_feedback))
        app.action(bk.ACTION_FEEDBACK_DOWN)(track(self.on_feedback))
        app.action(bk.ACTION_SHARE)(track(self.on_share))
        app.action(bk.ACTION_ESCALATE)(track(self.on_escalate))
        app.action(bk.ACTION_DETAILS)(track(self.on_details))
        app.action(bk.ACTION_RESOLVED)(track(self.on_resolved))

    def on_feedback(self, ack: Any, body: dict, action: dict) -> None:
        # The vote is stored (or queued, if the database is down) before the ack: an acknowledged click is never
        # lost, even if this replica is killed right after. One upsert: milliseconds, far inside Slack's 3 s. The
        # thank-you note (an HTTP call that can wait) goes to the click pool, after the ack.
        value = bk.parse_value(action.get("value"))
        user = id_of(body, "user")
        channel = _channel_of(body)
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
                if not self.bot.defer(self.bot.answers, self._answer_again, self.share, body, action, received):
                    raise RuntimeError("answer queue full")
                return
            answer, fp = cached
            question = value.get("q") or None
            rendered = self.bot.render_reply(answer, question or "", fp, thread_ts=None, shared_by=user_ref(user) or bk.label(answer.lang, "someone"),
                                             question=question)
            if not self.bot.send_response_url(response_url, response_type="in_channel", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
            self.bot.send_response_url(response_url, delete_original=True)
            log.info(kv("shared", channel=id_of(body, "channel"), fp=fp[:12]))
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("share_failed", ref=ref, error=api_error(exc)))
            self._reply_to_click(body, bk.render_error(ref, _lang_of(value, action)).text)

    def _answer_again(self, then: Callable[..., None], body: dict, action: dict, received: float | None) -> None:
        """A click on a replica that never saw the question (or after a restart): answer the question the button
        carries again, in its language, then go on with `then` (share or details) as if it had been cached."""
        value = bk.parse_value(action.get("value"))
        query = value.get("q") or ""
        then(body, action, received, (self.bot.ask(query, received, value.get("l")), fingerprint(query)))

    def escalate(self, body: dict, action: dict) -> None:
        """Ask the support team, once per thread (or private answer) on every replica, and once per user per cooldown.

        With MINDIE_HELP_ESCALATION_CHANNEL set, the request goes to that channel with a link to the thread and the
        start of the question, and the group is tagged there; the button is replaced by "asked by @x". Without it,
        the group is tagged in the thread itself. The group is never tagged inside a direct message."""
        value = bk.parse_value(action.get("value"))
        lang = _lang_of(value, action)
        user = id_of(body, "user")
        container = body.get("container") or {}
        channel = _channel_of(body)
        private = container.get("is_ephemeral") is True or value.get("p") == "1"
        direct = bool(channel and channel.startswith("D"))
        thread_ts = value.get("t") or text_of(container, "thread_ts")
        if not thread_ts and not private:
            thread_ts = text_of(container, "message_ts")
        support = self.bot.settings.escalation_channel
        group = f"<!subteam^{self.bot.escalation_group}> " if self.bot.escalation_group else ""
        who = user_ref(user) or bk.label(lang, "someone")
        thread_key = str(thread_ts or f"fp:{value.get('f') or '-'}")  # an ephemeral answer has no thread: its question
        claimed = False
        try:
            if not channel:
                raise RuntimeError("no channel in the action payload")
            if direct and not support:  # nobody to tell, and a ping in a DM reaches no one
                log.info(kv("escalation_unroutable", reason="dm_without_support_channel"))
                self._reply_to_click(body, bk.label(lang, "no_escalation_dm"))
                return
            earlier = self._claim_escalation(channel, thread_key, user, value.get("f"))
            if earlier is not None:  # one escalation per thread, across replicas and repeated clicks
                log.info(kv("escalation_duplicate", channel=channel, fp=value.get("f")))
                self._reply_to_click(body, bk.label(lang, "already_escalated", user=user_ref(earlier) or bk.label(lang, "someone")))
                return
            claimed = True
            if (user and self.bot.escalating_users.active(user)) or not self.bot.escalating_channels.allow(channel):
                log.info(kv("escalation_limited", channel=channel))
                self._release_escalation(channel, thread_key)
                claimed = False
                self._reply_to_click(body, bk.label(lang, "escalated_recently"))
                return
            if support:
                self.bot.client.chat_postMessage(channel=support, text=self._support_request(lang, group, who, channel, thread_ts, private, direct, value),
                                                 unfurl_links=False)
                ack_text = bk.label(lang, "escalated_channel", channel=f"<#{support}>")
            else:
                text = bk.label(lang, "escalated", group=group, user=who)
                self.bot.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text, unfurl_links=False)
                ack_text = bk.label(lang, "escalated_ack") + (bk.label(lang, "escalated_private") if private else "")
            if user:
                self.bot.escalating_users.allow(user)
            log.info(kv("escalated", channel=channel, support_channel=bool(support), group=bool(group), fp=value.get("f"), private=private))
            self._replace_button(body, bk.ACTION_ESCALATE, bk.label(lang, "requested_by", user=who))
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

    def _support_request(self, lang: str, group: str, who: str, channel: str, thread_ts: str | None, private: bool, direct: bool,
                         value: dict[str, str]) -> str:
        """The message in the support channel: who, where (a permalink to the thread), and the question's start."""
        if direct:
            where = bk.label(lang, "escalation_where_dm")
        elif private or not thread_ts:
            where = bk.label(lang, "escalation_where_private", channel=f"<#{channel}>")
        else:
            link = self._permalink(channel, thread_ts)
            where = bk.label(lang, "escalation_where_thread", link=f"<{link}|{bk.label(lang, 'open_thread')}>" if link else f"<#{channel}>")
        text = bk.label(lang, "escalation_post", group=group, user=who, where=where)
        question = value.get("q")
        if question:
            text += f"\n{bk.label(lang, 'escalation_question')}\n> {bk.esc(question)}"
        return text

    def _permalink(self, channel: str, ts: str) -> str | None:
        try:
            link = self.bot.client.chat_getPermalink(channel=channel, message_ts=ts).get("permalink")
        except Exception as exc:
            log.warning(kv("permalink_failed", channel=channel, error=api_error(exc)))
            return None
        return link if isinstance(link, str) and link.startswith("https://") else None

    def _replace_button(self, body: dict, action_id: str, note: str) -> None:
        """Swap the clicked button for a note ("asked by @x", "resolved by @x") in the message that holds it.
        Slack sends the message's blocks with the click (not for ephemeral messages: those keep their buttons)."""
        message = body.get("message") if isinstance(body.get("message"), dict) else None
        blocks = message.get("blocks") if message else None
        if not isinstance(blocks, list) or not blocks:
            return
        updated: list[Any] = []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "actions":
                elements = [e for e in block.get("elements") or [] if not (isinstance(e, dict) and e.get("action_id") == action_id)]
                if elements:
                    updated.append({**block, "elements": elements})
                updated.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
            else:
                updated.append(block)
        text = message.get("text") if isinstance(message.get("text"), str) else note
        if not self.bot.send_response_url(text_of(body, "response_url"), replace_original=True, text=text, blocks=updated):
            log.warning(kv("button_replace_failed", action=action_id))

    # --- Show details and Resolved ------------------------------------------------------------------

    def on_details(self, ack: Any, body: dict, action: dict) -> None:
        ack()
        self.bot.defer(self.bot.clicks, self.details, body, action, time.monotonic())

    def details(self, body: dict, action: dict, received: float | None = None, cached: tuple[Answer, str] | None = None) -> None:
        """Everything behind the first message, to whoever clicked (ephemeral). On a replica that never saw the
        question (or after a restart), the button's digest of the question is answered again."""
        value = bk.parse_value(action.get("value"))
        lang = _lang_of(value, action)
        try:
            cached = cached or (self.bot.details.get(value["k"]) if value.get("k") else None)
            if cached is None:
                if not value.get("q"):
                    self._reply_to_click(body, bk.label(lang, "details_expired"))
                    return
                if not self.bot.defer(self.bot.answers, self._answer_again, self.details, body, action, received):
                    raise RuntimeError("answer queue full")
                return
            answer, _fp = cached
            rendered = views.render_details(answer)
            if not self.bot.send_response_url(text_of(body, "response_url"), response_type="ephemeral", replace_original=False, **rendered.as_kwargs()):
                self.bot.ephemeral(_channel_of(body), id_of(body, "user"), rendered.text,
                                   text_of(body.get("container") or {}, "thread_ts"))
            log.info(kv("details", entry=answer.results[0].id if answer.results else None))
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("details_failed", ref=ref, error=api_error(exc)))
            self._reply_to_click(body, bk.render_error(ref, lang).text)

    def on_resolved(self, ack: Any, body: dict, action: dict) -> None:
        ack()
        self.bot.defer(self.bot.clicks, self.resolve, body, action)

    def resolve(self, body: dict, action: dict) -> None:
        """Mark the thread solved (stored with the feedback, on every replica), and say who did it in the message."""
        value = bk.parse_value(action.get("value"))
        lang = _lang_of(value, action)
        user = id_of(body, "user")
        container = body.get("container") or {}
        channel = _channel_of(body)
        thread_ts = value.get("t") or text_of(container, "thread_ts") or text_of(container, "message_ts")
        if not channel or not thread_ts:
            log.warning(kv("resolve_invalid", has_channel=bool(channel), has_thread=bool(thread_ts)))
            return
        try:
            first = self.bot.state.mark_resolved(channel, thread_ts, user)
        except DatabaseUnavailable:
            first = self._resolved.add_if_absent(f"{channel}:{thread_ts}", user or "")
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("resolve_failed", ref=ref, error=api_error(exc)))
            self._reply_to_click(body, bk.render_error(ref, lang).text)
            return
        log.info(kv("resolved", channel=channel, entry=value.get("e"), fp=value.get("f"), first=first))
        self._replace_button(body, bk.ACTION_RESOLVED, bk.label(lang, "resolved_by", user=user_ref(user) or bk.label(lang, "someone")))
        self._reply_to_click(body, bk.label(lang, "resolved_ack"))

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
        channel = _channel_of(body)
        self.bot.ephemeral(channel, id_of(body, "user"), text, text_of(container, "thread_ts"))
