"""The `mindie-help` command line, run in-process with Typer's runner (one model load for all tests)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.settings import get_settings

runner = CliRunner()
LOG = "[2025-03-11 10:22:41.502] [7321] [ERROR] [server] Socket bind failed, ip 127.0.0.1 port 1311"


@pytest.fixture(autouse=True)
def _env(monkeypatch, engine_settings, engine):
    """Point the CLI at the session's already built index; engine fixture makes sure it exists."""
    monkeypatch.setenv("MINDIE_HELP_INDEX_DIR", str(engine_settings.index_dir))
    monkeypatch.setenv("MINDIE_HELP_FEEDBACK_DB", str(engine_settings.feedback_db))
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "MINDIE_HELP_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    get_settings.cache_clear()
    # the CLI points logging at the runner's captured stderr, which is closed once the test ends
    root.handlers[:], root.level = handlers, level


def test_ask_json_follows_the_contract():
    result = runner.invoke(app, ["ask", "--format", "json", LOG])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["answered"] is True and payload["lang"] == "en"
    top = payload["results"][0]
    assert top["id"] == "socket-bind-failed" and "lsof -i :1311" in top["commands"]
    assert top["matched"] == [LOG]


def test_ask_text_shows_commands_on_their_own_lines():
    result = runner.invoke(app, ["ask", "--top", "1", LOG])
    assert result.exit_code == 0, result.output
    assert "\nlsof -i :1311\n" in result.stdout
    assert "L1:" in result.stdout


