"""Ranking every match of a full-text query in SQLite on threads: rowid ranges ranked apart
and merged.

A query that no champion list answers ranks every match (docs/search.md): s = bm25 x role
weight, best (most negative) first, ties by rowid descending (`projections.ranking`: one
statement, the reference). The statement's time is per
match and inside SQLite, on one core: ~1.3 µs a match at 446,000 documents, of which FTS5's
bm25 is ~3/4 (each match's positions and its length from `_docsize`), the `documents` row
and its weight most of the rest, the sort of the best page little. So a query whose
full-text expression has at least `PARALLEL_AT` matches, in a process that may run on more
than one CPU, splits its matches by rowid into one range per thread (at most `MAX_THREADS`):
the caller's connection ranks the first range while each other thread ranks its own on a
read-only connection of its own (SQLite steps a statement without holding the GIL), each
keeps its best page with the same ORDER BY, and the pages are merged by that very key.

Promises:
- `pages(...)` yields the rowids of every match in the ranking's order, `page` at a time (a
  shorter page is the last), the same rowids the one statement's LIMIT/OFFSET pages give
  (`projections.ranking.pages`):
  FTS5's bm25 takes the document count, the average length and each phrase's document
  count from the whole index (its idf pass walks every match of each phrase, whatever rowid
  range the statement reads), so a range's scores are the one statement's doubles bit for
  bit; the ranges are disjoint, so merging by (s, -rowid) is the one order; a range whose
  page was full is asked for its next page (on the caller's connection) before the merge
  passes its last row, so duplicates dropped after ranking may take any number of pages;
- one snapshot: the caller's connection holds a read transaction from before any thread
  starts until the last page, and a thread ranks only in a read transaction that sees the
  caller's checkpoint (every write of the rows and full-text index a ranking reads is a
  catch-up's, which writes the checkpoint in the same transaction: a WAL file lets a
  commit land between the caller's snapshot and a thread's; on a plain rollback file no
  commit can). A thread that sees another checkpoint, whose connection cannot read at once
  (busy: a writer of a rollback file waits for the lock) or that opened another file than
  the caller's (a rebuild swapped a new one in: their `projections.fileid` identities
  differ) ranks nothing, and its range is ranked on the caller's connection;
- a query with fewer matches pays one statement for the split (is there a PARALLEL_AT-th
  match?); then, and with one CPU, a caller already in a transaction, or whose file is not
  known (not a `projections.db.connect` connection of one file), `pages` returns None: the
  caller runs the one statement.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from projections import cpus, fileid
from projections.ranking import pages as one_statement
from projections.ranking import statement

PARALLEL_AT = 10_000  # matches of the expression from which threads pay (~15 ms on one)
MAX_THREADS = 4
THREADS: int | None = None  # threads to use (tests force them); None: the CPUs, MAX_THREADS at most
_LOW, _HIGH = -(1 << 63), (1 << 63) - 1

Scored = tuple[float, int]  # s, rowid


def pages(con: sqlite3.Connection, table: str, expr: str, conds: str, params: list[Any],
          page: int) -> Generator[list[int], None, None] | None:
    """The rowids of every match, best first, `page` at a time, ranked on threads (the
    caller closes it when it needs no more: the split's read transaction ends then); None
    when the split would not pay or cannot be made (the caller runs the one statement)."""
    threads = _threads()
    ident: fileid.FileId | None = getattr(con, "ident", None)
    if threads < 2 or ident is None or con.in_transaction or not _many(con, table, expr):
        return None
    path = _file(con)
    if path is None:
        return None
    return _split_pages(con, (path, ident), table, expr, conds, params, page, threads)


def _split_pages(con: sqlite3.Connection, file: tuple[Path, fileid.FileId], table: str,
                 expr: str, conds: str, params: list[Any], page: int, threads: int
                 ) -> Generator[list[int], None, None]:
    con.execute("BEGIN")
    try:
        yield from _split(con, file, table, expr, conds, params, page, threads)
    finally:
        if con.in_transaction:
            con.execute("COMMIT")


def _threads() -> int:
    if THREADS is not None:
        return THREADS
    return min(cpus.usable(), MAX_THREADS)


def _file(con: sqlite3.Connection) -> Path | None:
    """The connection's database file, None when it is in memory or has others attached."""
    found = [(str(name), str(file)) for _, name, file in con.execute("PRAGMA database_list")
             if name != "temp"]
    return Path(found[0][1]) if len(found) == 1 and found[0][1] else None


def _many(con: sqlite3.Connection, table: str, expr: str) -> bool:
    """Whether the expression has `PARALLEL_AT` matches or more (the probe reads at most
    that many: a rare word's costs microseconds)."""
    return con.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT 1 OFFSET ?",
                       (expr, max(PARALLEL_AT - 1, 0))).fetchone() is not None


