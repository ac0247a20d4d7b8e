"""A row's conversation and session are kept once per pair, in `threads` (schema 12): the
rows hold the pair's number, the `documents` view shows both strings as before, lookups by
either go through indexes, and the one in-place change of a row's session (a run's log
chunks taking the session of the run's start) moves them to the right pair. Real LMDB log,
real SQLite FTS5."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from eventlog import EventLog
from eventlog.events import RunStarted
from projections import db, query
from projections.catchup import catch_up
from projections.rebuild import rebuild
from tests.test_projections_support import append, chunks_of, mixed_events, seen

RUN_LOG = "SELECT session FROM documents WHERE run = 'run-8.log' AND role = 'log'"
RUN_SRC = "runs:r3:run-8.log"


def _pairs(path: Path) -> tuple[list[tuple[object, object]], list[tuple[object, object]]]:
    """(every row's (conversation, session) through the view, the pairs `threads` holds)."""
    con = db.connect(path, readonly=True)
    try:
        rows = con.execute("SELECT conversation, session FROM documents ORDER BY rowid").fetchall()
        kept = con.execute("SELECT conversation, session FROM threads ORDER BY thread").fetchall()
        return [tuple(r) for r in rows], [tuple(r) for r in kept]
    finally:
        con.close()


def test_each_pair_is_kept_once_and_the_rows_hold_only_its_number(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    for path in (tmp_path / "caught-up.db", tmp_path / "rebuilt.db"):
        (catch_up if path.stem == "caught-up" else rebuild)(path, log)
        rows, kept = _pairs(path)
        assert kept[0] == (None, None)  # thread 0: a row written without either
        assert len(kept) == len(set(kept))  # no pair twice
        used = set(rows)
        assert len(used) >= 4 and used <= set(kept)  # transcripts, messages, a run
        assert ("claude:s1", "s1") in used and ("run:run-7.log", "S2") in used
        con = sqlite3.connect(path)
        columns = {r[1] for r in con.execute("PRAGMA table_info(document_rows)")}
        con.close()
        assert "thread" in columns and not columns & {"conversation", "session"}
    assert _pairs(tmp_path / "caught-up.db")[0] == _pairs(tmp_path / "rebuilt.db")[0]


def test_lookups_by_conversation_or_session_read_indexes(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    path = tmp_path / "h.db"
    catch_up(path, log)
    con = db.connect(path, readonly=True)
    try:
        for sql in ("SELECT id FROM documents WHERE conversation = ? ORDER BY at, ord",
                    "SELECT id FROM documents WHERE session = ?"):
            plan = " | ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql, ("x",)))
            assert "SCAN" not in plan, plan
            assert "threads_" in plan and "documents_conv" in plan, plan
    finally:
        con.close()
    page = query.get_conversation(path, "claude:s1")
    assert [i["id"] for i in page["items"]][:2] == ["transcript:claude:u1", "transcript:claude:u2"]
    assert all(i["session"] == "s1" for i in page["items"])


def test_a_runs_log_chunks_take_the_session_of_its_start(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")  # the log's chunks first, the run's start after
    append(log, [*mixed_events(), seen(RUN_SRC, "other", "runs.log"),
                 *chunks_of(RUN_SRC, b"starting plover\nstep two\n", [15])])
    path = tmp_path / "h.db"
    catch_up(path, log)
    con = db.connect(path, readonly=True)
    assert [r[0] for r in con.execute(RUN_LOG)] == [None, None]
    con.close()
    append(log, [RunStarted(job="weekly", run="run-8", started_at=7, session="s9")],
           prefix="start")
    catch_up(path, log)
    rebuild(tmp_path / "rebuilt.db", log)
    for file in (path, tmp_path / "rebuilt.db"):
        con = db.connect(file, readonly=True)
        try:
            assert [r[0] for r in con.execute(RUN_LOG)] == ["s9", "s9"]
            assert con.execute("SELECT count(*) FROM documents WHERE conversation ="
                               " 'run:run-8.log' AND session IS NULL").fetchone()[0] == 0
        finally:
            con.close()
        hits = query.search(file, "plover", {"session": "s9"})["hits"]
        assert hits and all(h["session"] == "s9" for h in hits)
    assert _pairs(path)[0] == _pairs(tmp_path / "rebuilt.db")[0]
