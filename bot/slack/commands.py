"""The slash command `/mindie-help`: questions and `env`; help, stats, reload and channel are in admin.py."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from bot.engine.normalize import prepare
from bot.feedback import fingerprint
from bot.logs import get_logger, kv
from bot.slack import blocks as bk
from bot.slack.admin import parse as parse_admin
from bot.slack.app_util import HELP_WORDS, api_error, guess_lang, is_chitchat, split_lang_flag
from bot.slack.payloads import text_of

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.slack.app import SlackBot

log = get_logger()

ENV_ACK_CHARS = 20_000  # `/mindie-help env` pastes up to this long are checked in the ack itself


class Commands:
    """`/mindie-help`."""

    def __init__(self, bot: "SlackBot") -> None:
        self.bot = bot

    def register(self, app: "App") -> None:
        app.command("/mindie-help")(self.bot.tracked(self.on_command))

    def on_command(self, ack: Any, command: dict) -> None:
        raw = text_of(command, "text") or ""
        if (sub := parse_admin(raw)) is not None:  # help, stats, reload, channel: bot/slack/admin.py
            self.bot.admin.on_command(ack, command, sub)
            return
        if raw.strip().split(maxsplit=1)[:1] in (["env"], ["ENV"], ["Env"]):
            self.on_env_command(ack, command, raw.strip()[3:].strip())
            return
        if not raw.strip() or raw.strip().lower() in HELP_WORDS:
            usage = bk.render_usage(guess_lang(raw.strip()))
            ack(text=usage.text, blocks=usage.blocks, response_type="ephemeral")
            return
        if is_chitchat(raw):  # "/mindie-help thanks": a friendly line, not a knowledge gap
            ack(text=bk.label(guess_lang(raw), "chitchat"), response_type="ephemeral")
            return
        ack()  # first, before anything that can wait: Slack gives up after 3 s
        received = time.monotonic()
        user, channel = text_of(command, "user_id"), text_of(command, "channel_id")
        response_url = text_of(command, "response_url")
        wait = self.bot.limited(user, channel)
        if wait:
            self.bot.defer(self.bot.clicks, self.bot.limit_note, channel, user, wait, guess_lang(raw[:2000]), response_url)
            return
        if not self.bot.defer(self.bot.answers, self.answer_command, command, received):
            self.bot.defer(self.bot.clicks, self.bot.busy, channel, user, guess_lang(raw[:2000]), response_url)

    def answer_command(self, command: dict, received: float | None = None) -> None:
        text, forced = split_lang_flag((text_of(command, "text") or "").strip())
        lang = forced or guess_lang(text)
        started = time.monotonic()
        response_url = text_of(command, "response_url")
        channel = text_of(command, "channel_id")
        try:
            answer = self.bot.ask(text, received, forced)
            fp = fingerprint(text)
            share = None
            if answer.answered and answer.results:
                key = uuid.uuid4().hex[:16]
                self.bot.shares.set(key, (answer, fp))
                share = {"k": key, "q": text[:1500], "l": answer.lang}
            # Private: the question is only posted (to the support channel) if the user asks a human.
            rendered = self.bot.render_reply(answer, text, fp, thread_ts=None, private=True, share_value=share)
            if not self.bot.send_response_url(response_url, response_type="ephemeral", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
            if not answer.answered:
                self.bot.record_gap(text, answer, "command", channel)
            self.bot.log_reply("command", channel, text_of(command, "user_id"), text, answer, fp, started)
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("command_failed", channel=channel, ref=ref, error=api_error(exc)), exc_info=not isinstance(exc, (SlackApiError, RuntimeError)))
            err = bk.render_error(ref, lang)
            if not self.bot.send_response_url(response_url, response_type="ephemeral", replace_original=False, **err.as_kwargs()):
                self.bot.ephemeral(channel, text_of(command, "user_id"), err.text)

    def on_env_command(self, ack: Any, command: dict, paste: str) -> None:
        """`/mindie-help env <paste>`: the environment check alone; with nothing pasted, the commands that collect the
        facts. A paste of up to ENV_ACK_CHARS is answered in the ack (the check is linear and needs no model: a few
        milliseconds); a longer one is acknowledged first and checked on a worker, like any answer (issue #11)."""
        lang = guess_lang(paste[:2000])
        user, channel = text_of(command, "user_id"), text_of(command, "channel_id")
        wait = self.bot.limited(user, channel) if paste else 0
        if wait:
            ack(text=bk.label(lang, "rate_limited", seconds=wait), response_type="ephemeral")
            log.info(kv("rate_limited", channel=channel, user=user, wait=wait))
            return
        if len(paste) <= ENV_ACK_CHARS:
            rendered = self.environment_reply(paste, lang, channel)
            ack(text=rendered.text, blocks=rendered.blocks, response_type="ephemeral")
            return
        ack()
        if not self.bot.defer(self.bot.answers, self.answer_env, command, paste, lang):
            self.bot.defer(self.bot.clicks, self.bot.busy, channel, user, lang, text_of(command, "response_url"))

    def environment_reply(self, paste: str, lang: str, channel: str | None) -> bk.Rendered:
        report = self.bot.engine.environment(prepare(paste, self.bot.settings.max_input_bytes).text) if paste else None
        log.info(kv("env_command", channel=channel, chars=len(paste), facts=len(report.facts) if report else 0,
                    verdict=report.verdict if report else None))
        return bk.render_environment_report(report, lang)

    def answer_env(self, command: dict, paste: str, lang: str) -> None:
        channel, response_url = text_of(command, "channel_id"), text_of(command, "response_url")
        try:
            rendered = self.environment_reply(paste, lang, channel)
            if not self.bot.send_response_url(response_url, response_type="ephemeral", replace_original=False, **rendered.as_kwargs()):
                raise RuntimeError("response_url post failed")
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("env_command_failed", channel=channel, ref=ref, error=api_error(exc)), exc_info=not isinstance(exc, RuntimeError))
            err = bk.render_error(ref, lang)
            if not self.bot.send_response_url(response_url, response_type="ephemeral", replace_original=False, **err.as_kwargs()):
                self.bot.ephemeral(channel, text_of(command, "user_id"), err.text)
