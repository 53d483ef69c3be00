"""`/mindie-help help | stats | reload | channel …`: the slash command's subcommands (Commands.on_command hands them here).

* `help` (anyone): the usage plus the subcommands, in the asker's language; answered in the acknowledgement.
* `stats` (anyone): activity over the last 7 and 30 days and the top knowledge gaps, read on the click pool after
  the acknowledgement and sent ephemerally.
* `reload` (admins, MINDIE_HELP_ADMIN_IDS): acknowledged at once; the corpus is loaded and the index built or
  loaded on a worker of its own, and only a valid new engine replaces the old one (under the engine lock, so an
  answer being prepared finishes on the old engine); one that lost the dense search the old one had is refused too. The reload is announced in the database; the other replicas
  notice it within WATCH_SECONDS and reload too.
* `channel auto|mention|off|reset` (admins): the channel's auto-reply mode, stored with SharedState (the same
  store as `mindie-help channel set`), so every replica sees it; this replica drops its cached copy at once.

Subcommands are recognised only in their exact short forms (`channel` followed by a mode, `stats` alone...), so
a question that happens to begin with one of these words is still answered as a question.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.feedback import Activity, Gap
from bot.logs import get_logger, kv
from bot.slack import blocks as bk
from bot.slack.admin_labels import say
from bot.slack.app_util import api_error, guess_lang, user_ref
from bot.slack.payloads import text_of
from bot.slack.work import WorkQueue
from bot.storage import CHANNEL_MODES, DatabaseUnavailable

if TYPE_CHECKING:
    from bot.slack.app import SlackBot

log = get_logger()

HELP = {"help", "-h", "--help", "usage", "?", "帮助", "用法"}
STATS = {"stats", "统计"}
RELOAD = {"reload"}
CHANNEL = {"channel"}
CHANNEL_ARGS = set(CHANNEL_MODES) | {"reset", "status"}
LANGS = {"en": "en", "english": "en", "zh": "zh", "cn": "zh", "中文": "zh"}
GAP_DAYS = 30
TOP_GAPS = 5
GAP_CHARS = 160
RELOAD_ANNOUNCEMENT = "corpus_reload"
MAX_PROBLEMS_SHOWN = 15


@dataclass(frozen=True)
class Command:
    name: str  # help, stats, reload, channel
    arg: str | None
    lang: str


@dataclass(frozen=True)
class Stats:
    week: Activity
    month: Activity
    gaps: list[Gap]
    entries: int
    digest: str


def parse(raw: str) -> Command | None:
    """The subcommand in a `/mindie-help` text, or None when the text is a question (or `env`)."""
    text = (raw or "").strip()
    words = text.split()
    if not words:
        return Command("help", None, "en")
    first, rest = words[0].lower(), [w.lower() for w in words[1:]]
    lang = LANGS.get(rest[0]) if len(rest) == 1 else None
    if first in HELP and (not rest or lang):
        return Command("help", None, lang or guess_lang(words[0]))
    if first in STATS and (not rest or lang):
        return Command("stats", None, lang or guess_lang(words[0]))
    if first in RELOAD and not rest:
        return Command("reload", None, "en")
    if first in CHANNEL and (not rest or (len(rest) == 1 and rest[0] in CHANNEL_ARGS)):
        return Command("channel", rest[0] if rest else None, "en")
    return None


def read_stats(bot: "SlackBot", now: float | None = None) -> Stats:
    """Seven small queries; raises DatabaseUnavailable while the database is down."""
    now = time.time() if now is None else now
    store = bot.feedback
    status = bot.engine.status()
    return Stats(
        week=store.activity(7, now=now),
        month=store.activity(30, now=now),
        gaps=store.gaps(TOP_GAPS, since=now - GAP_DAYS * 86_400),
        entries=int(status.get("entries") or 0),
        digest=str(status.get("corpus_hash") or "?"),
    )


def figures(activity: Activity, lang: str) -> str:
    return say(lang, "figures", answered=activity.answered, abstained=activity.abstained, up=activity.helpful,
               down=activity.unhelpful, escalations=activity.escalations)


def stats_sections(stats: Stats, lang: str) -> list[dict[str, Any]]:
    """Figures and gaps as blocks, shared by `/mindie-help stats` and App Home. Gap excerpts are users' text:
    escaped (inline_code escapes) and clipped."""
    lines = [f"*{say(lang, 'window', days=a.days)}*: {figures(a, lang)}" for a in (stats.week, stats.month)]
    blocks = [bk.section("\n".join(lines))]
    gaps = [
        say(lang, "gap_line", n=n, excerpt=bk.inline_code(bk.clip(" ".join(g.excerpt.split()), GAP_CHARS)) or "…", count=g.count)
        for n, g in enumerate(stats.gaps, 1)
    ]
    blocks.append(bk.section(f"*{say(lang, 'gaps_title', days=GAP_DAYS)}*\n" + ("\n".join(gaps) if gaps else say(lang, "no_gaps"))))
    blocks.append(bk.context(say(lang, "knowledge", entries=stats.entries, digest=bk.esc(stats.digest))))
    return blocks


def _fallback(blocks: list[dict[str, Any]]) -> str:
    parts = []
    for block in blocks:
        if isinstance(block.get("text"), dict):
            parts.append(block["text"]["text"])
        for element in block.get("elements") or []:
            if isinstance(element, dict) and isinstance(element.get("text"), str):
                parts.append(element["text"])
    return bk.clip("\n".join(parts), bk.MAX_FALLBACK)


def render_stats(stats: Stats, lang: str) -> bk.Rendered:
    blocks = [bk.header(say(lang, "stats_title"))] + stats_sections(stats, lang)
    return bk.Rendered(text=_fallback(blocks[1:]), blocks=bk.enforce_limits(blocks, lang))


def render_help(lang: str) -> bk.Rendered:
    text = bk.label(lang, "usage") + "\n\n" + say(lang, "subcommands")
    return bk.Rendered(text=bk.clip(text, bk.MAX_FALLBACK), blocks=bk.enforce_limits([bk.section(bk.label(lang, "usage")), bk.section(say(lang, "subcommands"))], lang))


class Admin:
    """The subcommands, and the watch that makes every replica follow a reload made on another."""

    WATCH_SECONDS = 15.0

    def __init__(self, bot: "SlackBot") -> None:
        self.bot = bot
        self.loaded_at = time.time()  # the engine was built just before the bot: newer announcements mean "reload"
        self._lock = threading.Lock()
        self._reload_pending = False
        self._queue: WorkQueue | None = None
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._run_watch, name="mindie-help-reload-watch", daemon=True)
        self._watch.start()

    def close(self) -> None:
        self._stop.set()
        if self._queue is not None:
            self._queue.close()

    @property
    def queue(self) -> WorkQueue:
        """One thread for reloads, made on first use: a reload never holds up an answer worker."""
        with self._lock:
            if self._queue is None:
                self._queue = WorkQueue("reload", 1, maxsize=4)
            return self._queue

    # --- dispatch ---------------------------------------------------------------------------------

    def on_command(self, ack: Any, command: dict, sub: Command) -> None:
        """On Bolt's thread: answer in the acknowledgement only what needs no I/O; everything else after ack()."""
        user = text_of(command, "user_id")
        if sub.name == "help":
            rendered = render_help(sub.lang)
            ack(text=rendered.text, blocks=rendered.blocks, response_type="ephemeral")
            return
        if sub.name == "stats":
            ack()
            self._defer_click(command, sub.lang, self.send_stats, command, sub.lang)
            return
        if sub.name == "channel" and sub.arg in (None, "status"):
            ack()
            self._defer_click(command, sub.lang, self.show_channel, command, sub.lang)
            return
        what = "reload" if sub.name == "reload" else f"channel {sub.arg}"
        if not self.is_admin(user):
            log.info(kv("admin_refused", command=sub.name, user=user))
            ack(text=self.refusal(what, sub.lang), response_type="ephemeral")
            return
        if sub.name == "reload":
            self.start_reload(ack, command, sub.lang)
            return
        ack()
        self._defer_click(command, sub.lang, self.set_channel, command, str(sub.arg), sub.lang)

    def is_admin(self, user: str | None) -> bool:
        return bool(user) and user in self.bot.settings.admin_ids

    def refusal(self, what: str, lang: str) -> str:
        admins = [ref for ref in (user_ref(u) for u in self.bot.settings.admin_ids[:5]) if ref]
        return say(lang, "not_admin", what=bk.esc(what), who=", ".join(admins) if admins else say(lang, "admins_none"))

    def _defer_click(self, command: dict, lang: str, fn: Any, *args: Any) -> None:
        if not self.bot.defer(self.bot.clicks, fn, *args):
            self.bot.defer(self.bot.answers, self.bot.busy, text_of(command, "channel_id"), text_of(command, "user_id"), lang,
                           text_of(command, "response_url"))

    def reply(self, command: dict, rendered: bk.Rendered) -> None:
        """Ephemeral, through the command's response_url (chat.postEphemeral when that fails)."""
        if not self.bot.send_response_url(text_of(command, "response_url"), response_type="ephemeral", replace_original=False,
                                          **rendered.as_kwargs()):
            self.bot.ephemeral(text_of(command, "channel_id"), text_of(command, "user_id"), rendered.text)

    # --- stats --------------------------------------------------------------------------------------

    def send_stats(self, command: dict, lang: str) -> None:
        try:
            rendered = render_stats(read_stats(self.bot), lang)
        except DatabaseUnavailable:
            rendered = bk.render_text(say(lang, "stats_unavailable"), lang)
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("stats_failed", ref=ref, error=api_error(exc)), exc_info=exc)
            rendered = bk.render_error(ref, lang)
        self.reply(command, rendered)
        log.info(kv("stats", channel=text_of(command, "channel_id")))

    # --- channel mode -----------------------------------------------------------------------------------

    def default_mode(self, channel: str) -> str:
        settings = self.bot.settings
        auto = settings.auto_reply and (not settings.auto_reply_channels or channel in settings.auto_reply_channels)
        return "auto" if auto else "mention"

    def show_channel(self, command: dict, lang: str) -> None:
        channel = text_of(command, "channel_id") or ""
        mode, _ = self.bot.channel_mode(channel)
        shown = mode or self.default_mode(channel)
        source = say(lang, "source_channel" if mode else "source_default")
        self.reply(command, bk.render_text(say(lang, "channel_show", mode=shown, source=source, meaning=say(lang, f"mode_{shown}")), lang))

    def set_channel(self, command: dict, arg: str, lang: str) -> None:
        channel, user = text_of(command, "channel_id") or "", text_of(command, "user_id")
        if not channel or channel.startswith("D"):
            self.reply(command, bk.render_text(say(lang, "channel_not_here"), lang))
            return
        try:
            if arg == "reset":
                found = self.bot.state.reset_channel_mode(channel)
            else:
                found = self.bot.state.set_channel(channel, mode=arg)
        except DatabaseUnavailable:
            log.warning(kv("channel_mode_failed", channel=channel, reason="database unavailable"))
            self.reply(command, bk.render_text(say(lang, "channel_failed"), lang))
            return
        self.bot.forget_channel_mode(channel)  # this replica applies it now; the others within their cache's 10 s
        log.info(kv("channel_mode_set", channel=channel, mode=arg, user=user))
        if arg == "reset":
            shown = self.default_mode(channel)
            text = say(lang, "channel_reset", mode=shown, meaning=say(lang, f"mode_{shown}"))
            if found is not None and found.cooldown_seconds is not None:
                text += say(lang, "channel_cooldown_kept", seconds=f"{found.cooldown_seconds:g}")
        else:
            text = say(lang, "channel_set", mode=arg, meaning=say(lang, f"mode_{arg}"))
        self.reply(command, bk.render_text(text, lang))

    # --- reload -----------------------------------------------------------------------------------------

    def _claim_reload(self) -> bool:
        with self._lock:
            if self._reload_pending:
                return False
            self._reload_pending = True
            return True

    def _release_reload(self) -> None:
        with self._lock:
            self._reload_pending = False

    def start_reload(self, ack: Any, command: dict, lang: str) -> None:
        if not self._claim_reload():
            ack(text=say(lang, "reload_busy"), response_type="ephemeral")
            return
        ack(text=say(lang, "reloading"), response_type="ephemeral")
        log.info(kv("reload_requested", user=text_of(command, "user_id"), channel=text_of(command, "channel_id")))
        if not self.bot.defer(self.queue, self.reload, command, lang):
            self._release_reload()
            self.bot.defer(self.bot.clicks, self.bot.busy, text_of(command, "channel_id"), text_of(command, "user_id"), lang,
                           text_of(command, "response_url"))

    def reload(self, command: dict | None = None, lang: str = "en") -> bool:
        """Build a new engine from the corpus folder and swap it in; the old one stays when that fails. With a
        command, the result goes to whoever asked and the reload is announced to the other replicas; without one
        (this replica following another's reload) it is only logged. Runs on the reload worker."""
        try:
            return self._reload(command, lang)
        finally:
            self._release_reload()

    def _reload(self, command: dict | None, lang: str) -> bool:
        from bot.corpus.loader import CorpusError
        from bot.engine.engine import Engine

        started = time.monotonic()
        current = self.bot.engine
        before = current.status()
        try:
            engine: Engine = Engine.from_settings(self.bot.settings)
        except CorpusError as exc:
            log.error(kv("reload_refused", reason="invalid corpus", problems=len(exc.problems), asked=command is not None))
            if command is not None:
                shown = "\n".join(str(p) for p in exc.problems[:MAX_PROBLEMS_SHOWN])
                more = f"\n… +{len(exc.problems) - MAX_PROBLEMS_SHOWN}" if len(exc.problems) > MAX_PROBLEMS_SHOWN else ""
                text = say(lang, "reload_invalid", n=len(exc.problems), entries=before.get("entries")) + "\n" + bk.code_block(shown + more)
                self.reply(command, bk.render_text(text, lang))
            return False
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error(kv("reload_failed", ref=ref, error=type(exc).__name__, asked=command is not None), exc_info=exc)
            if command is not None:
                self.reply(command, bk.render_text(say(lang, "reload_failed", ref=ref, entries=before.get("entries")), lang))
            return False
        after = engine.status()
        if _dense_ready(before) and str(after.get("dense") or "").startswith("unavailable"):  # the model no longer loads
            log.error(kv("reload_refused", reason="dense search unavailable", dense=after.get("dense"), asked=command is not None))
            if command is not None:
                text = say(lang, "reload_degraded", dense=bk.esc(str(after.get("dense"))), entries=before.get("entries"))
                self.reply(command, bk.render_text(text, lang))
            return False
        old = self.bot.replace_engine(engine)
        seconds = round(time.monotonic() - started, 1)
        old_ids = {e.id for e in getattr(old, "entries", [])}
        new_ids = {e.id for e in engine.entries}
        log.info(kv("reloaded", entries=after.get("entries"), before=before.get("entries"), corpus=after.get("corpus_hash"),
                    dense=after.get("dense"), seconds=seconds, asked=command is not None))
        if command is None:
            return True
        shared = True
        try:
            self.loaded_at = self.bot.state.announce(RELOAD_ANNOUNCEMENT)
        except DatabaseUnavailable:
            shared = False
        lines = [say(lang, "reloaded", entries=after.get("entries"), before=before.get("entries"), digest=bk.esc(str(after.get("corpus_hash"))),
                     dense=bk.esc(str(after.get("dense"))), seconds=seconds)]
        if new_ids - old_ids:
            lines.append(say(lang, "reload_added", ids=_ids(new_ids - old_ids)))
        if old_ids - new_ids:
            lines.append(say(lang, "reload_removed", ids=_ids(old_ids - new_ids)))
        if not shared:
            lines.append(say(lang, "reload_not_shared"))
        elif self._other_replicas():
            lines.append(say(lang, "reload_replicas"))
        self.reply(command, bk.render_text("\n".join(lines), lang))
        return True

    def _other_replicas(self) -> bool:
        try:
            return self.bot.feedback.db.live_replicas() > 1
        except Exception:
            return False

    # --- following other replicas' reloads -------------------------------------------------------------

    def _run_watch(self) -> None:
        while not self._stop.wait(self.WATCH_SECONDS):
            self.check_announcements()

    def check_announcements(self) -> bool:
        """Reload (on the reload worker) when another replica announced a reload newer than this engine. True when
        one was started."""
        try:
            latest = self.bot.state.latest(RELOAD_ANNOUNCEMENT)
        except DatabaseUnavailable:
            return False
        except Exception as exc:  # the watch must never die
            log.error(kv("reload_watch_failed", error=type(exc).__name__))
            return False
        if latest is None or latest <= self.loaded_at or not self._claim_reload():
            return False
        self.loaded_at = latest  # once per announcement, even if that reload fails (it is logged)
        log.info(kv("reload_announced", by="another replica"))
        if not self.bot.defer(self.queue, self.reload):
            self._release_reload()
            return False
        return True


def _dense_ready(status: dict[str, Any]) -> bool:
    return str(status.get("dense") or "").startswith("ready")


def _ids(ids: set[str], limit: int = 8) -> str:
    shown = sorted(ids)[:limit]
    more = f" +{len(ids) - limit}" if len(ids) > limit else ""
    return ", ".join(bk.inline_code(i) for i in shown) + more
