"""`rows.put_rows` in a rebuild's load inserts an event's rows by multi-row statements
(`rows._MULTI`) and the rest one by one: the same rows, rowids and full-text feed as one
`put_row` each, whatever the number of rows and wherever ids repeat (within the call, or
rows written before it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from projections import db, fts_bulk
from projections.rows import NULL, Row, put_row, put_rows

COLUMNS = ("id", "kind", "agent", "at", "project", "session", "job", "run", "message",
           "cursor", "conversation", "role", "tool", "subagent", "subagent_name", "title",
           "archived", "seq", "ord", "source", "sender", "extra", "text")


def _row(key: int, n: int, source: str = "claude:/a.jsonl") -> Row:
    values = {"id": f"transcript:x-{key}", "kind": "transcript", "agent": "claude",
              "at": 1000 + n, "session": "s", "cursor": f"0:{n}", "conversation": "claude:s",
              "role": "user", "archived": 0, "seq": n, "ord": n << 16, "source": source,
              "text": f"text {key} of write {n} " + "word " * (n % 90)}
    return Row(*(values.get(c, NULL) for c in COLUMNS))


def load_rows(path: Path, calls: list[tuple[list[Row], list[object] | None]],
              how: str) -> tuple[list[tuple[object, ...]], dict[int, str]]:
    """Each call's rows into a bulk-loaded file: `put_row` each ("one"), `put_rows` ("every")
    or `put_rows` with the call's run tokens ("shared"); every stored row and the texts
    waiting in the full-text feed."""
    con = db.connect(path)
    db.create_schema(con, bulk=True)
    con.execute("BEGIN")
    for rows, tokens in calls:
        if how == "one":
            for row in rows:
                put_row(con, row, policy="same_source")
        else:
            put_rows(con, rows, [None] * len(rows), policy="same_source",
                     runs=tokens if how == "shared" else None)
    stored = [tuple(r) for r in con.execute("SELECT rowid, * FROM document_rows ORDER BY rowid")]
    assert isinstance(con, db.Connection) and con.bulk_fts is not None
    pending = dict(con.bulk_fts.pending)
    con.execute("COMMIT")
    db.abandon_bulk(con)
    con.close()
    return stored, pending


@pytest.mark.parametrize("size", [2, 7, 8, 9, 31, 32, 33, 41, 77, 100])
def test_put_rows_equals_one_put_row_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          size: int) -> None:
    monkeypatch.setattr(fts_bulk, "FLUSH_CHARS", 1 << 30)  # every text stays in `pending`

    def batches() -> list[list[Row]]:
        write = iter(range(1, 10_000))
        return [
            [_row(k, next(write)) for k in range(size)],  # all new
            [_row(k, next(write)) for k in range(size, 2 * size)],
            # ids written before, ids repeated within the call, one from another source (kept)
            [_row(k % (size + 3), next(write)) for k in range(3 * size // 2)]
            + [_row(0, next(write), source="codex:/b.jsonl"), _row(5 * size, next(write))],
        ]

    got = load_rows(tmp_path / "many.db", [(b, None) for b in batches()], "every")
    want = load_rows(tmp_path / "one.db", [(b, None) for b in batches()], "one")
    assert got == want
    assert len(got[0]) == 2 * size + 1


def test_the_multi_row_statements_fit_every_sqlite() -> None:
    from projections.rows import _MULTI

    assert max(sql.count("?") for sql in _MULTI.values()) <= 999
    con = sqlite3.connect(":memory:")
    assert con.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) >= 999
