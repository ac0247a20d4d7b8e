"""The full-text indexes of a bulk load (a rebuild): built from the text in hand, into a
scratch file, during the load.

By default (`THREAD` False) the building thread itself indexes each chunk of rows as it is
sent, on a second connection. A thread of its own (`THREAD` True) was measured to cost
more than it gives on two cores: the GIL hand-offs between two threads that both call
SQLite and zstd many times a second added ~6 s of CPU to a 28 s sequential rebuild of a
317 MB home (wall unchanged), 0.92x wall / 0.88x CPU for a cold capture, and reindex of
100,000 messages 7.3 s -> 6.2 s best without it (docs/performance.md, session 19). The
description below of "the thread" holds for both: inline, each operation simply runs at
once, in order.

A rebuild loads `document_rows` without triggers. `projections.rows.put_row` hands each
row's text to the connection's `BulkFeed` (`con.bulk_fts`, set by
`db.create_schema(bulk=True)`). The feed sends the texts, a few thousand rows at a time,
to a thread that indexes them into the same full-text tables in a scratch file beside
the new one (`<file>.fts`; SQLite releases the GIL while FTS5 tokenizes and writes, so
this runs beside the load on the other core). After the load's commit, `db.finish_bulk`
calls `end` (the last rows; the thread then merges each index with 'optimize' while the
building thread sorts the query indexes) and `finish`, which waits for the thread and
copies the scratch file's FTS5 shadow tables
(`_data`, `_idx`, `_docsize`, `_config`) into the new file in one transaction, through a
connection of its own: FTS5 keeps an index only in those tables, and re-reads them in
every other connection once that transaction commits (`PRAGMA data_version`).

Promises:
- each index ends holding exactly what the triggers would have indexed for the rows as
  they stand: a row written again during the load is indexed with its last text (still
  waiting: replaced in place; already sent: removed with FTS5's 'delete' and the text it
  was indexed with, then added again) — operations reach the thread in order;
- memory is bounded: at most `FLUSH_CHARS` characters wait in Python, at most `QUEUE`
  chunks are in flight (a send blocks), and FTS5's term hash is `hashsize` bytes;
- few segments: single-row INSERTs open no statement savepoint (FTS5 in SQLite 3.40
  flushes its term hash to a new segment at each one), automatic merges are off while
  loading ('automerge' 0, set back after), and an index with two rows or more ends the
  load with two segments or more, so the thread's closing 'optimize' merges them one
  level up (a lone segment would stay on level 0 and be rewritten whole by the next
  catch-ups: tests/test_fts_segments.py);
- a failure in the thread is raised in the building thread (at the next send or at
  `finish`); the scratch file is removed by `finish`/`close` (and, after a crash, with
  the build's other leftovers by `projections.rebuild`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import sqlite3
import threading
from pathlib import Path
from typing import Any

from projections import cjk

FLUSH_CHARS = 1 << 20  # characters of text gathered before a chunk goes to the thread
QUEUE = 4  # chunks in flight
THREAD = False  # index on a thread of its own (the module doc: measured slower on 2 cores)
SHADOWS = ("data", "idx", "docsize", "config")  # a contentless FTS5 table's storage
TABLES = ("documents_fts", "documents_cjk")
_DONE = ("done",)


def has_cjk(text: str) -> int:
    return 1 if text and not text.isascii() and cjk.has_cjk(text) else 0


def cjk_grams(text: str) -> str:
    return cjk.grams_text(text) if text else ""


class BulkFeed:
    """Rows waiting for the full-text indexes of one bulk-loading connection."""

    def __init__(self, path: Path, ddl: str, pragmas: list[str], hashsize: int,
                 default_hashsize: int) -> None:
        self.path = path  # the new history.db
        self.scratch = path.parent / (path.name + ".fts")
        self.pending: dict[int, str] = {}  # rowid -> text, not yet sent
        self.chars = 0
        self.sent = False
        self.ended = False
        self.error: BaseException | None = None
        self.queue: queue.Queue[tuple[Any, ...]] = queue.Queue(QUEUE)
        with contextlib.suppress(FileNotFoundError):
            self.scratch.unlink()
        self.args = (ddl, pragmas, hashsize, default_hashsize)
        self.con: sqlite3.Connection | None = None  # inline: the scratch file's connection
        self.thread = threading.Thread(target=self._run, name="fts-bulk", daemon=True)
        if THREAD:
            self.thread.start()
        else:
            self.con = self._open()

    # -- the building thread ------------------------------------------------------------
    def put(self, rowid: int, text: str, old: str | None = None) -> None:
        """Row `rowid` now holds `text`; `old`: the text it held before (an update)."""
        if old is not None and rowid not in self.pending:
            if old == text:
                return
            self._send()  # in order: what waits goes first, then the removal
            self._put(("delete", rowid, old))
        self.pending[rowid] = text
        self.chars += len(text)
        if self.chars >= FLUSH_CHARS:
            self._send()

    def _send(self) -> None:
        if self.pending:
            self._put(("add", list(self.pending.items())))
            self.pending = {}
            self.chars = 0

    def _put(self, op: tuple[Any, ...]) -> None:
        self.sent = True
        if self.con is not None:  # inline
            try:
                done = self._apply(self.con, op)
            except Exception as exc:
                self.error = exc
                self._raise()
            if done:
                self.con.close()
                self.con = None
            return
        while True:
            if self.error is not None or not self.thread.is_alive():
                self._raise()
            try:
                self.queue.put(op, timeout=0.5)
                return
            except queue.Full:
                continue

    def _raise(self) -> None:
        raise RuntimeError("the full-text build of the rebuild failed") from self.error

    def end(self) -> None:
        """Send what still waits (in two segments) and the end of the load: the thread
        then merges each index ('optimize') while this thread goes on (`finish` joins)."""
        rows = list(self.pending.items())
        self.pending = {}
        half = len(rows) // 2
        for part in (rows[:half], rows[half:]):
            if part:
                self._put(("add", part))
            self._put(("segment",))
        self._put(_DONE)
        self.ended = True

    def finish(self) -> None:
        """`end` (if not yet), wait for the thread, then copy both indexes into the new
        file. Call outside a transaction on the new file."""
        try:
            if not self.ended:
                self.end()
            if self.thread.is_alive():
                self.thread.join()
            if self.error is not None:
                self._raise()
            self._copy()
        finally:
            self.close()

    def close(self) -> None:
        """Stop the thread (if running) and remove the scratch file."""
        if self.thread.is_alive():
            with contextlib.suppress(queue.Full):
                self.queue.put(("stop",), timeout=5)
            self.thread.join(30)
        if self.con is not None:  # inline, given up: nothing of it is kept
            with contextlib.suppress(sqlite3.Error):
                self.con.execute("ROLLBACK")
            self.con.close()
            self.con = None
        for suffix in ("", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.scratch) + suffix)

    def _copy(self) -> None:
        con = sqlite3.connect(self.path, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode = OFF")  # the new file is private until its swap
            con.execute("PRAGMA synchronous = OFF")
            con.execute("ATTACH DATABASE ? AS bulk", (str(self.scratch),))
            con.execute("BEGIN")
            for table in TABLES:
                for shadow in SHADOWS:
                    name = f"{table}_{shadow}"
                    con.execute(f"DELETE FROM main.{name}")
                    con.execute(f"INSERT INTO main.{name} SELECT * FROM bulk.{name}")
            con.execute("COMMIT")
            con.execute("DETACH DATABASE bulk")
        finally:
            con.close()

    # -- the full-text thread -----------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        ddl, pragmas, hashsize, _ = self.args
        con = sqlite3.connect(self.scratch, isolation_level=None, check_same_thread=False)
        try:
            for pragma in pragmas:
                con.execute(pragma)
            con.executescript(ddl)
            con.execute("BEGIN")
            for table in TABLES:
                con.execute(f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', ?)",
                            (hashsize,))
                con.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 0)")
        except BaseException:
            con.close()
            raise
        return con

    def _apply(self, con: sqlite3.Connection, op: tuple[Any, ...]) -> bool:
        """Carry out one operation; True once the index is complete (or given up)."""
        if op[0] == "add":
            rows: list[tuple[int, str]] = op[1]
            con.executemany("INSERT INTO documents_fts(rowid, text) VALUES (?, ?)", rows)
            grams = [(rowid, cjk_grams(text)) for rowid, text in rows if has_cjk(text)]
            if grams:
                con.executemany("INSERT INTO documents_cjk(rowid, grams) VALUES (?, ?)",
                                grams)
        elif op[0] == "delete":
            _, rowid, old = op
            con.execute("INSERT INTO documents_fts(documents_fts, rowid, text)"
                        " VALUES ('delete', ?, ?)", (rowid, old))
            if has_cjk(old):
                con.execute("INSERT INTO documents_cjk(documents_cjk, rowid, grams)"
                            " VALUES ('delete', ?, ?)", (rowid, cjk_grams(old)))
        elif op[0] == "segment":  # a savepoint: FTS5 writes its term hash out
            con.execute("SAVEPOINT fts_bulk")
            con.execute("RELEASE fts_bulk")
        elif op[0] == "done":
            for table in TABLES:  # merged one level up (the segments above)
                con.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            for table in TABLES:  # what the new file keeps: the defaults
                con.execute(f"INSERT INTO {table}({table}, rank)"
                            " VALUES ('hashsize', ?)", (self.args[3],))
                con.execute(f"DELETE FROM {table}_config WHERE k = 'automerge'")
            con.execute("COMMIT")
            return True
        else:  # "stop": the build gave up
            con.execute("ROLLBACK")
            return True
        return False

    def _run(self) -> None:
        try:
            con = self._open()
        except BaseException as exc:  # handed to the building thread
            self.error = exc
            return
        try:
            while not self._apply(con, self.queue.get()):
                pass
        except BaseException as exc:  # handed to the building thread
            self.error = exc
            while True:  # unblock a sender waiting on a full queue
                try:
                    self.queue.get_nowait()
                except queue.Empty:
                    break
        finally:
            con.close()
