"""The nearest chunks to a query: an exact scan of the int8 rows by usearch's SIMD kernels
(cosine; `usearch.index.search(..., exact=True)`), on the CPUs `projections.cpus` allows.
Exact, so nothing is approximated beyond the int8 rounding of the vectors (recall in
docs/search.md "By meaning").

A one-shot process (`agentlog search`) would spend ~1 s loading the model and numpy for one
query vector; when a query server runs for the folder (`serve.py`, started by the terminal's
search), `nearest` asks it over its Unix socket instead and imports neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from projections.meaning.model import Model, load, model_id
from projections.meaning.store import Store

__all__ = ["nearest", "scan"]


def nearest(folder: Path, query: str, k: int, *, model: Model | None = None,
            ask: bool = True) -> list[tuple[int, str, float]]:
    """Up to `k` (doc rowid, doc id, similarity) best first, one per document; [] when the
    projection is empty or is another model's. `ask`: try the folder's query server first."""
    if not (folder / "meaning.db").is_file():
        return []
    if ask and model is None:
        from projections.meaning.serve import ask as ask_server

        answer = ask_server(folder, query, k)
        if answer is not None:
            return answer
    return scan(folder, query, k, model or load())


def scan(folder: Path, query: str, k: int, model: Model) -> list[tuple[int, str, float]]:
    """`nearest` in this process."""
    store = Store.reader(folder)
    if store is None:
        return []
    try:
        rows = store.matrix()
        if len(rows) == 0 or store.model != model_id():
            return []
        return _best(store, rows, model.encode([query])[0], k)
    finally:
        store.close()


def _best(store: Store, rows: Any, vec: Any, k: int) -> list[tuple[int, str, float]]:
    import numpy as np
    from usearch.index import MetricKind, search  # type: ignore[attr-defined]

    from projections.cpus import usable

    q = np.clip(np.rint(vec * 127.0), -127, 127).astype(np.int8)
    found = search(rows, q, min(len(rows), k * 3), MetricKind.Cos, exact=True,
                   threads=usable())
    keys = [int(x) for x in found.keys]
    docs = store.docs(keys)
    out: list[tuple[int, str, float]] = []
    seen: set[int] = set()
    for key, dist in zip(keys, found.distances, strict=True):
        doc = docs.get(key)
        if doc is None or doc[0] in seen:
            continue
        seen.add(doc[0])
        out.append((doc[0], doc[1], 1.0 - float(dist)))
        if len(out) >= k:
            break
    return out
