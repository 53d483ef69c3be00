"""The compatibility table in corpus/compat/: it loads, cites every row, and a malformed row is refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli import app
from bot.corpus.check import check_corpus
from bot.corpus.loader import CorpusError, load_corpus
from bot.environment.versions import parse_version
from bot.settings import get_settings

CORPUS = Path(__file__).resolve().parent.parent / "corpus"

runner = CliRunner()


@pytest.fixture(scope="module")
def table():
    return load_corpus(CORPUS).compat


MINIMAL_ENTRY = {
    "id": "site-disk-full", "component": "Service", "source": "ops runbook 12",
    "title": {"en": "Disk full", "zh": "磁盘已满"}, "symptom": {"en": "Writes fail.", "zh": "写入失败。"},
    "cause": {"en": "The disk is full.", "zh": "磁盘已满。"}, "fix": {"en": ["Free some space."], "zh": ["清理磁盘空间。"]},
}


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    """The real compatibility table next to one small entry: loads in a fraction of the whole corpus's time."""
    import shutil

    dest = tmp_path / "corpus"
    shutil.copytree(CORPUS / "compat", dest / "compat")
    (dest / "disk-full.yaml").write_text(yaml.safe_dump(MINIMAL_ENTRY, allow_unicode=True), encoding="utf-8")
    return dest


def test_the_table_loads_and_every_row_cites_a_source(table):
    assert table.rows >= 100
    for name in ("cann", "torch_npu", "pta", "torch_python", "mindie", "vllm_ascend", "chips", "driver_floors"):
        rows = getattr(table, name)
        assert rows, f"no {name} rows"
        for row in rows:
            assert row.source.startswith("https://") or row.source.startswith("faq#")


def test_it_covers_the_mindie_releases_of_the_last_two_years(table):
    covered = {row.mindie for row in table.mindie}
    # MindIE 1.0.0 (Dec 2024) to 3.0.0 (2026); 2.0.RC2 has no public compatibility note we could cite.
    assert {"1.0.0", "2.0.RC1", "2.1.RC1", "2.1.RC2", "2.2.RC1", "2.3.0", "3.0.0"} <= covered
    assert all(row.cann for row in table.mindie)


def test_it_covers_vllm_ascend_and_torch_npu_releases(table):
    plugins = {row.vllm_ascend for row in table.vllm_ascend}
    assert {"0.7.3", "0.9.1", "0.11.0", "0.13.0", "0.18.0", "0.23.0"} <= plugins
    assert {"2.1.0.post10", "2.5.1", "2.7.1", "2.9.0", "2.10.0.post4"} <= {row.torch_npu for row in table.torch_npu}
    for row in table.torch_npu:  # the naming rule the checker falls back on: torch_npu X.Y.Z is built for torch X.Y.Z
        assert parse_version(row.torch_npu).base() == parse_version(row.torch).base()


def test_chip_names_map_to_families(table):
    assert table.family("910B3").id == "A2"
    assert table.family("Atlas 800T A2").id == "A2"
    assert table.family("310P3").id == "310P"
    assert table.family("910ProB").id == "910"
    assert table.family("Ascend910") is None  # A3 or first generation: only npu-smi's layout tells them apart


def _write(corpus: Path, name: str, data: dict) -> None:
    (corpus / "compat" / name).write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def test_a_row_that_is_not_a_version_is_reported_with_file_and_field(corpus_copy: Path):
    data = yaml.safe_load((corpus_copy / "compat" / "mindie.yaml").read_text(encoding="utf-8"))
    data["mindie"][3]["cann"] = ["8.x.latest"]
    _write(corpus_copy, "mindie.yaml", data)
    _, problems = check_corpus(corpus_copy)
    assert [str(p) for p in problems] == [
        "corpus/compat/mindie.yaml: mindie.3.cann.0: Value error, '8.x.latest' is not a version (expected e.g. 8.0.RC3, 2.5.1.post1, 24.1.rc2)"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["mindie"][0].pop("source"), "mindie.0.source: required field is missing"),
    (lambda d: d["mindie"][0].update({"cuda": "12.1"}), "mindie.0.cuda: unknown field (not in the schema)"),
    (lambda d: d["mindie"][0].update({"source": "the internet"}), "mindie.0.source: String should match pattern"),
    (lambda d: d["mindie"][0].update({"python": ["3.x"]}), "mindie.0.python.0: Value error, '3.x' is not a Python series"),
    (lambda d: d["mindie"].append(dict(d["mindie"][1])), "mindie.9.mindie: duplicate mindie '1.0.RC3'"),
])
def test_malformed_rows_are_refused(corpus_copy: Path, change, message: str):
    data = yaml.safe_load((corpus_copy / "compat" / "mindie.yaml").read_text(encoding="utf-8"))
    change(data)
    _write(corpus_copy, "mindie.yaml", data)
    with pytest.raises(CorpusError) as caught:
        load_corpus(corpus_copy)
    assert any(message in str(p) for p in caught.value.problems), [str(p) for p in caught.value.problems]


def test_a_chip_pattern_re2_refuses_is_reported(corpus_copy: Path):
    data = yaml.safe_load((corpus_copy / "compat" / "chips.yaml").read_text(encoding="utf-8"))
    data["chips"][0]["names"].append(r"(910B)\1")
    _write(corpus_copy, "chips.yaml", data)
    _, problems = check_corpus(corpus_copy)
    assert len(problems) == 1 and "chips.0.names.4: regex does not compile under RE2" in str(problems[0])


def test_a_cann_row_without_any_driver_is_refused(corpus_copy: Path):
    data = yaml.safe_load((corpus_copy / "compat" / "cann.yaml").read_text(encoding="utf-8"))
    data["cann"][0].pop("driver_paired")
    _write(corpus_copy, "cann.yaml", data)
    _, problems = check_corpus(corpus_copy)
    assert "give driver_min or driver_paired" in str(problems[0])


def test_corpus_check_cli_names_the_bad_row(corpus_copy: Path, monkeypatch):
    data = yaml.safe_load((corpus_copy / "compat" / "vllm_ascend.yaml").read_text(encoding="utf-8"))
    data["vllm_ascend"][0]["torch_npu"] = "two point ten"
    _write(corpus_copy, "vllm_ascend.yaml", data)
    monkeypatch.setenv("MINDIE_HELP_CORPUS_DIR", str(corpus_copy))
    get_settings.cache_clear()
    try:
        result = runner.invoke(app, ["corpus", "check"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 1
    assert "corpus/compat/vllm_ascend.yaml: vllm_ascend.0.torch_npu: Value error, 'two point ten' is not a version" in result.stdout


def test_corpus_check_counts_the_table(monkeypatch):
    monkeypatch.setenv("MINDIE_HELP_CORPUS_DIR", str(CORPUS))
    get_settings.cache_clear()
    try:
        result = runner.invoke(app, ["corpus", "check"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0 and "compatibility rows" in result.stdout


def test_editing_the_table_does_not_touch_the_search_index_hash(corpus_copy: Path):
    before = load_corpus(corpus_copy).digest
    with (corpus_copy / "compat" / "cann.yaml").open("a", encoding="utf-8") as fh:
        fh.write("\n# a comment\n")
    assert load_corpus(corpus_copy).digest == before
