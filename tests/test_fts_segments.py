"""The full-text index's shape after catch-up and rebuild (the +1-session latency's cause).

In SQLite 3.40, FTS5 flushes its pending terms to a new segment at every statement
savepoint, and a statement that fires a trigger inside a transaction opens one: indexing
row by row through the triggers wrote one segment per document, and the merges that
followed rewrote the whole index right after a rebuild. These tests read FTS5's structure
record (levels and segments) to hold the two fixes: a catch-up batch adds one segment,
and a rebuild leaves its merged index above level 0. They also check that deferring the
batch's rows (inserted, updated and deleted inside the batch) indexes exactly what
`documents` holds at the commit.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from eventlog.events import MessageSent
from eventlog.store import EventLog
from projections import db, fts_defer, fts_levels
from projections.catchup import catch_up
from projections.rebuild import rebuild
from projections.rows import put_document

pytestmark = pytest.mark.skipif(not db.fts5_available(), reason="this SQLite has no FTS5")


def structure(con: sqlite3.Connection, table: str = "documents_fts") -> list[list[int]]:
    """Per level, the page counts of its segments (FTS5's structure record, id 10)."""
    levels = fts_levels.read(con, table)
    assert levels is not None, "an FTS5 structure record in a layout fts_levels does not know"
    return [[last - first + 1 for _, first, last in segs] for _, segs in levels]


def _messages(log: EventLog, start: int, n: int) -> None:
    log.append([(f"m:{start + i}".encode(), MessageSent(
        id=f"m{start + i}", sender="alice", to=["bob"], kind="message",
        body=f"word{start + i} shared text 漢字{i}", at=1_700_000_000_000 + start + i))
        for i in range(n)])


def test_a_catch_up_batch_adds_one_segment(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    _messages(log, 0, 5)
    path = tmp_path / "history.db"
    catch_up(path, log)
    con = db.connect(path, readonly=True)
    before = sum(len(lv) for lv in structure(con))
    con.close()
    _messages(log, 100, 40)  # one batch of 40 documents
    catch_up(path, log)
    con = db.connect(path, readonly=True)
    after = sum(len(lv) for lv in structure(con))
    hits = con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH 'shared'"
                       ).fetchone()[0]
    con.close()
    assert after == before + 1  # row by row through the triggers this was before + 40
    assert hits == 45


def test_a_rebuild_leaves_its_index_above_level_zero(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    _messages(log, 0, 200)
    path = tmp_path / "history.db"
    rebuild(path, log)
    con = db.connect(path, readonly=True)
    levels = structure(con)
    cjk = structure(con, "documents_cjk")
    con.close()
    assert sum(len(lv) for lv in levels) == 1 and levels[0] == []
    assert sum(len(lv) for lv in cjk) == 1 and cjk[0] == []
    # lifted out of the catch-ups' merges (issue 32): alone on the top level
    assert len(levels) == fts_levels.LEVEL + 1 and len(levels[-1]) == 1
    assert len(cjk) == fts_levels.LEVEL + 1 and len(cjk[-1]) == 1


def test_catch_ups_merge_below_the_rebuilt_segment(tmp_path: Path) -> None:
    """The catch-ups' small segments are merged among themselves (FTS5's automerge, four a
    level, a step every 64 leaf pages written) and never take the rebuild's segment in: its
    pages stay where they are (issue 32: on level 1 it was rewritten by every step)."""
    log = EventLog(tmp_path / "log")
    _messages(log, 0, 3000)
    path = tmp_path / "history.db"
    rebuild(path, log)
    con = db.connect(path, readonly=True)
    (big,) = structure(con)[-1]
    con.close()
    for k in range(80):  # one batch (one level-0 segment, one leaf page) each
        _messages(log, 10_000 + 40 * k, 40)
        catch_up(path, log)
    con = db.connect(path, readonly=True)
    levels = structure(con)
    row = con.execute("SELECT block FROM documents_fts_data WHERE id = 10").fetchone()
    parsed = fts_levels._parse(bytes(row[0]))
    hits = con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH 'shared'"
                       ).fetchone()[0]
    con.close()
    con = db.connect(path)  # FTS5's own check of the index (a "write" statement)
    con.execute("INSERT INTO documents_fts(documents_fts) VALUES ('integrity-check')")
    con.close()
    assert parsed is not None and parsed[1] > 64  # the write counter: merge steps were due
    assert levels[-1] == [big]  # the same segment, untouched, alone on its level
    assert max(len(lv) for lv in levels[1:-1]) >= 1  # the small ones merged below it
    assert hits == 3000 + 80 * 40


def test_lift_leaves_other_shapes_alone(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "h.db")
    db.create_schema(con, engine="fts5")
    assert not fts_levels.lift(con, "documents_fts")  # no structure record yet
    for i in range(3):  # three segments on level 0: not one merged segment
        con.execute("BEGIN")
        put_document(con, {"id": f"d{i}", "kind": "message", "agent": "claude", "at": 0,
                           "text": f"word{i} shared"})
        con.execute("COMMIT")
    before = structure(con)
    assert not fts_levels.lift(con, "documents_fts")
    assert structure(con) == before
    con.execute("INSERT INTO documents_fts(documents_fts) VALUES ('optimize')")
    assert fts_levels.lift(con, "documents_fts")
    assert not fts_levels.lift(con, "documents_fts")  # already there
    assert fts_levels._parse(b"\0\0\0\1\xff\0\0\1") is None  # another layout
    con.close()


def test_a_rebuilt_file_has_no_free_pages(tmp_path: Path) -> None:
    """The closing merge frees the pages of the merged segments (about the size of the
    full-text index: 18 % of a small real corpus's file); the rebuild hands them back."""
    log = EventLog(tmp_path / "log")
    _messages(log, 0, 3000)
    path = tmp_path / "history.db"
    rebuild(path, log)
    con = db.connect(path, readonly=True)
    free = con.execute("PRAGMA freelist_count").fetchone()[0]
    ok = con.execute("PRAGMA integrity_check").fetchone()[0]
    con.close()
    assert (free, ok) == (0, "ok")


def test_rows_changed_inside_a_deferred_batch_are_indexed_as_committed(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "h.db")
    db.create_schema(con, engine="fts5")

    def put(i: int, text: str) -> None:
        put_document(con, {"id": f"d{i}", "kind": "message", "agent": "claude", "at": 0,
                           "text": text})

    con.execute("BEGIN")
    put(1, "alpha beta")
    put(2, "gamma 漢字テスト")
    con.execute("COMMIT")
    con.execute("BEGIN")
    fts_defer.defer_fts(con)
    put(3, "delta")
    put(4, "epsilon 中文字符")
    put(3, "zeta 日本語")  # a deferred row changed again
    put(1, "eta")  # an older, live row
    con.execute("DELETE FROM document_rows WHERE id = 'd4'")
    put(5, "theta")
    fts_defer.index_deferred(con)
    con.execute("COMMIT")

    def match(table: str, q: str) -> list[str]:  # ids (a deleted row's rowid is reused)
        return [r[0] for r in con.execute(
            f"SELECT id FROM documents WHERE rowid IN (SELECT rowid FROM {table}"
            f" WHERE {table} MATCH ?) ORDER BY id", (q,))]

    assert {q: match("documents_fts", q) for q in
            ("alpha", "eta", "zeta", "delta", "epsilon", "theta", "gamma")} == {
        "alpha": [], "eta": ["d1"], "zeta": ["d3"], "delta": [], "epsilon": [],
        "theta": ["d5"], "gamma": ["d2"]}
    assert match("documents_cjk", '"日本"') == ["d3"]
    assert match("documents_cjk", '"中文"') == []
    # the index holds exactly the terms of the rows as committed (what the drift check reads)
    terms = dict(con.execute("SELECT term, doc FROM documents_fts_terms").fetchall())
    assert terms == {"eta": 1, "gamma": 1, "漢字テスト": 1, "zeta": 1, "日本語": 1, "theta": 1}
    con.execute("INSERT INTO documents_fts(documents_fts) VALUES ('integrity-check')")
    con.close()
