"""The knowledge base: schema, check, and the FAQ's commands kept verbatim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import re2
import yaml

from bot.corpus.check import _template, check_corpus
from bot.corpus.schema import PLACEHOLDER
from bot.corpus.loader import load_corpus
from bot.engine.signatures import SignatureIndex
from tests.conftest import CORPUS, FACTS, ROOT


def _messages(root: Path) -> list[str]:
    _, problems = check_corpus(root, None)
    return [str(p) for p in problems]


def _edit(path: Path, **changes) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def test_real_corpus_passes_every_check():
    corpus, problems = check_corpus(CORPUS, FACTS)
    assert [str(p) for p in problems] == []
    assert len(corpus.entries) >= 130
    assert {"Service", "LLM", "ATB", "Motor/PD", "Multimodal", "Install", "CANN", "HCCL"} <= {e.component.value for e in corpus.entries}


def test_entries_beyond_the_faq_cite_a_source_and_real_threads():
    """Knowledge from outside the FAQ says where its facts come from, and entries that recognise logs carry at
    least two logs real users pasted, with the thread they come from."""
    corpus = load_corpus(CORPUS)
    beyond = [e for e in corpus.entries if not e.source.startswith("faq") and e.id != "mindie-error-code"]
    assert len(beyond) >= 85
    for entry in beyond:
        assert entry.family in corpus.family_by_id, entry.id
        if entry.signatures:
            assert len(entry.real_examples) >= 2, entry.id
            assert all(ex.url.startswith("https://") for ex in entry.real_examples), entry.id


def test_every_placeholder_has_a_hint_and_no_chinese_placeholder_is_left():
    corpus = load_corpus(CORPUS)
    assert corpus.placeholder_hints
    for entry in corpus.entries:
        for command in entry.commands:
            for name in PLACEHOLDER.findall(command.run):
                assert name in corpus.placeholder_hints, (entry.id, name)
            assert "安装目录}" not in command.run and "<网卡名称>" not in command.run and "安装路径" not in command.run, entry.id


def test_every_faq_command_is_verbatim_in_its_entry():
    corpus = load_corpus(CORPUS)
    listed = 0
    for path in sorted(FACTS.glob("*.yaml")):
        for item in yaml.safe_load(path.read_text(encoding="utf-8")):
            runs = [c.run for c in corpus.by_id[item["entry"]].commands]
            for command in item["commands"]:
                listed += 1
                # verbatim, except that the FAQ's Chinese placeholder names ({MindIE安装目录}) have identifiers here
                assert any(_template(command) in _template(run) for run in runs), f"{item['entry']}: {command!r} missing"
    assert listed >= 80  # the facts sheet gives well over this many commands, env vars, keys and paths


def test_malformed_yaml_is_reported_with_file_and_line(corpus_copy: Path):
    (corpus_copy / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n", encoding="utf-8")
    messages = _messages(corpus_copy)
    assert any(m.startswith("corpus/broken.yaml: line ") and "malformed YAML" in m for m in messages), messages


def test_missing_field_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data["cause"]
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert "corpus/socket-bind-failed.yaml: cause: required field is missing" in _messages(corpus_copy)


def test_missing_language_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data["title"]["zh"]
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert "corpus/socket-bind-failed.yaml: title.zh: required field is missing" in _messages(corpus_copy)


def test_english_copied_into_chinese_field_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["cause"]["zh"] = data["cause"]["en"]
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert "corpus/socket-bind-failed.yaml: cause.zh: missing language: no Chinese text" in _messages(corpus_copy)


def test_unknown_field_is_reported(corpus_copy: Path):
    _edit(corpus_copy / "socket-bind-failed.yaml", severity="high")
    assert "corpus/socket-bind-failed.yaml: severity: unknown field (not in the schema)" in _messages(corpus_copy)


def test_bad_regex_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["signatures"][0]["pattern"] = "Socket (bind failed"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    messages = _messages(corpus_copy)
    assert any(m.startswith("corpus/socket-bind-failed.yaml: signatures.0.pattern: regex does not compile") for m in messages), messages


def test_backreference_regex_is_refused_because_it_is_not_linear_time(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["signatures"][0]["pattern"] = r"(bind) \1"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert any("signatures.0.pattern: regex does not compile under RE2" in m for m in _messages(corpus_copy))


def test_pattern_matching_empty_line_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["signatures"][0]["pattern"] = "(?i)(socket)?"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert any("matches an empty line" in m for m in _messages(corpus_copy))


def test_duplicate_id_is_reported(corpus_copy: Path):
    text = (corpus_copy / "socket-bind-failed.yaml").read_text(encoding="utf-8")
    (corpus_copy / "zz-copy.yaml").write_text(text, encoding="utf-8")
    messages = _messages(corpus_copy)
    assert "corpus/zz-copy.yaml: id: duplicate id 'socket-bind-failed' (also in corpus/socket-bind-failed.yaml)" in messages


def test_example_not_matched_by_own_signatures_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["examples"].append("[INFO] everything is fine\n[INFO] still fine")
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    n = len(data["examples"]) - 1
    assert f"corpus/socket-bind-failed.yaml: examples.{n}: not matched by this entry's own signatures" in _messages(corpus_copy)


def test_example_matched_more_strongly_by_another_entry_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["signatures"][0]["weight"] = 0.3
    data["examples"].append("Socket bind failed\nRuntimeError: NPU out of memory. Tried to allocate 2.00 GiB")
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    messages = _messages(corpus_copy)
    assert any("socket-bind-failed.yaml: examples." in m and "matches it more strongly" in m for m in messages), messages


def test_error_without_signature_is_reported(corpus_copy: Path):
    _edit(corpus_copy / "socket-bind-failed.yaml", signatures=[], examples=[])
    assert "corpus/socket-bind-failed.yaml: signatures: entry names an error message but has no signature to recognise it" in _messages(corpus_copy)


def test_named_group_without_placeholder_is_reported(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["signatures"][0]["pattern"] = r"Socket bind failed.*?(?P<host>\d+\.\d+\.\d+\.\d+)"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert any("named group 'host' fills no {host} placeholder" in m for m in _messages(corpus_copy))


def test_fix_without_the_faq_commands_is_reported(corpus_copy: Path):
    _edit(corpus_copy / "socket-bind-failed.yaml", commands=[])
    facts = corpus_copy.parent / "facts.yaml"
    facts.write_text(yaml.safe_dump([{"entry": "socket-bind-failed", "section": 7, "commands": ["lsof -i :{port}"]}]))
    _, problems = check_corpus(corpus_copy, facts)
    assert "corpus/socket-bind-failed.yaml: commands: fix has no commands, but faq-facts.md §7 gives some" in [str(p) for p in problems]


def test_binary_and_non_mapping_files_are_reported(corpus_copy: Path):
    (corpus_copy / "blob.yaml").write_bytes(b"\xff\xfe\x00\x01garbage")
    (corpus_copy / "list.yaml").write_text("- just\n- a list\n")
    messages = _messages(corpus_copy)
    assert any(m.startswith("corpus/blob.yaml: not UTF-8 text") for m in messages)
    assert "corpus/list.yaml: expected a mapping of fields at the top level" in messages


def test_an_operator_entry_is_picked_up_with_no_code_change(corpus_copy: Path):
    entry = yaml.safe_load((corpus_copy / "socket-bind-failed.yaml").read_text(encoding="utf-8"))
    entry.update(id="site-disk-full", errors=["No space left on device"], related=[],
                 signatures=[{"pattern": "(?i)no space left on device", "weight": 1.0}],
                 examples=["[ERROR] write /var/log/x: No space left on device\n[INFO] retry", "OSError: [Errno 28] No space left on device"])
    (corpus_copy / "site" ).mkdir()
    (corpus_copy / "site" / "disk-full.yaml").write_text(yaml.safe_dump(entry, allow_unicode=True), encoding="utf-8")
    corpus, problems = check_corpus(corpus_copy, None)
    assert [str(p) for p in problems] == []
    assert "site-disk-full" in corpus.by_id


@pytest.mark.timeout(20)
def test_signatures_stay_linear_on_adversarial_lines():
    """Lines built to make backtracking engines explode are matched in bounded time by RE2."""
    index = SignatureIndex.from_corpus(load_corpus(CORPUS))
    hostile = [
        "a" * 200_000,
        "Socket bind " + "failed " * 20_000 + "port",
        "[" * 50_000 + "ERROR" + "]" * 50_000,
        ("out of memory, " * 10_000) + "need",
        "File \"" + "/x" * 40_000 + "\", line 1",
        "error=SO_ERROR: " + " " * 100_000 + "Connection",
        ("MIE05E" + "0" * 50) * 2_000,
    ]
    for _ in range(3):
        index.match(hostile)
    # The classic catastrophic pattern is harmless under RE2.
    assert re2.compile(r"(a+)+$").search("a" * 100_000 + "b") is None


def test_a_context_signature_counts_only_when_the_paste_names_its_chip():
    index = SignatureIndex.from_corpus(load_corpus(CORPUS))
    failure = "RuntimeError: call aclnnFlashAttentionVarLenScore failed, detail:EZ9999: inner error"
    on_910b = index.match(["running on an Atlas 800I A2 (910B4)", failure])
    on_duo = index.match(["running on an Atlas 300I Duo", failure])
    assert "op-or-feature-not-supported-on-310p" not in on_910b
    match = on_duo["op-or-feature-not-supported-on-310p"]
    assert [m.line_no for m in match.lines] == [1]
    # Excerpts (the cause lines of a chain) look for the chip in the whole paste they came from.
    excerpt = index.match([failure], numbers=[7], whole="Atlas 300I Duo\n...\n" + failure)
    assert excerpt["op-or-feature-not-supported-on-310p"].lines[0].line_no == 7


def test_a_context_pattern_that_does_not_compile_is_named(corpus_copy: Path):
    path = corpus_copy / "socket-bind-failed.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["signatures"][0]["context"] = ["(?<=lookbehind)x"]
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    assert any("signatures.0.context.0: regex does not compile under RE2" in m for m in _messages(corpus_copy))


def test_invalid_corpus_stops_the_cli_with_the_same_clear_message(corpus_copy: Path):
    _edit(corpus_copy / "socket-bind-failed.yaml", severity="high")
    env = {"MINDIE_HELP_CORPUS_DIR": str(corpus_copy), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    for args in (["ask", "Socket bind failed"], ["corpus", "check"], ["serve"]):
        proc = subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert proc.returncode != 0, args
        both = proc.stdout + proc.stderr
        assert "corpus/socket-bind-failed.yaml: severity: unknown field (not in the schema)" in both, args
        assert "Traceback" not in both, args


def test_the_readme_example_entry_is_valid_and_answers(corpus_copy: Path):
    """The example in corpus/README.md is exactly what an operator would paste in: it must pass the check."""
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    example = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    (corpus_copy / "site").mkdir()
    (corpus_copy / "site" / "disk-full.yaml").write_text(example, encoding="utf-8")
    corpus, problems = check_corpus(corpus_copy, None)
    assert [str(p) for p in problems] == []
    matches = SignatureIndex.from_corpus(corpus).match(["[ERROR] write failed: No space left on device /data/logs"])
    assert matches["site-disk-full"].captures() == {"mount": "/data/logs"}


def test_corpus_check_warns_about_signatures_that_claim_other_entries_examples(corpus_copy: Path):
    """The scale check: a signature that fires on another entry's example is where catch-alls begin."""
    from typer.testing import CliRunner

    from bot.cli import app

    path = corpus_copy / "socket-bind-failed.yaml"
    signatures = yaml.safe_load(path.read_text(encoding="utf-8"))["signatures"]
    _edit(path, signatures=signatures + [{"pattern": "(?i)out of memory", "weight": 0.3}])
    runner = CliRunner()
    env = {"MINDIE_HELP_CORPUS_DIR": str(corpus_copy)}
    result = runner.invoke(app, ["corpus", "check"], env=env)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: corpus/socket-bind-failed.yaml")]
    assert warnings and any("npu-out-of-memory example" in w for w in warnings)
    assert runner.invoke(app, ["corpus", "check", "--strict"], env=env).exit_code == 1


