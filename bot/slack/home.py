"""App Home: on `app_home_opened` (the Home tab), publish a view with how to use the bot, the activity of the last
7 and 30 days (the same figures as `/mindie-help stats`) and the top knowledge gaps.

Cheap: the figures are seven small queries, cached for CACHE_SECONDS so a burst of people opening the tab costs
one read; the view is published from the click pool (Bolt has already acknowledged the event). Failures are
logged, never raised: the tab then shows the last view published.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from bot.logs import get_logger, kv
from bot.slack import blocks as bk
from bot.slack.admin import Stats, read_stats, stats_sections
from bot.slack.admin_labels import say
from bot.slack.app_util import api_error, user_ref
from bot.slack.dedupe import TTLCache
from bot.slack.payloads import text_of
from bot.storage import DatabaseUnavailable

if TYPE_CHECKING:
    from slack_bolt import App

    from bot.slack.app import SlackBot

log = get_logger()

CACHE_SECONDS = 15.0
MAX_HOME_BLOCKS = 100  # Slack's limit for a Home tab view


class Home:
    """The App Home tab."""

    def __init__(self, bot: "SlackBot") -> None:
        self.bot = bot
        self._stats: TTLCache[Stats] = TTLCache(CACHE_SECONDS, 1)

    def register(self, app: "App") -> None:
        app.event("app_home_opened")(self.bot.tracked(self.on_home_opened))

    def on_home_opened(self, event: dict) -> None:
        user = text_of(event, "user")
        if text_of(event, "tab") != "home" or user_ref(user) is None:
            return  # the Messages tab, or no user to publish for
        self.bot.defer(self.bot.clicks, self.publish, user)

    def publish(self, user: str) -> None:
        try:
            self.bot.client.views_publish(user_id=user, view=self.view())
            log.info(kv("home_published", user=user))
        except Exception as exc:
            log.error(kv("home_failed", user=user, error=api_error(exc)), exc_info=not api_error(exc).startswith("slack:"))

    def stats(self) -> Stats | None:
        cached = self._stats.get("stats")
        if cached is not None:
            return cached
        try:
            found = read_stats(self.bot)
        except DatabaseUnavailable:
            return None
        self._stats.set("stats", found)
        return found

    def view(self, lang: str = "en") -> dict[str, Any]:
        blocks: list[dict[str, Any]] = [
            bk.header(say(lang, "home_title")),
            bk.section(say(lang, "home_howto")),
            bk.context(say("zh" if lang == "en" else "en", "home_howto_other")),
            {"type": "divider"},
            bk.section(f"*{say(lang, 'home_activity')}*"),
        ]
        stats = self.stats()
        if stats is None:
            blocks.append(bk.section(say(lang, "stats_unavailable")))
        else:
            blocks.extend(stats_sections(stats, lang))
        when = datetime.fromtimestamp(time.time(), tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
        blocks.append(bk.context(say(lang, "home_updated", when=when)))
        return {"type": "home", "blocks": bk.enforce_limits(blocks, lang)[:MAX_HOME_BLOCKS]}
