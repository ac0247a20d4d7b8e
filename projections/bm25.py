"""FTS5's bm25 of one word, in FTS5's own operation order, and the role weights the ranking
multiplies it by (docs/search.md).

The ranking is s = bm25(documents_fts) x weight, best (most negative) first. FTS5's bm25 of
one word t in a document of D tokens with f occurrences is -idf(t) * g(f, D), g = f(k1+1) /
(f + k1(1-b+b*D/avgdl)); `tf` is g and `idf` FTS5's idf, computed as fts5_aux.c computes
them so that scores made here are bit-identical doubles. g < k1 + 1 for every document.
`WEIGHT_SQL` (over a `documents`/`document_rows` row named `d`) and `weight` give the same
weight; every weight there is is a value of `ROLE_WEIGHT` or the default 1.0.
"""

from __future__ import annotations

import math

K1 = 1.2
B = 0.75

ROLE_WEIGHT = {
    "user": 3.0, "question": 3.0, "answer": 2.5, "decision": 2.5, "message": 2.0,
    "approval": 2.0, "report": 2.0, "progress": 1.5, "assistant": 1.6, "metadata": 1.5,
    "thinking": 1.1, "system": 1.0, "log": 1.0, "tool_use": 0.8, "tool_result": 0.7,
}
WEIGHT_SQL = "(CASE coalesce(d.role, d.kind) {} ELSE 1.0 END)".format(
    " ".join(f"WHEN '{k}' THEN {v}" for k, v in ROLE_WEIGHT.items())
)


def weight(role: object, kind: object) -> float:
    """The role weight, as `WEIGHT_SQL` computes it."""
    key = role if role is not None else kind
    return ROLE_WEIGHT.get(key, 1.0) if isinstance(key, str) else 1.0


def tf(f: float, dl: float, avgdl: float) -> float:
    """bm25's term-frequency part, in FTS5's operation order (fts5_aux.c)."""
    return (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * dl / avgdl))


def idf(nrow: int, nhit: int) -> float:
    v = math.log((nrow - nhit + 0.5) / (nhit + 0.5))
    return v if v > 0.0 else 1e-6
