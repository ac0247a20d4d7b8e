"""A read's stop button: another thread stops a search in flight (`agentlog browse` stops the
search a newer keystroke superseded).

Promises:
- `Cancel.watching(con)` holds `con` for one read: while the block runs, `cancel()` (from any
  thread) stops the statement running on it at once (`sqlite3.Connection.interrupt()`) and
  any statement begun after it within `CHECK_EVERY` virtual-machine steps (a progress
  handler: an interrupt that lands between two statements of the read, when SQLite has
  none to stop, is not lost); the connections the read opens for its own threads
  (`projections.db.Connection.open_reader`: a split ranking's, projections/rank/split.py)
  are stopped with it (`adopt`);
- a read stopped inside a transaction it began (a split ranking's snapshot) leaves none
  open: the connection holds no lock afterwards;
- Python loops between statements stop at their `check(con)` stop points (the threshold
  algorithm of `projections.rank.multi` spends most of its time in Python);
- a stopped statement raises `sqlite3.OperationalError` "interrupted" (SQLITE_INTERRUPT);
  `projections.query` turns it into `projections.errors.Interrupted`, never a damaged file;
- `cancel` interrupts only connections a read holds: once `watching` returns, the
  connection's next read (another `Cancel`'s) is never hit by this one;
- a `Cancel` serves one read and is never reset: a cancelled one stops every later read it
  watches at its first statement (`watching` raises `Interrupted` before any), so a cancel
  meant for a superseded search never stops the next one, which has its own.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from projections.errors import Interrupted

CHECK_EVERY = 1000  # SQLite virtual-machine steps between two looks at the flag


class Cancel:
    """One read's stop button (see the module's promises)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cons: list[sqlite3.Connection] = []
        self.cancelled = False

    def cancel(self) -> None:
        """Stop the read: its running statements now, any later one at once."""
        with self._lock:  # under the lock: a connection `watching` let go is never hit
            self.cancelled = True
            for con in self._cons:
                try:
                    con.interrupt()
                except sqlite3.ProgrammingError:  # closed meanwhile (a split thread's, done)
                    pass

    def _stop(self) -> int:
        return 1 if self.cancelled else 0  # the progress handler: non-zero interrupts

    def adopt(self, con: sqlite3.Connection) -> None:
        """Stop `con` with this read too (a connection the read opened for a thread of its
        own; it closes it itself)."""
        con.set_progress_handler(self._stop, CHECK_EVERY)
        with self._lock:
            self._cons.append(con)
            if self.cancelled:
                con.interrupt()

    @contextmanager
    def watching(self, con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        """`con` stoppable by `cancel` while the block runs (`con.cancel` names this handle
        meanwhile, so readers it opens are adopted); `Interrupted` at once if cancelled."""
        if self.cancelled:
            raise Interrupted("superseded before it began")
        self.adopt(con)
        began = con.in_transaction
        before = getattr(con, "cancel", None)
        try:
            con.cancel = self  # type: ignore[attr-defined]
        except AttributeError:  # a plain sqlite3.Connection: its readers are its own
            before = False
        try:
            yield con
        finally:
            con.set_progress_handler(None, 0)
            if con.in_transaction and not began:  # a read stopped inside its own: end it
                con.execute("ROLLBACK")
            if before is not False:
                con.cancel = before  # type: ignore[attr-defined]
            with self._lock:
                self._cons.remove(con)


def check(con: sqlite3.Connection) -> None:
    """A stop point for Python work between statements (a ranking accelerator's loops,
    which SQLite's interrupt cannot reach): `Interrupted` when a cancelled `Cancel`
    watches `con`; nothing otherwise (an attribute read)."""
    stop = getattr(con, "cancel", None)
    if stop is not None and stop.cancelled:
        raise Interrupted("superseded")


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's "interrupted" (a `Cancel` stopped the statement)."""
    return isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_INTERRUPT
        or str(exc) == "interrupted")