def _cuts(con: sqlite3.Connection, table: str, expr: str, n: int) -> list[int] | None:
    """n rowid ranges (lo, hi] of equal width between the first and the last match (the
    outer ones open), None when nothing matches now."""
    first = con.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid"
                        " LIMIT 1", (expr,)).fetchone()
    last = con.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC"
                       " LIMIT 1", (expr,)).fetchone()
    if first is None or last is None:
        return None
    lo, width = int(first[0]) - 1, int(last[0]) - int(first[0]) + 1
    return [_LOW, *(lo + width * i // n for i in range(1, n)), _HIGH]


def _checkpoint(con: sqlite3.Connection) -> tuple[Any, ...] | None:
    """The checkpoint the connection's read transaction sees (None in a file without one)."""
    try:
        row = con.execute("SELECT last_seq, last_hash FROM checkpoint").fetchone()
    except sqlite3.OperationalError:  # no such table: a file of ranking tests alone
        return None
    return tuple(row) if row is not None else None


def _reader(con: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """A thread's read-only connection (the functions `conds` may call registered), failing
    at once rather than waiting for a lock: opened by the caller's connection, a
    `projections.db.Connection` (only those know their file), as projections.db opens
    readers (this package imports no projections.db: that imports its tables)."""
    opened: sqlite3.Connection = con.open_reader(path)  # type: ignore[attr-defined]
    return opened


def _split(con: sqlite3.Connection, file: tuple[Path, fileid.FileId], table: str, expr: str,
           conds: str, params: list[Any], page: int, n: int) -> Iterator[list[int]]:
    seen = _checkpoint(con)  # the first read: the caller's snapshot from here on
    cuts = _cuts(con, table, expr, n)
    if cuts is None:
        yield from one_statement(con, table, expr, conds, params, page)
        return
    sql = statement(table, conds, f" AND {table}.rowid > ? AND {table}.rowid <= ?")

    def ranked(c: sqlite3.Connection, i: int, offset: int) -> list[Scored]:
        return [(float(s), int(r)) for r, s in c.execute(
            sql, [expr, *params, cuts[i], cuts[i + 1], page, offset])]

    firsts: list[list[Scored] | None] = [None] * n
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            wcon = _reader(con, file[0])
        except sqlite3.OperationalError:  # cannot open now: the caller ranks range i
            return
        except BaseException as exc:  # raised again by the caller
            errors.append(exc)
            return
        try:
            wcon.execute("BEGIN")
            if getattr(wcon, "ident", None) == file[1] and _checkpoint(wcon) == seen:
                firsts[i] = ranked(wcon, i, 0)  # the caller's very file and snapshot
        except sqlite3.OperationalError:  # busy (a writer waits for the lock): the same
            pass
        except BaseException as exc:  # raised again by the caller
            errors.append(exc)
        finally:
            wcon.close()

    workers = [threading.Thread(target=work, args=(i,), name=f"rank-{i}", daemon=True)
               for i in range(1, n)]
    for t in workers:
        t.start()
    try:
        firsts[0] = ranked(con, 0, 0)
    finally:
        for t in workers:
            t.join()
    if errors:
        raise errors[0]

    def stream(i: int) -> Iterator[Scored]:
        got, offset = firsts[i], 0
        if got is None:
            got = ranked(con, i, 0)
        while True:
            yield from got
            if len(got) < page:
                return
            offset += page
            got = ranked(con, i, offset)

    import heapq  # only a split query's
    import itertools

    merged = heapq.merge(*(stream(i) for i in range(n)), key=_key)
    while True:
        rowids = [r for _, r in itertools.islice(merged, page)]
        yield rowids
        if len(rowids) < page:
            return


def _key(row: Scored) -> tuple[float, int]:
    return row[0], -row[1]
