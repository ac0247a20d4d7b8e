"""FTS5's bm25 of one word in Python, in FTS5's own operation order, for the champion lists
(a private copy of the engine's ranking: tests/test_rank_reference.py holds the lists'
answers, scores included, equal to SQLite's own ranking, projections.ranking).

The ranking is s = bm25(documents_fts) x weight, best (most negative) first. FTS5's bm25 of
one word t in a document of D tokens with f occurrences is -idf(t) * g(f, D), g = f(k1+1) /
(f + k1(1-b+b*D/avgdl)); `tf` is g and `idf` FTS5's idf, computed as fts5_aux.c computes
them so that scores made here are bit-identical doubles. g < k1 + 1 for every document.
`weight` gives the weight `projections.ranking.WEIGHT_SQL` gives; every weight there is is a
value of `ROLE_WEIGHT` or the default 1.0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from projections.ranking import ROLE_WEIGHT

if TYPE_CHECKING:  # (only then: a TypeVar of a string would compile it on the +1's path)
    from typing import TypeVar

    import numpy as np
    from numpy.typing import NDArray

    Num = TypeVar("Num", float, NDArray[np.float64])  # one value, or an array of them

K1 = 1.2
B = 0.75


def weight(role: object, kind: object) -> float:
    """The role weight, as `WEIGHT_SQL` computes it."""
    key = role if role is not None else kind
    return ROLE_WEIGHT.get(key, 1.0) if isinstance(key, str) else 1.0


def tf(f: Num, dl: Num, avgdl: float) -> Num:
    """bm25's term-frequency part, in FTS5's operation order (fts5_aux.c); of arrays
    elementwise, the same operations in the same order (so the same doubles)."""
    return (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * dl / avgdl))


def idf(nrow: int, nhit: int) -> float:
    v = math.log((nrow - nhit + 0.5) / (nhit + 0.5))
    return v if v > 0.0 else 1e-6
