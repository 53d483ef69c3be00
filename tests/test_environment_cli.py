"""`mindie-help env`: the environment check on demand, from an argument, a file or stdin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.settings import get_settings

DATA = Path(__file__).parent / "data" / "env"
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
runner = CliRunner()


@pytest.fixture
def cli_env(monkeypatch):
    monkeypatch.setenv("MINDIE_HELP_CORPUS_DIR", str(CORPUS))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_env_command_reads_a_file_and_names_the_mismatch(cli_env, tmp_path: Path):
    paste = tmp_path / "env.txt"
    paste.write_text("torch 2.7.0\ntorch_npu 2.5.1\nCANN: 8.1.RC1\n", encoding="utf-8")
    result = runner.invoke(app, ["env", "--file", str(paste)])
    assert result.exit_code == 0, result.output
    assert "✗ torch 2.7.0 ↔ torch_npu 2.5.1" in result.stdout and "\npip install torch==2.5.1" not in result.stdout
    assert "→ pip install torch==2.5.1" in result.stdout


def test_env_command_json_and_stdin(cli_env):
    result = runner.invoke(app, ["env", "--format", "json", "-"], input=(DATA / "pip-list-torch-vllm.txt").read_text())
    payload = json.loads(result.stdout)
    assert payload["environment"]["checks"][0]["pair"] == ["vllm", "torch_npu"]
    assert {"facts", "cards", "checks", "observations", "verdict", "missing", "commands"} <= set(payload["environment"])


def test_env_command_without_facts_lists_the_commands(cli_env):
    result = runner.invoke(app, ["env"], input="")
    assert result.exit_code == 0
    assert "\nnpu-smi info\n" in result.stdout and "python --version" in result.stdout
    result = runner.invoke(app, ["env", "--format", "json", "hello there"])
    payload = json.loads(result.stdout)
    assert payload["environment"] is None and any(c["run"] == "npu-smi info" for c in payload["commands"])
