"""The `mindie-help` command line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.console import Console

from bot.corpus.loader import CorpusError
from bot.engine.normalize import read_sampled, sampling_notice, scrub_surrogates, strip_control
from bot.logs import setup_logging
from bot.settings import PROJECT_ROOT, ConfigError, Settings, get_settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Diagnose MindIE errors from logs and questions.")
corpus_app = typer.Typer(no_args_is_help=True, help="Validate the knowledge base.")
feedback_app = typer.Typer(no_args_is_help=True, help="Votes and knowledge gaps.")
channel_app = typer.Typer(no_args_is_help=True, help="Per-channel settings, shared by every replica.")
app.add_typer(corpus_app, name="corpus")
app.add_typer(feedback_app, name="feedback")
app.add_typer(channel_app, name="channel")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

SAMPLE_LOG = """[2025-03-11 10:22:40.981] [7321] [INFO] [llm_manager] loading weights from /data/models/qwen2-7b
[2025-03-11 10:22:41.118] [7321] [INFO] [llm_manager] model loaded, 8 NPUs ready
[2025-03-11 10:22:41.502] [7321] [ERROR] [server] Socket bind failed, ip 127.0.0.1 port 1025
[2025-03-11 10:22:41.503] [7321] [ERROR] [daemon] mindieservice_daemon exit"""

SLACK_VARIABLES = """To run the Slack bot, set:
  SLACK_BOT_TOKEN=xoxb-...          (OAuth & Permissions -> Bot User OAuth Token)
  SLACK_APP_TOKEN=xapp-...          (Socket Mode, the default; Basic Information -> App-Level Tokens, scope connections:write)
  or, for HTTP mode (mindie-help serve --http --port 3000):
  SLACK_SIGNING_SECRET=...          (Basic Information -> Signing Secret)
