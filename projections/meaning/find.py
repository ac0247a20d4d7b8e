"""The nearest chunks to a query: an exact scan of the int8 rows by usearch's SIMD kernels
(cosine; `usearch.index.search(..., exact=True)`), on the CPUs `projections.cpus` allows.
Exact, so nothing is approximated beyond the int8 rounding of the vectors (recall in
docs/search.md "By meaning")."""

from __future__ import annotations

from pathlib import Path

from projections.meaning.model import Model, load
from projections.meaning.store import Store

__all__ = ["nearest"]


def nearest(folder: Path, query: str, k: int, *, model: Model | None = None
            ) -> list[tuple[int, str, float]]:
    """Up to `k` (doc rowid, doc id, similarity) best first, one per document; [] when the
    projection is empty."""
    store = Store.reader(folder)
    if store is None:
        return []
    try:
        rows = store.matrix()
        if len(rows) == 0:
            return []
        import numpy as np
        from usearch.index import MetricKind, search  # type: ignore[attr-defined]

        from projections.cpus import usable

        vec = (model or load()).encode([query])[0]
        q = np.clip(np.rint(vec * 127.0), -127, 127).astype(np.int8)
        want = min(len(rows), k * 3)
        found = search(rows, q, want, MetricKind.Cos, exact=True, threads=usable())
        keys = [int(x) for x in found.keys]
        dists = [float(x) for x in found.distances]
        docs = store.docs(keys)
        out: list[tuple[int, str, float]] = []
        seen: set[int] = set()
        for key, dist in zip(keys, dists, strict=True):
            doc = docs.get(key)
            if doc is None or doc[0] in seen:
                continue
            seen.add(doc[0])
            out.append((doc[0], doc[1], 1.0 - dist))
            if len(out) >= k:
                break
        return out
    finally:
        store.close()
