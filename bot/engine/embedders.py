"""Sentence embeddings behind one small interface, in two implementations.

SentenceTransformerEmbedder loads any sentence-transformers model (name or folder). Importing it costs ~9 s
and ~500 MB (torch, transformers, scikit-learn), so when the index is built the model is also exported to
ONNX; later start-ups embed queries with onnxruntime and the model's own fast tokenizer, which start in well
under a second and give the same vectors. Either one serves the dense retriever.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

ONNX_DIR = "onnx"
ONNX_MODEL = "model.onnx"
ONNX_TOKENIZER = "tokenizer.json"
ONNX_META = "embedder.json"
BATCH = 16  # small batches of similar length: little padding (measured fastest on 2 cores)
READ_CHARS = 2000  # readability is judged on the head of a text; enough to tell the script it is in


class Embedder(Protocol):
    backend: str

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""

    def readability(self, text: str) -> float:
        """Share of the text's tokens the model knows (1.0 when the tokenizer has no unknown token)."""


def _unk_share(tokenizer, unk_id: int | None, text: str, max_tokens: int) -> float:
    if unk_id is None:
        return 1.0
    ids = tokenizer.encode(text[:READ_CHARS], add_special_tokens=False).ids[:max_tokens]
    if not ids:
        return 0.0
    return 1.0 - sum(1 for t in ids if t == unk_id) / len(ids)


def _configured(tokenizer, max_tokens: int):
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class SentenceTransformerEmbedder:
    backend = "sentence-transformers"

    def __init__(self, name_or_path: str):
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a progress bar per start-up is noise in a bot's logs
        self.model = SentenceTransformer(name_or_path, device="cpu")
        hf = self.model.tokenizer
        self.unk_id = getattr(hf, "unk_token_id", None)
        self.max_tokens = int(self.model.max_seq_length or 256)
        # A private copy of the fast tokenizer (transformers changes its backend's settings on every call),
        # configured exactly as the ONNX embedder configures its own: identical readings either way.
        backend = getattr(hf, "backend_tokenizer", None)
        self.tokenizer = _configured(type(backend).from_str(backend.to_str()), self.max_tokens) if backend is not None else None

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=progress)
        return _normalise(vectors)

    def readability(self, text: str) -> float:
        if self.tokenizer is None:
            return 1.0
        return _unk_share(self.tokenizer, self.unk_id, text, self.max_tokens)

    def export_onnx(self, folder: Path, model_name: str) -> None:
        """Write model.onnx (the whole sentence-transformers pipeline: transformer and pooling), its tokenizer
        and a small description, atomically. Raises on models that cannot be exported; callers carry on."""
        import torch

        if self.tokenizer is None:
            raise ValueError("the model has no fast tokenizer")
        sample = self.model.tokenizer(["an example", "a second, longer example sentence"], padding=True, return_tensors="pt")
        inputs = list(sample.keys())
        st_model = self.model

        class Pipeline(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.st = st_model

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                return self.st(dict(zip(inputs, tensors)))["sentence_embedding"]

        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".onnx-", dir=folder.parent))
        try:
            axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
            axes["sentence_embedding"] = {0: "batch"}
            # Tracing warns that shape checks become constants; the probe below proves the graph still
            # reproduces the model on short, long (truncated) and batched inputs.
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    Pipeline().eval(), tuple(sample[name] for name in inputs), str(tmp / ONNX_MODEL),
                    input_names=inputs, output_names=["sentence_embedding"], dynamic_axes=axes, opset_version=17, dynamo=False,
                )
            self.tokenizer.save(str(tmp / ONNX_TOKENIZER))
            meta = {"model": model_name, "inputs": inputs, "max_tokens": self.max_tokens, "unk_id": self.unk_id,
                    "sha256": sha256_file(tmp / ONNX_MODEL)}
            (tmp / ONNX_META).write_text(json.dumps(meta, indent=2))
            probe = ["Socket bind failed, port 1025", "NPU out of memory " * 60]
            exported = OnnxEmbedder(tmp, meta)
            if float(np.min(np.sum(exported.encode(probe) * self.encode(probe), axis=1))) < 0.999:
                raise ValueError("the exported model does not reproduce the original's vectors")
            tmp.chmod(0o755)  # mkdtemp makes it private; the index folder is meant to be shared like the rest
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class OnnxEmbedder:
    backend = "onnx"

    def __init__(self, folder: Path, meta: dict):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(folder / ONNX_MODEL), options, providers=["CPUExecutionProvider"])
        self.tokenizer = _configured(Tokenizer.from_file(str(folder / ONNX_TOKENIZER)), int(meta["max_tokens"]))
        self.inputs: list[str] = list(meta["inputs"])
        self.unk_id = meta.get("unk_id")
        self.max_tokens = int(meta["max_tokens"])

    @classmethod
    def load(cls, index_dir: Path, model_name: str) -> "OnnxEmbedder | None":
        """The export in index_dir if it is intact and of this model; else None (and the slow path is used)."""
        folder = index_dir / ONNX_DIR
        try:
            meta = json.loads((folder / ONNX_META).read_text())
            if meta.get("model") != model_name or sha256_file(folder / ONNX_MODEL) != meta.get("sha256"):
                return None
            return cls(folder, meta)
        except Exception as exc:  # missing, corrupt, or onnxruntime unavailable: fall back, never crash
            log.info("onnx_embedder_unavailable reason=%s", type(exc).__name__)
            return None

    def _feed(self, encodings: list) -> dict[str, np.ndarray]:
        width = max(len(e.ids) for e in encodings)
        columns = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
        feed = {}
        for name in self.inputs:
            rows = [getattr(e, columns[name]) for e in encodings]
            feed[name] = np.array([r + [0] * (width - len(r)) for r in rows], dtype=np.int64)
        return feed

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """Batches of texts of similar token length (each batch is padded to its longest text: an index build
        sorted this way takes a third of the time), returned in the order given."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = []
        for start in range(0, len(order), BATCH):
            batch = [encodings[i] for i in order[start : start + BATCH]]
            out.append(self.session.run(None, self._feed(batch))[0])
        vectors = np.empty((len(texts), out[0].shape[1]), dtype=out[0].dtype)
        vectors[order] = np.vstack(out)
        return _normalise(vectors)

    def readability(self, text: str) -> float:
        return _unk_share(self.tokenizer, self.unk_id, text, self.max_tokens)
