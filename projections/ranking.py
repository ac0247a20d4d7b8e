"""The ranking of full-text hits, as SQLite computes it: the reference (docs/search.md).

s = bm25(fts table) x role weight, best (most negative) first, ties by rowid descending, over
EVERY match. bm25 is FTS5's own (its default k1 = 1.2, b = 0.75); the role weight is
`WEIGHT_SQL` over the `documents` row `d` (user prompts above assistant text above tool
output: `ROLE_WEIGHT`, every other role and kind 1.0). `pages` is the plain path: one
statement, a page at a time. The accelerators of `projections.rank` answer some queries
faster; tests/test_rank_reference.py holds each of them equal to this ranking.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

ROLE_WEIGHT = {
    "user": 3.0, "question": 3.0, "answer": 2.5, "decision": 2.5, "message": 2.0,
    "approval": 2.0, "report": 2.0, "progress": 1.5, "assistant": 1.6, "metadata": 1.5,
    "thinking": 1.1, "system": 1.0, "log": 1.0, "tool_use": 0.8, "tool_result": 0.7,
}
WEIGHT_SQL = "(CASE coalesce(d.role, d.kind) {} ELSE 1.0 END)".format(
    " ".join(f"WHEN '{k}' THEN {v}" for k, v in ROLE_WEIGHT.items())
)


def statement(table: str, conds: str, extra: str = "") -> str:
    """The ranking statement: every match of `table MATCH ?` satisfying `conds` (over the
    `documents` row `d`), best first, as (rowid, s); parameters: the expression, `conds`'s,
    `extra`'s, LIMIT, OFFSET."""
    return (f"SELECT {table}.rowid AS r, bm25({table}) * {WEIGHT_SQL} AS s FROM {table}"
            f" JOIN documents d ON d.rowid = {table}.rowid"
            f" WHERE {table} MATCH ? AND {conds}{extra} ORDER BY s, r DESC LIMIT ? OFFSET ?")


def pages(con: sqlite3.Connection, table: str, expr: str, conds: str, params: list[Any],
          page: int) -> Iterator[list[int]]:
    """The rowids of every match of `expr` satisfying `conds`, best first, `page` at a time
    (a shorter page is the last)."""
    sql = statement(table, conds)
    offset = 0
    while True:
        rowids = [int(r[0]) for r in con.execute(sql, [expr, *params, page, offset])]
        yield rowids
        if len(rowids) < page:
            return
        offset += page