def test_ask_reads_stdin_and_files(tmp_path: Path):
    result = runner.invoke(app, ["ask", "--format", "json", "-"], input="RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    assert json.loads(result.stdout)["results"][0]["id"] == "npu-out-of-memory"
    log = tmp_path / "app.log"
    log.write_bytes(("[INFO] boot\n" * 500 + LOG + "\n").encode())
    result = runner.invoke(app, ["ask", "--format", "json", "--file", str(log)])
    assert json.loads(result.stdout)["results"][0]["matched"] == [LOG]


def test_ask_missing_file_is_a_clear_error(tmp_path: Path):
    result = runner.invoke(app, ["ask", "--file", str(tmp_path / "nope.log")])
    assert result.exit_code == 2
    assert "cannot read" in result.output and "Traceback" not in result.output


def test_ask_with_each_retriever():
    for name in ("signatures", "lexical", "dense", "hybrid"):
        result = runner.invoke(app, ["ask", "--format", "json", "--retriever", name, LOG])
        assert result.exit_code == 0
        data = json.loads(result.stdout)
        ranked = [r["id"] for r in data["results"]] or data["candidates"]
        assert "socket-bind-failed" in ranked[:3], (name, ranked)  # each retriever alone finds it
        if data["results"]:
            assert all(r["retrievers"] == [name] for r in data["results"]) or name == "hybrid"
        if name in ("hybrid", "signatures"):
            assert data["results"][0]["id"] == "socket-bind-failed"
    assert runner.invoke(app, ["ask", "--retriever", "magic", LOG]).exit_code == 2


def test_batch_writes_one_line_per_query_in_order(tmp_path: Path):
    batch = tmp_path / "q.jsonl"
    batch.write_text("\n".join([
        json.dumps({"id": "a", "query": LOG}),
        "not json at all",
        json.dumps({"id": 7, "query": "午饭吃什么"}),
        json.dumps({"id": "c", "query": "RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB"}),
    ]))
    result = runner.invoke(app, ["ask", "--batch", str(batch)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["a", None, 7, "c"]
    assert rows[0]["results"][0]["id"] == "socket-bind-failed"
    assert "bad input line" in rows[1]["error"]
    assert rows[2]["answered"] is False
    assert rows[3]["results"][0]["id"] == "npu-out-of-memory"


def test_serve_without_tokens_answers_locally_and_names_the_variables():
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    assert "lsof -i :1025" in result.stdout  # the sample log's own port
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "mindie-help ask"):
        assert name in result.stdout


def test_eval_prints_every_retriever_side_by_side(tmp_path: Path):
    labelled = tmp_path / "mini.jsonl"
    labelled.write_text("\n".join(json.dumps(q) for q in [
        {"id": "1", "kind": "log", "query": LOG, "expected": ["socket-bind-failed"]},
        {"id": "2", "kind": "question_zh", "query": "GLOO_SOCKET_IFNAME 怎么设置", "expected": ["gloo-connection-refused", "gloo-unable-to-find-address"]},
        {"id": "3", "kind": "offtopic", "query": "午饭吃什么", "expected": []},
    ]))
    result = runner.invoke(app, ["eval", "--set", str(labelled), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {r["retriever"]: r for r in report["sets"][0]["rows"]}
    assert set(rows) == {"signatures", "lexical", "dense", "hybrid"}
    assert rows["hybrid"]["top1"] == 1.0 and rows["hybrid"]["offtopic_abstention"] == 1.0
    assert rows["signatures"]["wrongly_abstained"] == 0.5  # signatures cannot answer the question
    table = runner.invoke(app, ["eval", "--set", str(labelled)]).stdout
    assert "| hybrid" in table and "off-topic abstention" in table


AICPU = ("RuntimeError: ACL stream synchronize failed, error code:507018\n"
         "[ERROR] RUNTIME(1234,python):2025-03-01-10:00:00.000.000 [aicpu exception] Aicpu kernel execute failed")


def test_eval_on_real_reports_splits_misleads_by_what_they_are(tmp_path: Path):
    """helps on diagnosable reports; misleads on all reports, split into a wrong fix for a resolved report, an answer to
    a thread that never found the cause, and an answer to another stack's paste."""
    def case(n: int, kind: str, query: str, markers: list[str]) -> dict:
        return {"id": f"r{n}", "url": f"https://example.org/t/{n}", "kind": kind, "theme": "offtopic" if kind == "offtopic" else "t",
                "family": None, "lang": "en", "query": query, "markers": markers, "resolution": ""}
    labelled = tmp_path / "realworld-mini.jsonl"
    labelled.write_text("\n".join(json.dumps(c) for c in [
        case(1, "diagnosable", LOG, ["lsof"]),                    # the socket-bind entry holds "lsof": helps
        case(2, "diagnosable", LOG, ["a marker no entry holds"]),  # answered, no marker: a wrong fix
        case(3, "undiagnosable", LOG, []),                        # answered a never-resolved thread
        case(4, "offtopic", "午饭吃什么", []),                      # not answered
        case(5, "undiagnosable", AICPU, []),                      # a recognised symptom: a triage reply, not an answer
    ]))
    result = runner.invoke(app, ["eval", "--set", str(labelled), "--format", "json"])
    assert result.exit_code == 0, result.output
    hybrid = next(r for r in json.loads(result.stdout)["sets"][0]["rows"] if r["retriever"] == "hybrid")
    assert hybrid["helps"] == 0.5 and hybrid["misleads"] == 0.4
    assert (hybrid["misleads_wrong"], hybrid["misleads_unresolved"], hybrid["misleads_offtopic"]) == (0.2, 0.2, 0.0)
    assert hybrid["offtopic_abstention"] == 1.0
    assert hybrid["triage_replies"] == {"diagnosable": 0, "undiagnosable": 1, "offtopic": 0}
    table = runner.invoke(app, ["eval", "--set", str(labelled)]).stdout
    assert "wrong fix for a resolved report 20.0%" in table and "never-resolved thread 20.0%" in table
    assert "(triage) replies: 0 to resolved reports, 1 to never-resolved threads" in table
    assert "hybrid per theme" in table and "r2 -> socket-bind-failed" in table
    # --blind, for a held-out set measured before the work: the same figures, nothing that tells what it holds
    blind = runner.invoke(app, ["eval", "--set", str(labelled), "--blind"]).stdout
    assert "wrong fix for a resolved report 20.0%" in blind and "| hybrid" in blind and "ECE" in blind
    assert "per theme" not in blind and "socket-bind-failed" not in blind and "r2" not in blind
    assert runner.invoke(app, ["eval", "--set", str(labelled), "--blind", "--format", "json"]).exit_code == 2


def test_eval_says_how_often_a_not_recognised_reply_leads_with_the_fix(tmp_path: Path):
    """A resolved report that gets no answer still gets a reply leading with one entry (the recognised symptom's first
    steps, or the closest topic); eval reports how often that entry holds the thread's fix."""
    def case(n: int, markers: list[str]) -> dict:
        return {"id": f"s{n}", "url": f"https://example.org/s/{n}", "kind": "diagnosable", "theme": "t", "family": None,
                "lang": "en", "query": AICPU, "markers": markers, "resolution": ""}
    labelled = tmp_path / "realworld-lead.jsonl"
    labelled.write_text("\n".join(json.dumps(c) for c in [case(1, ["aicpu"]), case(2, ["a marker no entry holds"])]))
    result = runner.invoke(app, ["eval", "--set", str(labelled), "--format", "json"])
    assert result.exit_code == 0, result.output
    hybrid = next(r for r in json.loads(result.stdout)["sets"][0]["rows"] if r["retriever"] == "hybrid")
    assert hybrid["helps"] == 0.0 and hybrid["not_answered_diagnosable"] == 2 and hybrid["suggestion_right"] == 0.5
    blind = runner.invoke(app, ["eval", "--set", str(labelled), "--blind"]).stdout
    assert "not-recognised replies to resolved reports: 2; the entry they lead with" in blind and "holds the fix in 50.0%" in blind


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read"),
    (b'{"id": "1", "kind": "log", "query": "x"}\n{broken\n', "bad.jsonl:2: line: Invalid JSON"),
    (b'{"id": 1, "query": "x"}\n', "bad.jsonl:1: id: Input should be a valid string; kind: Field required"),
    (b"\xf5\x00\x81 binary", "bad.jsonl: not UTF-8 text"),
])
def test_eval_reports_a_bad_labelled_set_clearly(tmp_path: Path, content: bytes | None, message: str):
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_bytes(content)
    result = runner.invoke(app, ["eval", "--set", str(path)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("variable", "value"), [
    ("MINDIE_HELP_TOP_K", "abc"), ("MINDIE_HELP_THRESHOLD", "7"), ("MINDIE_HELP_LOG_LEVEL", "LOUD"), ("MINDIE_HELP_LOG_JSON", "maybe"),
])
def test_malformed_configuration_is_a_clear_error(monkeypatch, variable: str, value: str):
    monkeypatch.setenv(variable, value)
    for args in (["ask", "hello"], ["corpus", "check"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "configuration is invalid" in result.output and variable in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_configuration_errors_never_echo_a_secret():
    from pydantic import ValidationError

    from bot.settings import Settings, _describe

    with pytest.raises(ValidationError) as caught:
        Settings(SLACK_BOT_TOKEN=12345678, top_k="x")
    problems = _describe(caught.value)
    assert any(p.startswith("SLACK_BOT_TOKEN:") for p in problems)
    assert not any("12345678" in p for p in problems)


@pytest.mark.parametrize("command", [["feedback", "report"], ["serve", "--http", "--port", "3999"]])
def test_a_feedback_file_that_is_not_a_database_is_refused_untouched(monkeypatch, tmp_path: Path, command: list[str]):
    not_a_db = tmp_path / "votes.sqlite3"
    not_a_db.write_bytes(b"team notes, not a database\n" * 10)
    before = not_a_db.read_bytes()
    monkeypatch.setenv("MINDIE_HELP_FEEDBACK_DB", str(not_a_db))
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("MINDIE_HELP_SLACK_API_URL", "http://127.0.0.1:9/api/")  # nothing may reach Slack
    result = runner.invoke(app, command)
    assert result.exit_code == 2, result.output
    assert "cannot open the feedback store" in result.output and "not a database" in result.output
    assert not_a_db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["votes.sqlite3"]  # no -wal/-shm left beside it


REAL_LOGS = Path(__file__).parent / "data" / "real_logs"


def test_not_recognised_reply_in_text_and_json():
    """An explicit question is never met with silence: the reply says the error is unknown, quotes the root line
    and gives the family's first steps, in the terminal and in JSON (a real report whose thread never found the
    cause)."""
    log = str(REAL_LOGS / "aclnn-inplacezero-561103.log")
    text = runner.invoke(app, ["ask", "--file", log])
    assert text.exit_code == 0, text.output
    assert "Not recognised" in text.stdout
    assert "Root error (line" in text.stdout and "aclnnInplaceZero" in text.stdout
    assert "First steps:" in text.stdout and "ASCEND_LAUNCH_BLOCKING" in text.stdout

    data = json.loads(runner.invoke(app, ["ask", "--format", "json", "--file", log]).stdout)
    assert data["answered"] is False and data["results"] == []
    assert "aclnnInplaceZero" in data["root"]["text"]
    assert data["family"]["id"] == "cann-error" and data["family"]["triage"]
    codes = {c["code"]: c for c in data["error_codes"]}
    assert codes["561103"]["system"] == "acl" and codes["561103"]["meaning"]


# --- hostile input (issue #11) ------------------------------------------------------------------------


def test_undecodable_argv_and_stdin_are_answered_not_a_traceback():
    # Python hands bytes that are not UTF-8 over as lone surrogates (surrogateescape)
    result = runner.invoke(app, ["ask", "--format", "json", "\udcff\udcfe " + LOG])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["id"] == "socket-bind-failed"
    result = runner.invoke(app, ["ask", "--format", "json", "-"], input=b"\xff\xfe\x80 " + LOG.encode() + b"\n")
    assert result.exit_code == 0, result.output


def test_batch_reports_a_bad_line_and_goes_on(tmp_path: Path):
    batch = tmp_path / "q.jsonl"
    batch.write_bytes(b"\n".join([
        json.dumps({"id": "lone", "query": "\ud800 " + LOG}).encode(),  # a "\ud800" escape: a lone surrogate
        b"\xff\xfe not UTF-8 at all",
        json.dumps([1, 2]).encode(),
        json.dumps({"id": {"x": 1}, "query": LOG}).encode(),
        json.dumps({"id": "last", "query": LOG}).encode(),
    ]))
    result = runner.invoke(app, ["ask", "--batch", str(batch)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r.get("line") for r in rows] == [None, 2, 3, 4, None]
    assert rows[0]["id"] == "lone" and rows[0]["results"][0]["id"] == "socket-bind-failed"
    assert all("error" in r for r in rows[1:4])
    assert rows[4]["id"] == "last" and rows[4]["answered"] is True


def test_feedback_report_strips_users_escape_sequences(engine_settings):
    from bot.feedback import FeedbackStore

    nasty = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m quantum-flux capacitor misaligned error \x1b[0m\r"
    with FeedbackStore(engine_settings.feedback_db) as store:
        store.record_unanswered(nasty, lang="en", surface="dm", channel="D0X")
    result = runner.invoke(app, ["feedback", "report"])
    assert result.exit_code == 0, result.output
    assert "quantum-flux capacitor" in result.stdout
    assert not any(ch in result.stdout for ch in "\x1b\x07\x9b\r")


def test_quoted_log_lines_reach_the_terminal_without_control_characters():
    result = runner.invoke(app, ["ask", "--top", "1", "\x9b2J\x1b]0;title\x07" + LOG])
    assert result.exit_code == 0, result.output
    assert "Socket bind failed" in result.stdout and not any(ch in result.stdout for ch in "\x9b\x07")