See docs/slack-setup.md. Meanwhile try the engine locally:
  mindie-help ask "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"
  mindie-help ask --file app.log"""


def _read_settings() -> Settings:
    try:
        return get_settings()
    except ConfigError as exc:
        err.print("The configuration is invalid; fix these environment variables and try again:", markup=False)
        for problem in exc.problems:
            err.print(f"  {problem}", markup=False)
        raise typer.Exit(2) from None


def _settings() -> Settings:
    settings = _read_settings()
    setup_logging(settings.log_level, settings.log_json)
    return settings


def _refuse_feedback_store(exc: Exception) -> NoReturn:
    err.print(
        f"{exc}\nSet MINDIE_HELP_DATABASE_URL (postgresql://user:password@host:5432/db, the server running) or "
        "MINDIE_HELP_FEEDBACK_DB (a writable SQLite file).",
        markup=False,
    )
    raise typer.Exit(2) from None


def _open_store(settings: Settings):
    """The shared database (votes, gaps, replicas' state), or one clear message and exit 2."""
    from bot.feedback import FeedbackStore, FeedbackStoreError

    try:
        return FeedbackStore.from_settings(settings)
    except FeedbackStoreError as exc:
        _refuse_feedback_store(exc)


def _engine(settings: Settings, progress: bool = False, rebuild: bool = False):
    from bot.engine.engine import Engine

    try:
        return Engine.from_settings(settings, progress=progress, rebuild=rebuild)
    except CorpusError as exc:
        err.print(f"[red]The corpus is invalid[/red] ({len(exc.problems)} problem(s)); fix these and try again:", markup=True)
        err.print(str(exc), markup=False)
        raise typer.Exit(2) from None


def _read_query(text: Optional[str], file: Optional[Path], max_bytes: int) -> tuple[bytes | str, list[str]]:
    """The query and a note on what was left out; files and stdin of any size are read in bounded memory."""
    if text is None and file is None and sys.stdin.isatty():
        err.print('give a query: mindie-help ask "TEXT", mindie-help ask - (stdin) or --file app.log')
        raise typer.Exit(2)
    if file is None and text not in (None, "-"):
        return argv_text(text), []
    try:
        if file is not None:
            with file.open("rb") as fh:
                data, size = read_sampled(fh, max_bytes)
        else:
            data, size = read_sampled(sys.stdin.buffer, max_bytes)
    except OSError as exc:
        err.print(f"cannot read {file}: {exc.strerror}")
        raise typer.Exit(2) from None
    name = file.name if file is not None else "input"
    cut = [sampling_notice(size, max_bytes, name)] if size > max_bytes else []
    return data, cut


def argv_text(text: str) -> str:
    """An argument as the user typed it: bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)
    and are read back as bytes and replaced, like a file's or stdin's."""
    try:
        return os.fsencode(text).decode("utf-8", errors="replace")
    except UnicodeEncodeError:  # surrogates that no byte produced
        return scrub_surrogates(text)


@app.command()
def ask(
    text: Optional[str] = typer.Argument(None, help='the error, log or question; "-" reads stdin'),
    file: Optional[Path] = typer.Option(None, "--file", "-f", help="read the query from a log file"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
    top: int = typer.Option(0, "--top", "-k", min=0, max=20, help="how many results (default: MINDIE_HELP_TOP_K)"),
    retriever: str = typer.Option("hybrid", "--retriever", help="hybrid, signatures, lexical or dense"),
    batch: Optional[Path] = typer.Option(None, "--batch", help='JSONL of {"id": ..., "query": ...}; one JSON line out per query'),
) -> None:
    """Diagnose one query (or a batch) and print the ranked causes, fixes and commands."""
    from bot.engine.engine import RETRIEVERS

    if fmt not in ("text", "json"):
        err.print("--format must be text or json")
        raise typer.Exit(2)
    if retriever not in RETRIEVERS:
        err.print(f"--retriever must be one of: {', '.join(RETRIEVERS)}")
        raise typer.Exit(2)
    settings = _settings()
    if batch is not None:
        _ask_batch(settings, batch, top, retriever)
        return
    query, cut = _read_query(text, file, settings.max_input_bytes)
    engine = _engine(settings)
    answer = engine.answer(query, top_k=top or None, retriever=retriever)
    if cut:
        answer = answer.model_copy(update={"notices": cut + answer.notices})
    if fmt == "json":
        sys.stdout.write(json.dumps(answer.contract(), ensure_ascii=False, indent=2) + "\n")
    else:
        from bot.render.text import render_text

        render_text(answer, out)


def _ask_batch(settings: Settings, batch: Path, top: int, retriever: str) -> None:
    try:
        lines = batch.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        err.print(f"cannot read {batch}: {exc.strerror}")
        raise typer.Exit(2) from None
    engine = _engine(settings)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise TypeError("a line must be a JSON object")
            query, qid = item["query"], item.get("id", n)
            if not isinstance(query, str):
                raise TypeError("query must be a string")
            if not isinstance(qid, (str, int, float)) or isinstance(qid, bool):
                raise TypeError("id must be a string or a number")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            _batch_error(n, f"bad input line: {type(exc).__name__}: {exc}")
            continue
        try:  # one bad query must not cost the rest of the batch
            answer = engine.answer(scrub_surrogates(query), top_k=top or None, retriever=retriever,
                                   query_id=scrub_surrogates(str(qid)))
            payload = answer.contract()
            payload["id"] = scrub_surrogates(qid) if isinstance(qid, str) else qid
            sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        except Exception as exc:
            _batch_error(n, f"could not answer this line: {type(exc).__name__}")
        sys.stdout.flush()


def _batch_error(line: int, message: str) -> None:
    sys.stdout.write(json.dumps({"id": None, "line": line, "error": scrub_surrogates(message)}, ensure_ascii=False) + "\n")


@app.command("env")
def env(
    text: Optional[str] = typer.Argument(None, help='pasted npu-smi info, pip list, version files...; "-" reads stdin'),
    file: Optional[Path] = typer.Option(None, "--file", "-f", help="read the paste from a file"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
) -> None:
    """Check pasted environment facts (npu-smi info, pip list, CANN/MindIE/driver versions) against the
    compatibility table; with nothing to read, list the commands that collect them."""
    from bot.corpus.loader import load_corpus
    from bot.engine.normalize import prepare
    from bot.environment.checker import all_commands, check_environment
    from bot.environment.present import commands_only, section
    from bot.render.environment import print_section
    from bot.render.text import escape

    if fmt not in ("text", "json"):
        err.print("--format must be text or json")
        raise typer.Exit(2)
    settings = _settings()
    asked = not (text is None and file is None and sys.stdin.isatty())
    query, cut = _read_query(text, file, settings.max_input_bytes) if asked else ("", [])
    try:
        compat = load_corpus(settings.corpus_dir).compat
    except CorpusError as exc:
        err.print(f"[red]The corpus is invalid[/red] ({len(exc.problems)} problem(s)); fix these and try again:", markup=True)
        err.print(str(exc), markup=False)
        raise typer.Exit(2) from None
    prepared = prepare(query, settings.max_input_bytes)
    report = check_environment(prepared.text, compat) if prepared.text.strip() else None
    if report is not None:
        report = report.model_copy(update={"only": False})  # asked for explicitly: no "this is a dump" preamble
    if fmt == "json":
        payload = {"lang": prepared.lang, "notices": cut + prepared.notices,
                   "environment": report.model_dump(mode="json") if report else None,
                   "commands": [c.model_dump() for c in (report.commands if report else all_commands())]}
        sys.stdout.write(strip_control(json.dumps(payload, ensure_ascii=False, indent=2)) + "\n")
        return
    for notice in cut + prepared.notices:
        out.print(f"[yellow]note:[/yellow] {escape(notice)}")
    print_section(section(report, prepared.lang) if report else commands_only(prepared.lang, all_commands()), out)


@app.command()
def index(rebuild: bool = typer.Option(False, "--rebuild", help="rebuild even if the saved index is current")) -> None:
    """Build (or verify) the FAISS index in the index folder."""
    settings = _settings()
    engine = _engine(settings, progress=True, rebuild=rebuild)
    out.print(json.dumps(engine.status(), indent=2))


@app.command()
def serve(
    http: bool = typer.Option(False, "--http", help="HTTP mode (Events API) instead of Socket Mode"),
    port: int = typer.Option(3000, "--port", min=1, max=65535),
    host: str = typer.Option("0.0.0.0", "--host"),
) -> None:
    """Run the Slack bot; with no Slack tokens, answer a sample log locally and say what to set."""
    settings = _settings()
    if not settings.has_slack_tokens():
        engine = _engine(settings)
        out.print("[bold]No Slack tokens are set, so here is a local answer to a sample pasted log:[/bold]\n")
        out.print(SAMPLE_LOG, markup=False)
        out.print()
        from bot.render.text import render_text

        render_text(engine.answer(SAMPLE_LOG), out)
        out.print()
        out.print(SLACK_VARIABLES, markup=False)
        return
    from bot.slack.runner import config_problem
    from bot.slack.runner import serve as run_bot

    if (problem := config_problem(settings, http)) is not None:
        err.print(problem, markup=False)
        raise typer.Exit(2)
    from bot.health import Heartbeat

    store = _open_store(settings)  # before the engine loads: a database that is down fails in seconds
    # From here on `mindie-help health` sees this process: "starting" while the model loads, then serving.
    heartbeat = Heartbeat.from_settings(settings, "http" if http else "socket").start()
    try:
        try:
            engine = _engine(settings)
        except BaseException:
            store.close()
            raise
        run_bot(settings, http=http, port=port, host=host, engine=engine, feedback=store, heartbeat=heartbeat)
    finally:
        heartbeat.stop()


@app.command()
def health(
    fmt: str = typer.Option("text", "--format", help="text or json (the reason and the heartbeat)"),
    max_age: Optional[float] = typer.Option(None, "--max-age", min=0.1, help="seconds (default: MINDIE_HELP_HEALTH_MAX_AGE_SECONDS)"),
    file: Optional[Path] = typer.Option(None, "--file", help="heartbeat file (default: MINDIE_HELP_HEALTH_FILE)"),
) -> None:
    """Exit 0 when the running `mindie-help serve` is healthy, 1 with a one-line reason otherwise.

    Works in Socket Mode too (no port open): it reads the heartbeat file serve keeps up to date. For Docker's
    HEALTHCHECK and Kubernetes exec probes; exit status 2 is never used (Docker reserves it)."""
    from bot.health import check

    if fmt not in ("text", "json"):
        err.print("--format must be text or json")
        raise typer.Exit(1)
    try:
        settings = get_settings()
    except ConfigError as exc:
        err.print(f"unhealthy: the configuration is invalid ({exc.problems[0]})", markup=False)
        raise typer.Exit(1) from None
    result = check(file or settings.health_path(), max_age or settings.health_max_age_seconds)
    if fmt == "json":
        sys.stdout.write(json.dumps(result.as_dict(), sort_keys=True) + "\n")
    elif result.ok:
        out.print(result.reason, markup=False)
    else:
        err.print(f"unhealthy: {result.reason}", markup=False)
    raise typer.Exit(0 if result.ok else 1)


@corpus_app.command("check")
def corpus_check(
    facts: Optional[Path] = typer.Option(None, "--facts", help="list of the FAQ's commands per entry (default: tests/data/faq_commands if present)"),
    faultdiag: Optional[Path] = typer.Option(None, "--faultdiag", help="also check a FaultDiag kg-config.json pack (default: MINDIE_HELP_FAULTDIAG_KG)"),
    strict: bool = typer.Option(False, "--strict", help="fail on signatures that also match other entries' examples"),
) -> None:
    """Validate every corpus file; print problems as FILE: field.path: what is wrong."""
    from bot.corpus.check import check_corpus, overlaps
    from bot.corpus.faultdiag import FaultDiagError, load_faultdiag

    settings = _read_settings()
    if facts is None:
        default = PROJECT_ROOT / "tests" / "data" / "faq_commands"
        facts = default if default.exists() else None
    corpus, problems = check_corpus(settings.corpus_dir, facts)
    for problem in problems:
        out.print(str(problem), markup=False)
    if problems:
        err.print(f"corpus check failed: {len(problems)} problem(s)")
        raise typer.Exit(1)
    shared = overlaps(corpus)
    for problem in shared:
        out.print(f"{'' if strict else 'warning: '}{problem}", markup=False)
    if strict and shared:
        err.print(f"corpus check failed (--strict): {len(shared)} signature overlap(s)")
        raise typer.Exit(1)
    codes = len(corpus.codes) + sum(len(c.codes) for c in corpus.catalogues)
    out.print(f"corpus OK: {len(corpus.entries)} entries, {len(corpus.families)} families, {codes} error codes, "
              f"{sum(len(e.signatures) for e in corpus.entries)} signatures, "
              f"{corpus.compat.rows} compatibility rows")
    pack = faultdiag or settings.faultdiag_kg
    if pack is not None:
        try:
            loaded = load_faultdiag(pack, taken=set(corpus.by_id))
        except FaultDiagError as exc:
            out.print(str(exc), markup=False)
            err.print("faultdiag pack check failed")
            raise typer.Exit(1) from None
        out.print(f"faultdiag pack OK: {len(loaded.entries)} entries from {pack} "
                  f"({len(loaded.skipped)} entities without a keyword trigger left out)", markup=False)


# Every labelled set; eval/README.md says which are development data and which is still an honest estimate.
EVAL_SETS = ("queries.jsonl", "dev2.jsonl", "holdout.jsonl", "unseen.jsonl", "unseen2.jsonl", "realworld.jsonl", "realworld-dev2.jsonl",
             "realworld-offtopic.jsonl")


@app.command("eval")
def evaluate(
    queries: list[Path] = typer.Option(
        [PROJECT_ROOT / "eval" / name for name in EVAL_SETS],
        "--set", help="labelled JSONL file(s); default: every set in eval/ (see its README)",
    ),
    fmt: str = typer.Option("table", "--format", help="table or json"),
    blind: bool = typer.Option(False, "--blind", help="real-report sets: print figures only, no theme names or report "
                               "and entry ids (measuring a held-out set without learning what it contains)"),
) -> None:
    """Top-1, top-3, MRR, abstention and latency for each retriever and the hybrid, side by side."""
    from bot.evaluation import format_table, load_set, run_evaluation

    if fmt not in ("table", "json"):
        err.print("--format must be table or json")
        raise typer.Exit(2)
    if blind and fmt == "json":
        err.print("--blind prints a table; the JSON report holds every outcome")
        raise typer.Exit(2)
    settings = _settings()
    try:  # every set is read before the model loads, so a typo fails fast
        sets = {path: load_set(path) for path in queries}
    except OSError as exc:
        err.print(f"cannot read {exc.filename}: {exc.strerror}", markup=False)
        raise typer.Exit(2) from None
    except ValueError as exc:
        err.print(f"bad labelled set: {exc}", markup=False)
        raise typer.Exit(2) from None
    engine = _engine(settings)
    report = run_evaluation(engine, sets)
    if fmt == "json":
        out.print_json(data=report)
    else:
        out.print(format_table(report, blind), markup=False)


@feedback_app.command("report")
def feedback_report(
    fmt: str = typer.Option("text", "--format", help='text, or json: {"entries": [{"id", "up", "down"}], "gaps": [...]}'),
) -> None:
    """Per-entry helpful/unhelpful counts and the queries the bot could not answer (from the shared database)."""
    if fmt not in ("text", "json"):
        err.print("--format must be text or json")
        raise typer.Exit(2)
    settings = _settings()
    with _open_store(settings) as store:
        if fmt == "json":
            sys.stdout.write(strip_control(json.dumps(store.report_json(), ensure_ascii=False)) + "\n")
        else:
            # Stored excerpts are users' text: no escape sequence of theirs reaches the admin's terminal.
            out.print(strip_control(store.report()), markup=False)


@channel_app.command("set")
def channel_set(
    channel: str = typer.Argument(..., help="channel id, e.g. C0123ABCD"),
    mode: Optional[str] = typer.Option(None, "--mode", help="auto (answer pasted logs), mention (only when asked) or off"),
    cooldown: Optional[float] = typer.Option(None, "--cooldown", min=0, help="seconds between two auto-replies to one user"),
    clear: bool = typer.Option(False, "--clear", help="forget this channel's settings (back to the environment's)"),
) -> None:
    """Store one channel's auto-reply mode and cooldown; every replica applies it within 10 seconds."""
    from bot.storage import CHANNEL_MODES, SharedState

    if mode is not None and mode not in CHANNEL_MODES:
        err.print(f"--mode must be one of: {', '.join(CHANNEL_MODES)}")
        raise typer.Exit(2)
    if mode is None and cooldown is None and not clear:
        err.print("give --mode, --cooldown or --clear")
        raise typer.Exit(2)
    settings = _settings()
    with _open_store(settings) as store:
        found = SharedState(store.db).set_channel(channel, mode=mode, cooldown_seconds=cooldown, clear=clear)
    out.print(_channel_line(found), markup=False)


@channel_app.command("list")
def channel_list() -> None:
    """Channels with their own settings."""
    from bot.storage import SharedState

    settings = _settings()
    with _open_store(settings) as store:
        rows = SharedState(store.db).all_channel_settings()
    if not rows:
        out.print("no channel has its own settings (the environment's apply everywhere)")
    for row in rows:
        out.print(_channel_line(row), markup=False)


def _channel_line(row) -> str:
    mode = row.mode or "default"
    cooldown = "default" if row.cooldown_seconds is None else f"{row.cooldown_seconds:g}s"
    return f"{row.channel}  mode {mode}  cooldown {cooldown}"


def main() -> None:
    app()


if __name__ == "__main__":
    main()
