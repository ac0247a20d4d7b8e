"""Ranking every match of a word for its champion list (projections.rank), on the caller's
connection or, in a rebuild, on worker threads that share the two cores.

A list is made by ranking every match of its word with FTS5's bm25 x role weight (~1 s for
a word in 400,000 documents, nearly all of it inside one SQLite statement: a docsize lookup
and a `documents` row per match). A rebuild makes its lists after the load, when nothing
else runs: `ranked_all` splits each word's matches into rowid ranges and ranks the ranges
on `workers` threads, each with a read-only connection of its own; SQLite runs a statement
without holding the GIL, so the threads run on as many cores.

Promises:
- `ranked(con, term, limit)` is the word's `limit` best matches, (rowid, bm25, weight), in
  the lists' order: bm25 x weight ascending (best first), ties by rowid descending;
- `ranked_all` gives exactly the same rows per word: bm25's inputs (the document count,
  average length and the word's document count) are the whole index's whatever rowid range
  a statement reads, and the ranges' rows are merged by the very key SQLite sorted them by
  (the product of the same two doubles, then the rowid): bit-identical, same order;
- read-only; `ranked_all` needs the database in a file with no write transaction open on
  it (its threads read through connections of their own), else it ranks on `con` alone.
"""

from __future__ import annotations

import heapq
import itertools
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from projections.text import fts_phrase

Row = tuple[int, float, float]  # rowid, bm25, role weight
AHEAD = 1  # words ranked ahead of the one being kept (rank.make_wanted)
_QUERY = ("SELECT f.rowid, bm25(documents_fts), {weight} AS w FROM documents_fts f"
          " JOIN documents d ON d.rowid = f.rowid WHERE documents_fts MATCH ?{where}"
          " ORDER BY bm25(documents_fts) * w, f.rowid DESC LIMIT ?")


def _query(where: str = "") -> str:
    from projections.rank import WEIGHT_SQL

    return _QUERY.format(weight=WEIGHT_SQL, where=where)


def count(con: sqlite3.Connection, term: str) -> int:
    """The word's document count (a multi-word idf's and bm25's own)."""
    return int(con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                           (fts_phrase(term),)).fetchone()[0])


def ranked(con: sqlite3.Connection, term: str, limit: int) -> list[Row]:
    """The word's `limit` best matches in the lists' order."""
    return [(int(r), float(b), float(w)) for r, b, w in
            con.execute(_query(), (fts_phrase(term), limit))]


def _key(row: Row) -> tuple[float, int]:
    return row[1] * row[2], -row[0]


def ranked_all(con: sqlite3.Connection, jobs: list[tuple[str, int]], workers: int,
               ahead: int = AHEAD) -> Iterator[tuple[str, list[Row]]]:
    """(term, `ranked(con, term, limit)`) for each (term, limit), in order; ranked on
    `workers` threads at most `ahead` words beyond the one the caller was last given (the
    rows of a deep word are a few MB in Python)."""
    path = _file(con)
    if workers < 2 or path is None or con.in_transaction:
        for term, limit in jobs:
            yield term, ranked(con, term, limit)
        return
    last = int(con.execute("SELECT coalesce(max(id), 0) FROM documents_fts_docsize")
               .fetchone()[0])
    bounds = [last * i // workers for i in range(workers + 1)]  # ranges (lo, hi]: all rowids
    bounds[0], bounds[-1] = -(1 << 63), (1 << 63) - 1
    query = _query(" AND f.rowid > ? AND f.rowid <= ?")

    def work(wcon: sqlite3.Connection, n: int) -> list[Row]:
        (term, limit), i = jobs[n // workers], n % workers
        return [(int(r), float(b), float(w)) for r, b, w in wcon.execute(
            query, (fts_phrase(term), bounds[i], bounds[i + 1], limit))]

    pool = _Pool(path, work, len(jobs) * workers, workers)
    try:
        for j, (term, limit) in enumerate(jobs):
            pool.allow((j + 1 + ahead) * workers)
            parts = [pool.take(j * workers + i) for i in range(workers)]
            yield term, list(itertools.islice(heapq.merge(*parts, key=_key), limit))
    finally:
        pool.stop()


def _file(con: sqlite3.Connection) -> Path | None:
    for _, name, file in con.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file) if file else None
    return None


class _Pool:
    """`workers` threads, a read-only connection each, computing tasks 0..n-1 in order but
    none at or beyond the bound `allow` set; `take` waits for a task's result (and raises
    the first error of any thread)."""

    def __init__(self, path: Path, work: Callable[[sqlite3.Connection, int], list[Row]],
                 n: int, workers: int) -> None:
        self.path, self.work, self.n = path, work, n
        self.next = 0  # the next task to start
        self.bound = 0  # tasks below it may start
        self.stopped = False
        self.results: dict[int, list[Row]] = {}
        self.errors: list[BaseException] = []
        self.cond = threading.Condition()
        self.threads = [threading.Thread(target=self._loop, name=f"rank-{i}", daemon=True)
                        for i in range(workers)]
        for t in self.threads:
            t.start()

    def _loop(self) -> None:
        from projections import db

        try:
            wcon = db.connect(self.path, readonly=True)
        except BaseException as exc:
            with self.cond:
                self.errors.append(exc)
                self.cond.notify_all()
            return
        try:
            while True:
                with self.cond:
                    while not (self.stopped or self.errors or self.next < self.bound):
                        self.cond.wait()
                    if self.stopped or self.errors or self.next >= self.n:
                        return
                    n = self.next
                    self.next += 1
                rows = self.work(wcon, n)  # one SQLite statement: the GIL is free meanwhile
                with self.cond:
                    self.results[n] = rows
                    self.cond.notify_all()
        except BaseException as exc:
            with self.cond:
                self.errors.append(exc)
                self.cond.notify_all()
        finally:
            wcon.close()

    def allow(self, bound: int) -> None:
        with self.cond:
            self.bound = min(self.n, max(self.bound, bound))
            self.cond.notify_all()

    def take(self, n: int) -> list[Row]:
        with self.cond:
            while n not in self.results:
                if self.errors:
                    raise self.errors[0]
                self.cond.wait()
            return self.results.pop(n)

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        for t in self.threads:
            t.join()
