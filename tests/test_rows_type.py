"""`rows.Row`, the named row of `documents`: its fields are the table's columns in order, a
column not given is NULL (`rows.NULL`, stored as None would be), the hot maker's positional
values (`transcript_rows.make_row`, by `rows.new_row`) land in the fields the keywords name,
and a mapping (`put_document`) stores what the same `Row` stores.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from projections import db
from projections.rows import COLUMNS, NULL, Row, put_document, put_row
from projections.transcript_rows import make_row
from readers.records import Record

STORED = ("id, kind, agent, at, project, r.thread, t.session, job, run, message, cursor,"
          " t.conversation, role, tool, subagent, subagent_name, title, archived, seq, ord,"
          " source_id, sender, extra, body")


def test_the_fields_are_the_table_columns_in_order(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "h.db")
    db.create_schema(con)
    view = [r[1] for r in con.execute("PRAGMA table_info(documents)")]
    con.close()
    assert Row._fields == COLUMNS
    assert [c for c in view if c in COLUMNS] == list(COLUMNS)


def test_a_column_not_given_is_null() -> None:
    row = Row(id="x", kind="message", agent="other", at=1)
    nulls = [c for c in COLUMNS if c not in ("id", "kind", "agent", "at", "archived", "text")]
    assert all(getattr(row, c) is NULL for c in nulls)
    assert math.isnan(NULL)
    assert (row.archived, row.text) == (0, "")


def test_make_row_puts_each_value_in_its_named_field() -> None:
    rec = Record(uid="u1", agent="claude", session="s1", role="assistant", text="hello",
                 cursor="0:5", project="/p", tool="Bash", subagent="a1", at=77,
                 tool_input="ls -l")
    ctx = ("claude", "a job", "helper", "a title", "claude:s1/a1")
    row = make_row(rec, ctx, 9, 1234, 3, "claude:/f.jsonl")
    assert type(row) is Row and len(row) == len(COLUMNS)
    want = Row(id="transcript:u1", kind="transcript", agent="claude", at=77, project="/p",
               session="s1", job="a job", cursor="0:5", conversation="claude:s1/a1",
               role="assistant", tool="Bash", subagent="a1", subagent_name="helper",
               title="a title", archived=0, seq=9, ord=9 * 65_536 + 3,
               source="claude:/f.jsonl", text="hello\nls -l")
    assert [(c, repr(v)) for c, v in zip(COLUMNS, row, strict=True)] == \
        [(c, repr(v)) for c, v in zip(COLUMNS, want, strict=True)]


def _stored(con: sqlite3.Connection) -> list[tuple[object, ...]]:
    return [tuple(r) for r in con.execute(
        f"SELECT {STORED} FROM document_rows r JOIN threads t ON t.thread = r.thread"
        " ORDER BY r.rowid")]


def test_a_mapping_and_a_row_store_the_same(tmp_path: Path) -> None:
    doc = {"id": "run:a.log", "kind": "run", "agent": "codex", "at": 5, "job": "j",
           "run": "a.log", "role": "metadata", "text": "t " * 10, "seq": 2, "ord": 0,
           "source": "codex:/a", "not a column": 1}
    files = []
    for how in ("mapping", "row"):
        con = db.connect(tmp_path / f"{how}.db")
        db.create_schema(con)
        con.execute("BEGIN")
        if how == "mapping":
            put_document(con, doc)
            put_document(con, {"id": "m", "kind": "message", "agent": "other", "at": 1})
        else:
            put_row(con, Row(**{k: v for k, v in doc.items() if k in COLUMNS}))
            put_row(con, Row(id="m", kind="message", agent="other", at=1))
        con.execute("COMMIT")
        files.append((_stored(con), con.execute("SELECT * FROM doc_sources").fetchall()))
        con.close()
    assert files[0] == files[1]
    assert files[0][1] == [(1, "codex:/a")]  # a NULL source adds no doc_sources row
