"""`mindie-help serve`: run the Slack bot in Socket Mode (default) or HTTP mode (--http --port N)."""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING

from bot.health import SERVING, Heartbeat
from bot.settings import Settings
from bot.logs import get_logger, kv, register_secret

if TYPE_CHECKING:
    from bot.engine.engine import Engine
    from bot.feedback import FeedbackStore
    from bot.slack.app import SlackBot

log = get_logger()

TRY_WITHOUT_SLACK = 'To try the bot without Slack:  mindie-help ask "Socket bind failed, ip 127.0.0.1 port 1025"'


class SlackConfigError(SystemExit):
    """Missing or rejected Slack credentials. A SystemExit, so an uncaught one prints its message, not a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _present(secret: object) -> bool:
    """Set and not blank (an empty SLACK_SIGNING_SECRET= line in .env must not count as a secret)."""
    return secret is not None and bool(secret.get_secret_value().strip())  # type: ignore[attr-defined]


def config_problem(settings: Settings, http: bool) -> str | None:
    """None when serve can start; otherwise the exact message telling which variables to set."""
    missing: list[str] = []
    if not _present(settings.slack_bot_token):
        missing.append("SLACK_BOT_TOKEN")
    if http and not _present(settings.slack_signing_secret):
        missing.append("SLACK_SIGNING_SECRET")
    if not http and not _present(settings.slack_app_token):
        missing.append("SLACK_APP_TOKEN")
    if not missing:
        return None
    mode = "HTTP mode" if http else "Socket Mode"
    lines = [
        f"mindie-help serve ({mode}) cannot start: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set.",
        "",
        "Set these environment variables (or put them in .env; see .env.example and docs/slack-setup.md):",
        "  SLACK_BOT_TOKEN=xoxb-...        Bot User OAuth Token (OAuth & Permissions)",
    ]
    if http:
        lines.append("  SLACK_SIGNING_SECRET=...        Signing Secret (Basic Information > App Credentials)")
    else:
        lines.append("  SLACK_APP_TOKEN=xapp-...        App-Level Token with connections:write (Basic Information)")
        if _present(settings.slack_signing_secret):
            lines.append("  (SLACK_SIGNING_SECRET is set: for HTTP mode run `mindie-help serve --http --port 3000` instead)")
    lines += ["", TRY_WITHOUT_SLACK]
    return "\n".join(lines)


def serve(
    settings: Settings,
    http: bool = False,
    port: int = 3000,
    host: str = "0.0.0.0",
    engine: "Engine | None" = None,
    feedback: "FeedbackStore | None" = None,
    heartbeat: Heartbeat | None = None,
) -> None:
    """Serve Slack until interrupted (SIGINT/SIGTERM) with the given engine and store, or ones opened here.

    The database is opened (and migrated) before the engine loads, so a wrong URL or a server that is down
    fails in seconds with one message (bot.storage.StoreError), not after the model has loaded.

    The heartbeat that `mindie-help health` reads is the caller's when given, else one started here once the
    database is open; it says "stopped" when this returns."""
    problem = config_problem(settings, http)
    if problem:
        raise SlackConfigError(problem)
    for secret in (settings.slack_bot_token, settings.slack_app_token, settings.slack_signing_secret):
        register_secret(secret.get_secret_value() if secret else None)
    if feedback is None:
        from bot.feedback import FeedbackStore

        feedback = FeedbackStore.from_settings(settings)
    log.info(kv("database_ready", database=feedback.db.dialect))
    if heartbeat is None:
        heartbeat = Heartbeat.from_settings(settings, "http" if http else "socket").start()
    try:
        if engine is None:
            from bot.engine.engine import Engine  # slow import (models); only when serving

            log.info(kv("engine_loading"))
            engine = Engine.from_settings(settings)
        log.info(kv("engine_ready", **{k: v for k, v in _flat_status(engine).items()}))
        heartbeat.set(engine_ready=True)
        try:
            bot = _make_bot(settings, engine, feedback)
        except BaseException:
            feedback.close()
            raise
        if http:
            _serve_http(bot, host, port, heartbeat)
        else:
            _serve_socket_mode(bot, settings, heartbeat)
    finally:
        heartbeat.stop()


def _flat_status(engine: object) -> dict:
    try:
        status = engine.status()  # type: ignore[attr-defined]
    except Exception:
        return {}
    return {k: v for k, v in status.items() if isinstance(v, (str, int, float, bool))}


def _make_bot(settings: Settings, engine: object, feedback: "FeedbackStore") -> "SlackBot":
    from slack_bolt.error import BoltError
    from slack_sdk.errors import SlackApiError

    from bot.slack.app import SlackBot

    try:
        return SlackBot(settings, engine, feedback=feedback)  # type: ignore[arg-type]
    except (BoltError, SlackApiError) as exc:
        raise SlackConfigError(
            "Slack rejected SLACK_BOT_TOKEN when checking it with auth.test "
            f"({_reason(exc)}). Copy the Bot User OAuth Token (xoxb-...) again from OAuth & Permissions, "
            "and reinstall the app if you changed its scopes.\n\n" + TRY_WITHOUT_SLACK
        ) from None
    except OSError as exc:
        raise SlackConfigError(f"Cannot reach the Slack API ({type(exc).__name__}); check network/proxy settings.") from None


def _reason(exc: BaseException) -> str:
    text = str(exc)
    for code in ("invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"):
        if code in text:
            return code
    return type(exc).__name__


def _install_sigterm(stop: threading.Event) -> None:
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: object) -> None:
        stop.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _database_status(bot: "SlackBot") -> dict:
    status = bot.feedback.db.status()
    return {"database_ok": status.get("database_ok"), "pending_writes": status.get("pending_writes")}


def _serve_http(bot: "SlackBot", host: str, port: int, heartbeat: Heartbeat) -> None:
    from bot.slack.server import EVENTS_PATH, HEALTH_PATH, make_server

    server = make_server(bot.app, bot.status, host, port, signing_secret=bot.signing_secret)
    stop = threading.Event()
    _install_sigterm(stop)
    log.info(kv("http_listening", host=host, port=server.port, events=EVENTS_PATH, health=HEALTH_PATH))
    # `mindie-help health` asks GET /healthz on this port: "listening" alone would not catch a wedged server.
    heartbeat.watch(lambda: {"connected": True, **_database_status(bot)})
    heartbeat.set(state=SERVING, http_host=host, http_port=server.port)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        bot.wait_idle(10.0)  # let replies in progress finish
        bot.close()
        bot.feedback.close()
        log.info(kv("stopped", mode="http"))


def _serve_socket_mode(bot: "SlackBot", settings: Settings, heartbeat: Heartbeat) -> None:
    from bot.slack.app import SocketHandler

    assert settings.slack_app_token is not None
    handler = SocketHandler(bot.app, settings.slack_app_token.get_secret_value())
    stop = threading.Event()
    _install_sigterm(stop)
    try:
        handler.connect()
    except Exception as exc:
        raise SlackConfigError(
            f"Socket Mode could not connect ({_reason(exc)}). Check SLACK_APP_TOKEN (xapp-..., scope connections:write) "
            "and that Socket Mode is enabled for the app.\n\n" + TRY_WITHOUT_SLACK
        ) from None
    log.info(kv("socket_mode_connected"))
    # slack_sdk's SocketModeClient.is_connected(): a live WebSocket session (False while it reconnects).
    heartbeat.watch(lambda: {"connected": bool(handler.client.is_connected()), **_database_status(bot)})
    heartbeat.set(state=SERVING)
    try:
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        handler.close()
        bot.wait_idle(10.0)
        bot.close()
        bot.feedback.close()
        log.info(kv("stopped", mode="socket"))
