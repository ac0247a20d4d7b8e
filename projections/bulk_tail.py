"""The after-load tail of a rebuild on both cores: the query indexes sort while the
champion lists are made (`db.finish_bulk` with `lists`, full-text indexes built inline).

After the load's commit the rows are final, and once the indexer's closing merge is done
(`fts_bulk.BulkFeed.end`) so is the full-text index, in its scratch file. The champion
lists (`projections.rank.build`) read no more than those two, so they are made beside the
sort instead of after it:
- the sort's thread (the new file's connection) first copies each row's role and kind into
  a side file `<file>.weights` (`document_rows(rowid, role, kind)` and a `documents` view
  of its rowids: what the ranking reads of the rows), then sorts the query indexes, then
  copies the full-text index in (`BulkFeed.copy`) once the merge is done;
- this thread ends the indexer (its last rows, 'optimize', the wanted words), then makes
  the lists on an in-memory connection with the side file and the scratch index attached
  (`rank.build_apart`; `projections.rank.scan`'s worker threads attach the same two files);
  the rank tables are then copied into the new file (`rank.copy_lists`). Same index, same
  weights: the same lists, bit for bit, as `rank.build` on the finished file
  (tests/test_bulk_tail.py).

No file is written while another connection reads it: the side file is complete before
its first reader; the scratch file is only read once merged; the new file is written by
one connection at a time (the sort, the index copy, then the lists' copy); the lists are
written in memory. Both side files are removed on success and failure alike (after a
crash, with the build's other leftovers: `projections.rebuild`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

from projections import rank
from projections.fts_bulk import BulkFeed, beside

_WEIGHTS = """
CREATE TABLE weights.document_rows(rowid INTEGER PRIMARY KEY, role TEXT, kind TEXT);
CREATE VIEW weights.documents AS SELECT rowid FROM document_rows;
INSERT INTO weights.document_rows SELECT rowid, role, kind FROM main.document_rows;
"""


def finish(con: sqlite3.Connection, feed: BulkFeed, sort_sql: str, workers: int) -> None:
    """Sort `sort_sql`'s indexes on `con` (a bulk-loaded file, committed), copy the inline
    indexer's full-text index in and make the champion lists (ranked on `workers`
    threads) meanwhile. `feed.finish` still has to be called (it removes the scratch)."""
    side = feed.path.parent / (feed.path.name + ".weights")
    _remove(side)
    weighed, merged = threading.Event(), threading.Event()
    failed: list[bool] = []
    lists: list[sqlite3.Connection] = []

    def sort() -> None:
        try:
            _weights(con, side)
        except BaseException:
            failed.append(True)
            raise
        finally:
            weighed.set()
        con.executescript(sort_sql)
        merged.wait()
        if not failed:
            feed.copy()

    def rank_lists() -> None:
        try:
            feed.end(rank.hot_df())
        except BaseException:
            failed.append(True)
            raise
        finally:
            merged.set()
        weighed.wait()
        if not failed:
            lists.append(rank.build_apart([("weights", side), ("fts", feed.scratch)],
                                          workers, feed.terms))

    try:
        beside(sort, rank_lists, "query-indexes")
        rank.copy_lists(lists[0], con, feed.path)
    finally:
        for lcon in lists:
            lcon.close()
        _remove(side)


def _weights(con: sqlite3.Connection, side: Path) -> None:
    con.execute("ATTACH DATABASE ? AS weights", (str(side),))
    try:
        con.execute("PRAGMA weights.journal_mode = OFF")  # a private scratch file
        con.execute("PRAGMA weights.synchronous = OFF")
        con.execute("BEGIN")
        for statement in _WEIGHTS.strip().split(";\n"):
            con.execute(statement)
        con.execute("COMMIT")
    finally:
        if con.in_transaction:
            con.execute("ROLLBACK")
        con.execute("DETACH DATABASE weights")


def _remove(path: Path) -> None:
    for suffix in ("", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)
