"""Small helpers shared by the Slack surfaces: languages, user mentions, the Web API client, error names."""

from __future__ import annotations

import re
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from bot.engine.normalize import detect_lang
from bot.engine.normalize import strip_mentions as _strip_user_mentions
from bot.settings import Settings

_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")  # matched against ids Slack sends, never against message text
HELP_WORDS = {"help", "-h", "--help", "usage", "?", "hi", "hello", "hey", "帮助", "用法", "你好", "您好"}


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


def strip_mentions(text: str) -> str:
    """The text without user mentions (a linear scanner: a regex here froze the bot on unclosed `<@U1|`)."""
    return _strip_user_mentions(text or "").strip()


def api_error(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError) and exc.response is not None:
        return f"slack:{exc.response.get('error')}"
    return type(exc).__name__


