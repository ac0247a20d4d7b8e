"""The nearest chunks to a query: an exact scan of the int8 rows by usearch's SIMD kernels
(cosine; `usearch.index.search(..., exact=True)`), on the CPUs `projections.cpus` allows.
Past `EXACT_ROWS` rows (a full scan of 1M rows is ~0.25 s on two cores) the search has two
passes: the Hamming distance of the rows' sign bits to the query's (numkong's packed SIMD
kernel over 64 bytes a row, ~14 ms for 1M once a process has packed its blocks), then the
`SHORTLIST` nearest by bits rescored exactly by int8 cosine. Recall in docs/search.md "By meaning".

A one-shot process (`agentlog search`) would spend ~1 s loading the model and numpy for one
query vector; when a query server runs for the folder (`serve.py`, started by the terminal's
search), `nearest` asks it over its Unix socket instead and imports neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projections.meaning.model import Model, load, model_id
from projections.meaning.store import Store

__all__ = ["nearest", "scan"]

EXACT_ROWS = 200_000  # rows scanned exactly; more: sign bits first
SHORTLIST = 2_000     # rows the bits pass keeps for the exact rescoring


def nearest(folder: Path, query: str, k: int, *, spec: Mapping[str, Any] | None = None,
            ask: bool = True) -> list[tuple[int, str, float]]:
    """Up to `k` (doc rowid, doc id, similarity) best first, one per document, by the model
    of `spec` (None: the default); [] when the projection is empty or another model's.
    `ask`: try the folder's query server first."""
    if not (folder / "meaning.db").is_file():
        return []
    if ask:
        from projections.meaning.client import ask as ask_server

        answer = ask_server(folder, query, k, model_id(spec))
        if answer is not None:
            return answer
    return scan(folder, query, k, load(spec))


def scan(folder: Path, query: str, k: int, model: Model) -> list[tuple[int, str, float]]:
    """`nearest` in this process."""
    store = Store.reader(folder)
    if store is None:
        return []
    try:
        rows = store.matrix()
        if len(rows) == 0 or store.model != model.id:
            return []
        return _best(store, rows, model.query(query), k)
    except (ValueError, OSError):  # files cut by a reset between reading `count` and mapping
        return []
    finally:
        store.close()


def _best(store: Store, rows: Any, vec: Any, k: int) -> list[tuple[int, str, float]]:
    import numpy as np

    q = np.clip(np.rint(vec * 127.0), -127, 127).astype(np.int8)
    want = min(len(rows), k * 3)
    if len(rows) > EXACT_ROWS:
        keys, dists = _two_pass(store, rows, q, want)
    else:
        from usearch.index import MetricKind, search  # type: ignore[attr-defined]

        from projections.cpus import usable

        found = search(rows, q, want, MetricKind.Cos, exact=True, threads=usable())
        keys, dists = [int(x) for x in found.keys], [float(x) for x in found.distances]
    docs = store.docs(keys)
    out: list[tuple[int, str, float]] = []
    seen: set[int] = set()
    for key, dist in zip(keys, dists, strict=True):
        doc = docs.get(key)
        if doc is None or doc[0] in seen:
            continue
        seen.add(doc[0])
        out.append((doc[0], doc[1], 1.0 - float(dist)))
        if len(out) >= k:
            break
    return out


def _two_pass(store: Store, rows: Any, q: Any, want: int) -> tuple[list[int], list[float]]:
    """The `want` nearest rows: the `SHORTLIST` nearest by sign bits, rescored by cosine."""
    import numpy as np

    ham = _hamming(store, np.packbits(q > 0)[None, :])
    short = min(SHORTLIST, len(ham) - 1)
    keys = np.sort(np.argpartition(ham, short)[: short + 1])
    cand = np.asarray(rows[keys], dtype=np.float32)
    qf = q.astype(np.float32)
    sims = (cand @ qf) / (np.linalg.norm(cand, axis=1) * float(np.linalg.norm(qf)) + 1e-9)
    order = np.argsort(-sims)[:want]
    return [int(keys[i]) for i in order], [1.0 - float(sims[i]) for i in order]


PACK_ROWS = 1 << 17  # rows of one packed block (numkong.hammings_pack) a process keeps
_packs: dict[tuple[str, Any], list[Any]] = {}  # (folder, epoch) -> packed full blocks


def _hamming(store: Store, qbits: Any) -> Any:
    """The Hamming distance of every committed row's sign bits to `qbits` (uint32): full
    blocks of `PACK_ROWS` rows packed once per process (numkong's packed kernel is twice
    as fast as its `cdist`, and packing costs more than one scan), the rest packed now."""
    import numkong
    import numpy as np

    bits = store.bits()
    key = (str(store.folder), store.meta("epoch"))
    blocks = _packs.setdefault(key, [])
    full = len(bits) // PACK_ROWS
    while len(blocks) < full:
        i = len(blocks)
        blocks.append(numkong.hammings_pack(np.ascontiguousarray(
            bits[i * PACK_ROWS:(i + 1) * PACK_ROWS]), dtype="uint1"))
    parts = [np.asarray(numkong.hammings_packed(qbits, b))[0] for b in blocks[:full]]
    rest = bits[full * PACK_ROWS:]
    if len(rest):
        packed = numkong.hammings_pack(np.ascontiguousarray(rest), dtype="uint1")
        parts.append(np.asarray(numkong.hammings_packed(qbits, packed))[0])
    return np.concatenate(parts) if len(parts) > 1 else parts[0]
