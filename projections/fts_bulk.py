"""The full-text indexes of a bulk load (a rebuild): built from the text in hand, into a
scratch file, during the load.

Two ways to run the scratch index, one behaviour (tests/test_fts_bulk.py runs each):
- "process" (a sequential rebuild of a log of `PROCESS_BYTES` or more, on two CPUs or
  more: `rebuild.fts_mode`): a child process (a fresh interpreter, like the parallel
  rebuild's parse process) indexes the chunks it is sent over a pipe, on the core the
  sequential load leaves idle; no GIL is shared, so the two sides never wait for each
  other's hand-offs. Measured on 100,000 messages: docs/history/performance-journal.md;
- "inline" (the parallel and follow builds, whose parse process already has the other
  core, and small logs): the building thread itself indexes each chunk of rows as it is
  sent, on a second connection.
(A third way, a thread of its own, was measured to cost more than it gives on two cores: the
GIL hand-offs between two threads that both call SQLite and zstd many times a second added
~6 s of CPU to a 28 s sequential rebuild of a 317 MB home:
docs/history/performance-journal.md, session 19. It is gone.) The description below of "the
indexer" holds for both: inline, each operation simply runs at once, in order.

A rebuild loads `document_rows` without triggers. `projections.rows.put_row` hands each
row's text to the connection's `BulkFeed` (`con.bulk_fts`, set by
`db.create_schema(bulk=True)`). The feed sends the texts, about `FLUSH_CHARS` characters at
a time, to the indexer, which indexes them into the same full-text tables in a scratch file
beside the new one (`<file>.fts`). After the load's commit, `db.finish_bulk` calls `end`
(the last rows; the indexer then merges each index with 'optimize' while the building
thread sorts the query indexes; inline, the words the champion lists will want are then
read from the merged scratch index, `terms`) and `finish`, which waits for the indexer and
copies the scratch file's FTS5 shadow tables (`_data`, `_idx`, `_docsize`, `_config`) into
the new file in one transaction, through a connection of its own (unless `copy` did that
already, on the sort's thread, while the champion lists read the scratch index:
projections/bulk_tail.py), then removes the scratch file: FTS5 keeps an index only in
those tables, and re-reads them in every other connection once that transaction commits
(`PRAGMA data_version`).

Promises:
- each index ends holding exactly what the triggers would have indexed for the rows as
  they stand: a row written again during the load is indexed with its last text (still
  waiting: replaced in place; already sent: removed with FTS5's 'delete' and the text it
  was indexed with, then added again) — operations reach the indexer in order;
- memory is bounded: at most `FLUSH_CHARS` characters wait in Python, at most what the
  pipe to a process holds (`PIPE_BYTES`, a send blocks) and the chunk being indexed are in
  flight, and FTS5's term hash is `hashsize` bytes;
- few segments: single-row INSERTs open no statement savepoint (FTS5 in SQLite 3.40
  flushes its term hash to a new segment at each one), automatic merges are off while
  loading ('automerge' 0, set back after), and an index with two rows or more ends the
  load with two segments or more, so the indexer's closing 'optimize' merges them one
  level up (a lone segment would stay on level 0 and be rewritten whole by the next
  catch-ups: tests/test_fts_segments.py), and `fts_levels.lift` then moves that segment
  to a level the catch-ups' merges do not reach (issue 32);
- a failure in the indexer (an error, or its process dying) is raised in the building
  thread as RuntimeError (at the next send or at `finish`), but a full disk as SQLite's
  "database or disk is full" (issue 31: `reindex` and `verify` said "internal error"); the
  scratch file is removed by `finish`/`close` (and, after a crash, with the build's other
  leftovers by
  `projections.rebuild`); a child process whose parent dies reads the end of its pipe,
  rolls back and exits.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from projections import cjk
from projections.errors import disk_full

if TYPE_CHECKING:  # the child-process mode imports these when it runs: every catch-up and
    import subprocess  # search imports this module (through projections.db), ~4 ms

FLUSH_CHARS = 1 << 20  # characters of text gathered before a chunk goes to the indexer
PIPE_BYTES = 1 << 20  # the pipe to a child process (Linux F_SETPIPE_SZ; else the default)
MODE: str | None = None  # tests: force "inline" or "process"
SHADOWS = ("data", "idx", "docsize", "config")  # a contentless FTS5 table's storage
TABLES = ("documents_fts", "documents_cjk")
_DONE = ("done",)
_DISK_FULL = "disk is full"  # SQLite's SQLITE_FULL message, also in the child's last word
last_child: list[int] = [0, 0]  # the last child process's pid, how many were started (tests)


def has_cjk(text: str) -> int:
    return 1 if text and not text.isascii() and cjk.has_cjk(text) else 0


def cjk_grams(text: str) -> str:
    return cjk.grams_text(text) if text else ""


class BulkFeed:
    """Rows waiting for the full-text indexes of one bulk-loading connection."""

    def __init__(self, path: Path, ddl: str, pragmas: list[str], hashsize: int,
                 default_hashsize: int, mode: str = "inline") -> None:
        self.path = path  # the new history.db
        self.scratch = path.parent / (path.name + ".fts")
        self.pending: dict[int, str] = {}  # rowid -> text, not yet sent
        self.chars = 0
        self.sent = False
        self.ended = False
        self.error: BaseException | None = None
        self.terms: list[tuple[str, int]] | None = None  # `end`'s vocabulary read, inline
        self.copied = False  # `copy` done (projections.bulk_tail: on the sort's thread)
        with contextlib.suppress(FileNotFoundError):
            self.scratch.unlink()
        self.args = (ddl, pragmas, hashsize, default_hashsize)
        self.con: sqlite3.Connection | None = None  # inline: the scratch file's connection
        self.proc: subprocess.Popen[bytes] | None = None  # process: the child
        if (MODE or mode) == "process":
            self._spawn()
        else:
            self.con = open_scratch(self.scratch, *self.args[:3])

    @property
    def inline(self) -> bool:
        """Whether the indexing runs in the building thread itself (until `end`)."""
        return self.con is not None

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

    def put_new(self, first: int, texts: list[str]) -> None:
        """`put(first + i, text)` for each of `texts`: rows new to this load (never sent)."""
        if len(texts) == 1:
            self.put(first, texts[0])
            return
        self.pending.update(zip(range(first, first + len(texts)), texts, strict=True))
        self.chars += sum(map(len, texts))
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
                done = apply_op(self.con, op, self.args[3])
            except Exception as exc:
                self.error = exc
                self._raise()
            if done:
                self.con.close()
                self.con = None
            return
        if self.proc is not None:
            self._write(op)

    def _raise(self) -> None:
        error = self.error
        if error is not None and (disk_full(error) or _DISK_FULL in str(error)):
            # said as the disk it is (cli: "disk full: … free space"), not an internal error
            raise sqlite3.OperationalError(f"database or {_DISK_FULL}") from error
        raise RuntimeError("the full-text build of the rebuild failed") from self.error

    def end(self, terms_over: int | None = None) -> None:
        """Send what still waits (in two segments) and the end of the load: the indexer
        then merges each index ('optimize') while this thread goes on (`finish` waits).
        Inline, with `terms_over`: then read into `terms` every word of documents_fts in
        more than that many documents, with that count (the champion lists' fts5vocab
        scan, projections.rank.build; the index `finish` copies in is this one)."""
        rows = list(self.pending.items())
        self.pending = {}
        half = len(rows) // 2
        for part in (rows[:half], rows[half:]):
            if part:
                self._put(("add", part))
            self._put(("segment",))
        inline = self.inline
        self._put(_DONE)
        self.ended = True
        if inline and terms_over is not None:
            con = sqlite3.connect(self.scratch, isolation_level=None)
            try:
                con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, documents_fts,"
                            " row)")
                self.terms = [(str(t), int(n)) for t, n in con.execute(
                    "SELECT term, doc FROM temp.v WHERE doc > ?", (terms_over,))]
            finally:
                con.close()

    def finish(self) -> None:
        """`end` (if not yet), wait for the indexer, then copy both indexes into the new
        file (unless `copy` did). Call outside a transaction on the new file."""
        try:
            if not self.ended:
                self.end()
            if self.proc is not None:
                self._reap("ok")
            if not self.copied:
                self.copy()
        finally:
            self.close()

    def copy(self) -> None:
        """After `end` of an inline indexer: copy both indexes into the new file; the
        scratch file stays (for readers of it) until `finish` or `close`."""
        if self.error is not None:
            self._raise()
        self._copy()
        self.copied = True

    def close(self) -> None:
        """Stop the indexer (if running) and remove the scratch file."""
        if self.con is not None:  # inline, given up: nothing of it is kept
            with contextlib.suppress(sqlite3.Error):
                self.con.execute("ROLLBACK")
            self.con.close()
            self.con = None
        if self.proc is not None:  # the end of its pipe: it rolls back and exits
            proc, self.proc = self.proc, None
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
            import subprocess

            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
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

    # -- a child process ----------------------------------------------------------------
    def _spawn(self) -> None:
        import subprocess

        from projections.child import argv

        self.proc = subprocess.Popen(argv("projections.fts_bulk:child", str(self.scratch),
                                          *self.args),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     close_fds=True)
        last_child[:] = [self.proc.pid, last_child[1] + 1]
        assert self.proc.stdin is not None
        from projections import frames

        frames.widen(self.proc.stdin.fileno(), PIPE_BYTES)

    def _write(self, op: tuple[Any, ...]) -> None:
        from projections import frames

        assert self.proc is not None and self.proc.stdin is not None
        try:
            frames.write(self.proc.stdin, op)
        except OSError:  # it has gone (EPIPE): its own word on why
            self._reap(None)
            self._raise()

    def _reap(self, want: str | None) -> None:
        """Read the child's last word (after "done": "ok") and wait for it."""
        assert self.proc is not None and self.proc.stdout is not None
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        said = self.proc.stdout.read().decode("utf-8", "replace")
        code = self.proc.wait()
        if said != want or code != 0:
            self.error = RuntimeError(f"the full-text process said {said[:200]!r}"
                                      f" (exit code {code})")


