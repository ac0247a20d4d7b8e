"""Transcript rows bind their NULL columns as `rows.NULL` (a NaN: sqlite3 binds a float
without its adapter registry, and SQLite stores a bound NaN as NULL): the stored row is
the one a None would have written, in every path (a rebuild's batched load, one row at a
time with triggers, an update of an existing id), and reads back as None.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from projections import db, fts_bulk
from projections.rows import NULL, Row, put_document, put_row, put_rows

COLUMNS = ("id", "kind", "agent", "at", "project", "session", "job", "run", "message",
           "cursor", "conversation", "role", "tool", "subagent", "subagent_name", "title",
           "archived", "seq", "ord", "source", "sender", "extra", "text")
STORED = ("id, kind, agent, at, project, r.thread, t.session, job, run, message, cursor,"
          " t.conversation, role, tool, subagent, subagent_name, title, archived, seq, ord,"
          " source_id, sender, extra, body")


def _row(n: int, null: object) -> Row:
    """A transcript-like row: every optional column NULL (as `null`)."""
    values = {"id": f"transcript:x-{n}", "kind": "transcript", "agent": "claude",
              "at": 1000 + n, "cursor": f"0:{n}", "conversation": "claude:s",
              "role": "user", "archived": 0, "seq": n, "ord": n << 16,
              "source": "claude:/a.jsonl", "text": f"text number {n} " + "word " * (n * 40)}
    return Row(*(values.get(c, null) for c in COLUMNS))


def _stored(con: sqlite3.Connection) -> list[tuple[object, ...]]:
    return [tuple(r) for r in con.execute(
        f"SELECT {STORED}, typeof(project), typeof(run), typeof(extra), typeof(t.session)"
        " FROM document_rows r JOIN threads t ON t.thread = r.thread ORDER BY r.rowid")]


def _file(path: Path, bulk: bool) -> sqlite3.Connection:
    con = db.connect(path)
    db.create_schema(con, bulk=bulk)
    con.execute("BEGIN")
    return con


def test_sqlite_stores_a_bound_nan_as_null() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t(a TEXT, b INTEGER, c)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(NULL, NULL, NULL)])
    assert con.execute("SELECT a, b, c, typeof(a), typeof(b), typeof(c) FROM t").fetchall() \
        == [(None, None, None, "null", "null", "null")]


@pytest.mark.parametrize("bulk", [False, True])
def test_rows_written_with_null_equal_rows_written_with_none(tmp_path: Path,
                                                             bulk: bool) -> None:
    files = []
    for name, null in (("none", None), ("nan", NULL)):
        con = _file(tmp_path / f"{name}-{bulk}.db", bulk)
        put_rows(con, [_row(1, null), _row(2, null), _row(3, null)], [None] * 3,
                 policy="same_source")
        put_row(con, _row(4, null), policy="same_source")
        put_row(con, _row(2, null), policy="same_source")  # an update of an existing id
        con.execute("COMMIT")
        files.append(_stored(con))
        assert con.execute("SELECT count(*) FROM documents WHERE project IS NULL AND"
                           " run IS NULL AND title IS NULL").fetchone()[0] == 4
        if bulk:
            db.abandon_bulk(con)
        con.close()
    assert files[0] == files[1]
    assert {r[-3:] for r in files[0]} == {("null", "null", "null")}


def test_a_row_read_back_through_the_view_has_none(tmp_path: Path) -> None:
    con = _file(tmp_path / "view.db", False)
    put_row(con, _row(7, NULL), policy="same_source")
    put_document(con, {"id": "message:m", "kind": "message", "agent": "other", "at": 1,
                       "text": "hello"})
    con.execute("COMMIT")
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT * FROM documents ORDER BY rowid").fetchall()
    assert rows[0]["project"] is None and rows[0]["title"] is None
    assert rows[0]["text"] == _row(7, NULL)[-1]
    assert rows[1]["project"] is None
    assert fts_bulk.has_cjk(str(rows[0]["text"])) == 0
