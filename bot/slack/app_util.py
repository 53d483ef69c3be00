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




# Short messages that are only thanks or acknowledgement: a one-line reply, never a knowledge gap.
_CHITCHAT_WORDS = {
    "thanks", "thank", "you", "thx", "ty", "tks", "cheers", "great", "awesome", "nice", "cool", "perfect", "ok", "okay",
    "got", "it", "works", "worked", "now", "so", "much", "a", "lot", "very", "you're", "youre", "the", "best", "bot",
    "mindie-help", "that", "helped", "helps", "solved", "fixed", "amazing", "super", "many", "appreciated", "👍", "🙏",
    "谢谢", "多谢", "感谢", "谢了", "好的", "收到", "明白了", "明白", "解决了", "可以了", "厉害", "太棒了", "好", "了", "啦", "你",
    "非常", "哈",
}
_CHITCHAT_MARKS = "!！.。,，~～?？:)(）😀😄🙂😊❤️🎉"
_CHITCHAT_LONGEST_FIRST = sorted(_CHITCHAT_WORDS, key=len, reverse=True)


def is_chitchat(text: str) -> bool:
    """True for "thanks, you're awesome!", "谢谢！", "ok got it 👍": no error, no question to diagnose."""
    text = (text or "").strip().lower()
    if not text or len(text) > 80:
        return False
    for mark in _CHITCHAT_MARKS:
        text = text.replace(mark, " ")
    words = text.split()
    if not words:
        return False
    for word in words:
        rest = word
        # Chinese has no spaces: peel known words off the front ("谢谢你" -> "谢谢", "你").
        while rest:
            for known in _CHITCHAT_LONGEST_FIRST:
                if rest.startswith(known):
                    rest = rest[len(known):]
                    break
            else:
                return False
    return True


LANG_FLAGS = {"--en": "en", "--zh": "zh", "--english": "en", "--chinese": "zh", "--中文": "zh"}


def split_lang_flag(text: str) -> tuple[str, str | None]:
    """`--en` / `--zh` anywhere as a word of its own forces the reply language; the flag is taken out of the text."""
    forced: str | None = None
    kept: list[str] = []
    for line in (text or "").split("\n"):
        words = line.split(" ")
        remaining = []
        for word in words:
            flag = LANG_FLAGS.get(word.strip().lower())
            if flag:
                forced = flag
            else:
                remaining.append(word)
        kept.append(" ".join(remaining))
    return ("\n".join(kept).strip() if forced else text), forced
