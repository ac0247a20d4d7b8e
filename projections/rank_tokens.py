"""FTS5's own view of a few texts, for the champion lists (projections.rank, rank_multi).

Promises: `frequencies` and `index_term` tokenize with documents_fts's tokenizer, by FTS5
itself (an in-memory FTS5 table per thread), so f and D are exactly what documents_fts
holds; `totals` reads FTS5's own averages record (bm25's nRow and token total).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable

TOKENIZE = "unicode61 remove_diacritics 2"  # documents_fts's tokenizer (projections.db)


def varints(blob: bytes) -> list[int]:
    """SQLite varints (FTS5's structure and docsize records)."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        v = 0
        for j in range(9):
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        out.append(v)
    return out


def totals(con: sqlite3.Connection) -> tuple[int, int]:
    """(documents, tokens) of documents_fts: FTS5's own averages record (the bm25 inputs)."""
    row = con.execute("SELECT block FROM documents_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    vals = varints(bytes(row[0]))
    return vals[0], sum(vals[1:])


def index_term(token: str) -> str | None:
    """The one term FTS5 indexes `token` as (its tokenizer's own folding), None when it is
    not exactly one term (then no list applies)."""
    if token.isascii() and token.isalnum():
        return token.lower()
    con = _tokenizer()
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM t")
        con.execute("INSERT INTO t(rowid, text) VALUES (1, ?)", (token,))
        terms = [str(r[0]) for r in con.execute("SELECT term FROM r")]
    finally:
        con.execute("ROLLBACK")
    return terms[0] if len(terms) == 1 else None


_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    con: sqlite3.Connection | None = getattr(_local, "tok", None)
    if con is None:
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        con.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{TOKENIZE}')")
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        con.execute("CREATE VIRTUAL TABLE r USING fts5vocab(t, row)")
        _local.tok = con
    return con


def frequencies(
    texts: Iterable[tuple[int, str]], terms: list[str], top: int = 0
) -> tuple[dict[tuple[str, int], int], dict[int, int], list[str]]:
    """({(term, doc): f}, {doc: D}, the `top` words in most of them) of `texts` as
    documents_fts tokenizes them."""
    con = _tokenizer()
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM t")
        con.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", texts)
        marks = ",".join("?" * len(terms))
        freq = {(str(t), int(d)): int(n) for t, d, n in con.execute(
            f"SELECT term, doc, count(*) FROM v WHERE term IN ({marks}) GROUP BY term, doc",
            terms)}
        sizes = {int(i): varints(bytes(sz))[0] for i, sz in con.execute(
            "SELECT id, sz FROM t_docsize")}
        common = [str(r[0]) for r in con.execute(
            "SELECT term FROM r ORDER BY doc DESC, term LIMIT ?", (top,))] if top else []
    finally:
        con.execute("ROLLBACK")
    return freq, sizes, common