def test_signature_matching_finds_exactly_what_each_pattern_finds_on_each_line():
    """Matching reads the whole paste with small RE2 sets (multi-line patterns, a small memory budget each) and
    then only the patterns they name. Whatever the shortcut, the result must be what searching every line with every
    pattern on its own gives: a set whose DFA ran out of memory, or a multi-line match that hid a line's own, would
    silently lose entries. Ordinary lines (every example of the corpus, in one paste) and hostile ones."""
    from tests.hostile_cases import OOM_LINE, SOCKET_LINE

    corpus = load_corpus(CORPUS)
    index = SignatureIndex.from_corpus(corpus)
    lines = [line for entry in corpus.entries for log in entry.example_logs for line in log.splitlines()]
    lines += [SOCKET_LINE, "", OOM_LINE, "[" * 9_000, "ERROR " + "x" * 7_990, "é漢\x00" * 2_000, "   ",
              " ".join(f"MIE05E{n:06d} EZ{n % 10_000:04d}" for n in range(400)), "Tiling failed", "  setup failed!  "]
    whole = "\n".join(lines)
    expected: dict[str, set[int]] = {}
    for n, line in enumerate(lines):
        line = line[:8_000]
        if not line.strip():
            continue
        for i, (entry_id, _, _, compiled) in enumerate(index._patterns):
            if (compiled.search(line) and all(t in line for t in index._also[i])
                    and all(rx.search(whole[:200_000]) for rx in index._context[i])):
                expected.setdefault(entry_id, set()).add(n)
    got = {entry_id: {m.line_no for m in match.lines} for entry_id, match in index.match(lines).items()}
    assert got == expected
    assert len(got) > 150  # nearly every entry with signatures matches its own examples