def beside(other: Callable[[], object], here: Callable[[], object], name: str) -> None:
    """`other` on a thread of its own (named `name`) while `here` runs in this one; the
    first error of either is raised once both are done (db.finish_bulk: the query indexes
    sort beside the inline closing merge)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            other()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    try:
        here()
    finally:
        thread.join()
    if errors:
        raise errors[0]



# -- the indexer (either way) ---------------------------------------------------------
def open_scratch(path: Path, ddl: str, pragmas: list[str], hashsize: int) -> sqlite3.Connection:
    """The scratch file, its two full-text tables made, a transaction open."""
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
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


def apply_op(con: sqlite3.Connection, op: tuple[Any, ...], default_hashsize: int) -> bool:
    """Carry out one operation; True once the index is complete (or given up)."""
    if op[0] == "add":
        rows: list[tuple[int, str]] = op[1]
        con.executemany("INSERT INTO documents_fts(rowid, text) VALUES (?, ?)", rows)
        grams = [(rowid, cjk_grams(text)) for rowid, text in rows  # has_cjk, inline
                 if not text.isascii() and cjk.has_cjk(text)]
        if grams:
            con.executemany("INSERT INTO documents_cjk(rowid, grams) VALUES (?, ?)", grams)
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
        from projections import fts_levels

        for table in TABLES:  # merged one level up (the segments above), then lifted out
            con.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            fts_levels.lift(con, table)  # of the catch-ups' merges (issue 32)
        for table in TABLES:  # what the new file keeps: the defaults
            con.execute(f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', ?)",
                        (default_hashsize,))
            con.execute(f"DELETE FROM {table}_config WHERE k = 'automerge'")
        con.execute("COMMIT")
        return True
    else:  # "stop": the build gave up
        con.execute("ROLLBACK")
        return True
    return False


def child(scratch: str, ddl: str, pragmas: list[str], hashsize: int, default: int) -> None:
    """The child process: operations from stdin until "done" (then "ok" on stdout) or the
    pipe's end (the build gave up or died: rolled back). Any failure: its text on stdout
    and exit code 1 (texts of documents are never in it: SQLite's messages name none)."""
    from projections import frames

    inp: IO[bytes] = sys.stdin.buffer
    said, code = "stopped", 0
    try:
        con = open_scratch(Path(scratch), ddl, pragmas, hashsize)
        try:
            while True:
                op = frames.read(inp) or ("stop",)
                if apply_op(con, op, default):
                    break
        finally:
            con.close()
        if op[0] == "done":
            said = "ok"
    except BaseException as exc:
        said, code = f"{type(exc).__name__}: {exc}", 1
    with contextlib.suppress(OSError):  # a parent that died reads nothing
        sys.stdout.buffer.write(said.encode("utf-8", "replace"))
        sys.stdout.buffer.flush()
    sys.exit(code)
