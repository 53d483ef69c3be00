"""FaultDiag knowledge packs: a site's kg-config.json adds lower-priority entries; a broken one is refused clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.corpus.faultdiag import PACK_WEIGHT, FaultDiagError, load_faultdiag
from bot.corpus.loader import load_corpus
from bot.engine.engine import Engine, with_pack
from bot.settings import Settings
from tests.conftest import CORPUS, ROOT

PACK = ROOT / "tests" / "data" / "faultdiag" / "site-pack.json"
OFFICIAL = ROOT.parent / "shared" / "reference" / "faultdiag" / "kg-config.json"
runner = CliRunner()


def test_pack_entities_become_entries_with_literal_all_of_triggers():
    pack = load_faultdiag(PACK)
    by_id = {e.id: e for e in pack.entries}
    assert set(by_id) == {"fd-site-storage-01", "fd-site-net-02"}
    assert pack.skipped == ["SITE_NoTrigger_03: no keyword trigger"]
    storage = by_id["fd-site-storage-01"]
    assert storage.title.en == storage.title.zh == "模型权重所在的共享存储挂载丢失"  # Chinese-only pack: shown as is
    assert storage.fix.zh[0] == "执行 mount -a 重新挂载共享存储；"  # its own "1." numbering removed
    assert storage.fix.en[-1] == "May be caused by: SITE_Net_02"  # the rule link, read backwards
    sig = storage.signatures[0]
    assert sig.weight == PACK_WEIGHT and sig.also and sig.pattern.replace("\\", "") in ("Stale file handle", "/mnt/weights")


def test_a_pack_answers_its_own_faults_but_only_when_all_keywords_are_on_one_line(engine_settings):
    engine = Engine(with_pack(load_corpus(CORPUS), PACK), engine_settings, engine_settings_dense(engine_settings))
    hit = engine.answer("OSError: [Errno 116] Stale file handle: '/mnt/weights/qwen/config.json'")
    assert hit.candidates[0] == "fd-site-storage-01"
    split = engine.answer("OSError: [Errno 116] Stale file handle\nreading /mnt/weights/qwen/config.json")
    assert "fd-site-storage-01" not in split.candidates[:1] or not split.answered
    curated = engine.answer("[ERROR] Socket bind failed, ip 127.0.0.1 port 1025")
    assert curated.results[0].id == "socket-bind-failed"  # a pack never displaces the curated corpus


def engine_settings_dense(settings: Settings):
    from bot.engine.engine import DenseState

    return DenseState()  # signatures and lexical search are enough to show the pack's triggers at work


@pytest.mark.parametrize("content, message", [
    (b"not json", "not a JSON knowledge file"),
    (b"{}", "no 'knowledge-repository'"),
    (json.dumps({"knowledge-repository": {"A_1": {"attribute": "x"}}}).encode(), "entity 'A_1': expected an object"),
    (json.dumps({"knowledge-repository": {"A_2": {"attribute": {"cause_zh": "x"}, "regex": {"in": ["k"]}}}}).encode(),
     "entity 'A_2': attribute has neither description_zh nor description_en"),
    (json.dumps({"knowledge-repository": {"A_3": {"attribute": {}, "regex": {"in": "k"}}}}).encode(), "entity 'A_3': regex.in must be a list"),
])
def test_a_malformed_pack_is_one_clear_error_naming_the_entity(tmp_path: Path, content: bytes, message: str):
    path = tmp_path / "kg-config.json"
    path.write_bytes(content)
    with pytest.raises(FaultDiagError, match=message):
        load_faultdiag(path)
    result = runner.invoke(app, ["corpus", "check", "--faultdiag", str(path)])
    assert result.exit_code == 1 and message in result.stdout and "Traceback" not in result.output


def test_a_malformed_pack_leaves_the_bot_running(tmp_path: Path, caplog):
    path = tmp_path / "kg-config.json"
    path.write_text("{broken")
    corpus = load_corpus(CORPUS)
    assert with_pack(corpus, path) is corpus
    assert "faultdiag_pack_refused" in caplog.text


def test_the_official_knowledge_file_loads_as_a_pack():
    """Huawei's own kg-config.json (925 entities) reads cleanly: every entity with a trigger becomes an entry."""
    if not OFFICIAL.exists():  # CI lays shared/ beside the clone; a clone elsewhere has no copy to read
        pytest.skip(f"no FaultDiag knowledge file at {OFFICIAL}")
    pack = load_faultdiag(OFFICIAL, taken=set(load_corpus(CORPUS).by_id))
    assert len(pack.entries) + len(pack.skipped) == len(json.loads(OFFICIAL.read_text())["knowledge-repository"])
    assert len(pack.entries) > 900
    result = runner.invoke(app, ["corpus", "check", "--faultdiag", str(OFFICIAL)])
    assert result.exit_code == 0 and "faultdiag pack OK: " in result.stdout
