"""The nearest chunks to a query: an exact scan of the int8 rows by usearch's SIMD kernels
(cosine; `usearch.index.search(..., exact=True)`), on the CPUs `projections.cpus` allows.
Past `EXACT_ROWS` rows (a full scan of 1M rows is ~0.25 s on two cores) the search has two
passes: the Hamming distance of the rows' sign bits to the query's (numkong's SIMD kernel
over 64 bytes a row, read at every search: ~17 ms for 1M), then the nearest by
bits — `SHORTLIST` rows, or 1 in `SHORTLIST_SHARE` when more — rescored exactly by int8
cosine. Nothing past `EXACT_ROWS` is read through a memory map (`Store.rows_at`,
`Store.bit_blocks`): a mapped file's pages count in the RSS. Recall and memory in
docs/search.md "By meaning".

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
SHORTLIST = 2_000     # rows the bits pass keeps for the exact rescoring, at least
SHORTLIST_SHARE = 100  # and at least one row in this many: the sign bits of this model's
# vectors rank the true nearest poorly (on the shared corpora's chunks, the exact top 10 kept
# by a shortlist of 0.2 % of the rows: 46 %; 1 %: 82 %; 2 %: 90 %; 5 %: 97 %: bench/meaning.py),
# and rescoring costs ~0.5-0.7 us a row read (20,000 rows at 1M: 10-14 ms), docs/search.md


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
        count = store.count
        if count == 0 or store.model != model.id:
            return []
        return _best(store, count, model.query(query), k)
    except (ValueError, OSError):  # files cut by a reset between reading `count` and mapping
        return []
    finally:
        store.close()


def _best(store: Store, count: int, vec: Any, k: int) -> list[tuple[int, str, float]]:
    import numpy as np

    q = np.clip(np.rint(vec * 127.0), -127, 127).astype(np.int8)
    want = min(count, k * 3)
    if count > EXACT_ROWS:
        keys, dists = _two_pass(store, q, want)
    else:  # every row, mapped (at most EXACT_ROWS × dim bytes in the RSS)
        from usearch.index import MetricKind, search  # type: ignore[attr-defined]

        from projections.cpus import usable

        found = search(store.matrix(), q, want, MetricKind.Cos, exact=True, threads=usable())
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


def _two_pass(store: Store, q: Any, want: int) -> tuple[list[int], list[float]]:
    """The `want` nearest rows: the shortlist nearest by sign bits (`SHORTLIST`, or one row
    in `SHORTLIST_SHARE`), rescored by int8 cosine with the exact scan's kernel."""
    import numpy as np
    from usearch.index import MetricKind, search  # type: ignore[attr-defined]

    ham = _hamming(store, np.packbits(q > 0)[None, :])
    short = min(max(SHORTLIST, len(ham) // SHORTLIST_SHARE), len(ham) - 1)
    keys = np.sort(np.argpartition(ham, short)[: short + 1])
    found = search(store.rows_at(keys), q, min(want, len(keys)), MetricKind.Cos, exact=True)
    return ([int(keys[int(i)]) for i in found.keys],
            [float(d) for d in found.distances])


BLOCK_ROWS = 1 << 17  # rows of sign bits read at a time (8 MB for 512 bits)


def _hamming(store: Store, qbits: Any) -> Any:
    """The Hamming distance of every committed row's sign bits to `qbits` (uint32, numkong's
    SIMD kernel), the bits read block by block at every search (`Store.bit_blocks`: the
    MCP server at 1M rows went from 310 to 254 MB for ~7 ms). Plain rows, not numkong's
    packed form: the packed kernel measured no faster here (10.3-12.2 against 10.5 ms for
    1M rows) and holds 132 bytes a row."""
    import numkong
    import numpy as np

    parts = [np.asarray(numkong.cdist(qbits, block, "hamming", dtype="uint1"))[0]
             for block in store.bit_blocks(BLOCK_ROWS)]
    if not parts:  # emptied by a reset since the caller counted
        raise ValueError("no rows")
    return np.concatenate(parts) if len(parts) > 1 else parts[0]
