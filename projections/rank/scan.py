"""Ranking every match of a word for its champion list (projections.rank.champions), on the
caller's connection or, in a rebuild, on worker threads that share the two cores.

A list is made by ranking every match of its word with FTS5's bm25 x role weight (~1 s for
a word in 400,000 documents, nearly all of it inside one SQLite statement: a docsize lookup
and a `documents` row per match). A rebuild makes its lists after the load, when nothing
else runs: `ranked_all` splits each word's matches into rowid ranges and ranks the ranges
on `workers` threads, each with a read-only connection of its own; SQLite runs a statement
without holding the GIL, so the threads run on as many cores.

Most of a statement's time is bm25 itself (FTS5 looks each match's length up), so a word in
at least `PRUNE_AT` documents is first ranked among the documents of the heaviest role
weights only (`floor`: ~half the time when they are a third of the documents), chosen so
that they are expected to hold `SPARE` times the rows wanted; bm25 x weight is below
idf x (k1 + 1) x weight for every document (bm25's g(f, D) < k1 + 1), so when the last row
kept beats that bound for the heaviest weight left out, no document left out can rank
among them; else the word is ranked over every match after all, and later words start one
weight lower.

Promises:
- `ranked(con, term, limit)` is the word's `limit` best matches, (rowid, bm25, weight), in
  the lists' order: bm25 x weight ascending (best first), ties by rowid descending;
- `ranked_all` gives exactly the same rows per word: bm25's inputs (the document count,
  average length and the word's document count) are the whole index's whatever rowid range
  or weights a statement reads, the ranges' rows are merged by the very key SQLite sorted
  them by (the product of the same two doubles, then the rowid): bit-identical, same order;
  and rows ranked above a weight floor are kept only with the certificate above (with a
  relative `MARGIN` for rounding; the weights left out are every weight a document can
  have, `ROLE_WEIGHT`'s and the default 1.0, not only those in the file);
- read-only; `ranked_all` needs the database in a file with no write transaction open on
  it (its threads read through connections of their own), else it ranks on `con` alone.
"""

from __future__ import annotations

import heapq
import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from projections.rank.bm25 import K1, idf
from projections.rank.tokens import totals
from projections.ranking import ROLE_WEIGHT, WEIGHT_SQL
from projections.text import fts_phrase

if TYPE_CHECKING:
    from concurrent.futures import Future

Row = tuple[int, float, float]  # rowid, bm25, role weight
Job = tuple[str, int, int]  # word, rows wanted, its document count
AHEAD = 1  # words ranked ahead of the one being kept (champions.make_wanted)
PRUNE_AT = 50_000  # a word in this many documents or more is ranked heaviest first ...
SPARE = 4  # ... among the weights expected to hold this many times the rows wanted
MARGIN = 1e-9
_QUERY = ("SELECT f.rowid, bm25(documents_fts), {weight} AS w FROM documents_fts f"
          " JOIN document_rows d ON d.rowid = f.rowid WHERE documents_fts MATCH ? AND w >= ?"
          "{where} ORDER BY bm25(documents_fts) * w, f.rowid DESC LIMIT ?")


def _query(where: str = "") -> str:
    return _QUERY.format(weight=WEIGHT_SQL, where=where)


def count(con: sqlite3.Connection, term: str) -> int:
    """The word's document count (a multi-word idf's and bm25's own)."""
    return int(con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                           (fts_phrase(term),)).fetchone()[0])


def ranked(con: sqlite3.Connection, term: str, limit: int, floor: float = 0.0) -> list[Row]:
    """The word's `limit` best matches in the lists' order (among the documents weighing
    `floor` or more)."""
    return [(int(r), float(b), float(w)) for r, b, w in
            con.execute(_query(), (fts_phrase(term), floor, limit))]


class _Floors:
    """The weight floor of each word (fixed when first asked), and the certificate."""

    def __init__(self, con: sqlite3.Connection, jobs: list[Job]) -> None:
        self.levels = sorted({*ROLE_WEIGHT.values(), 1.0})  # every weight there is
        self.nrow = totals(con)[0]
        self.lower = 0  # certificates that failed: later words start this many weights lower
        self.of: dict[int, float] = {}
        self.share: list[tuple[float, float]] = []  # (weight, share of documents >= it)
        self.lock = threading.Lock()
        if any(df >= PRUNE_AT for _, _, df in jobs):
            counts = sorted(((float(w), int(n)) for w, n in con.execute(
                f"SELECT {WEIGHT_SQL} AS w, count(*) FROM document_rows d GROUP BY w")),
                reverse=True)
            total = sum(n for _, n in counts) or 1
            seen = 0
            for w, n in counts:
                seen += n
                self.share.append((w, seen / total))

    def floor(self, j: int, job: Job) -> float:
        """Word j's floor: 0.0 (every match), or the least weight above the heaviest one
        left out, whose documents are then the fewest expected to hold `SPARE` x the rows
        wanted (`lower` weights more after failed certificates)."""
        with self.lock:
            if j not in self.of:
                _, limit, df = job
                k = next((k for k, (_, share) in enumerate(self.share[:-1])
                          if df * share >= SPARE * limit), None)
                if df < PRUNE_AT or k is None or k + self.lower + 1 >= len(self.share):
                    self.of[j] = 0.0
                else:
                    out = self.share[k + self.lower + 1][0]
                    self.of[j] = min(w for w in self.levels if w > out)
            return self.of[j]

    def certified(self, j: int, job: Job, rows: list[Row]) -> bool:
        """Whether rows ranked above word j's floor are its best of every match (else
        later words start one weight lower)."""
        floor = self.of.get(j, 0.0)
        if not floor:
            return True
        out = [w for w in self.levels if w < floor]
        bound = idf(self.nrow, job[2]) * (K1 + 1.0) * out[-1] if out else 0.0
        if len(rows) == job[1] and -(rows[-1][1] * rows[-1][2]) > bound * (1 + MARGIN):
            return True
        with self.lock:
            self.lower += 1
        return False


def _key(row: Row) -> tuple[float, int]:
    return row[1] * row[2], -row[0]


def ranked_all(con: sqlite3.Connection, jobs: list[Job], workers: int,
               ahead: int = AHEAD) -> Iterator[tuple[str, list[Row]]]:
    """(term, `ranked(con, term, limit)`) for each (term, limit, df), in order; ranked on
    `workers` threads at most `ahead` words beyond the one the caller was last given (the
    rows of a deep word are a few MB in Python)."""
    floors = _Floors(con, jobs)
    files = _files(con)
    if workers < 2 or not files or con.in_transaction:
        for j, (term, limit, _) in enumerate(jobs):
            rows = ranked(con, term, limit, floors.floor(j, jobs[j]))
            if not floors.certified(j, jobs[j], rows):
                rows = ranked(con, term, limit)
            yield term, rows
        return
    last = int(con.execute("SELECT coalesce(max(id), 0) FROM documents_fts_docsize")
               .fetchone()[0])
    bounds = [last * i // workers for i in range(workers + 1)]  # ranges (lo, hi]: all rowids
    bounds[0], bounds[-1] = -(1 << 63), (1 << 63) - 1
    from concurrent.futures import ThreadPoolExecutor  # a rebuild's, not every writer's

    query = _query(" AND f.rowid > ? AND f.rowid <= ?")
    local = threading.local()  # each thread's read-only connection
    opened: list[sqlite3.Connection] = []

    def work(n: int) -> list[Row]:  # task n: word n // workers, rowid range n % workers
        wcon = getattr(local, "con", None)
        if wcon is None:
            wcon = local.con = _reader(files)
            opened.append(wcon)
        j, i = divmod(n, workers)
        term, limit, _ = jobs[j]
        args = (fts_phrase(term), floors.floor(j, jobs[j]), bounds[i], bounds[i + 1], limit)
        for tries in range(CONNECT_TRIES, 0, -1):
            try:
                rows = wcon.execute(query, args).fetchall()  # GIL free
                break
            except sqlite3.OperationalError as exc:
                if tries == 1 or not str(exc).startswith("vtable constructor failed"):
                    raise
                time.sleep(CONNECT_PAUSE)
        return [(int(r), float(b), float(w)) for r, b, w in rows]

    tasks: dict[int, Future[list[Row]]] = {}
    started = 0  # tasks submitted: 0 .. started-1, in order
    pool = ThreadPoolExecutor(workers, thread_name_prefix="rank")
    try:
        for j, (term, limit, _) in enumerate(jobs):
            while started < min(len(jobs), j + 1 + ahead) * workers:
                tasks[started] = pool.submit(work, started)
                started += 1
            parts = [tasks.pop(j * workers + i).result() for i in range(workers)]
            rows = list(itertools.islice(heapq.merge(*parts, key=_key), limit))
            if not floors.certified(j, jobs[j], rows):  # every match after all, here
                rows = ranked(con, term, limit)
            yield term, rows
    finally:
        for task in tasks.values():
            task.cancel()
        pool.shutdown(wait=True)
        for wcon in opened:
            wcon.close()


# A worker's first statement connects its full-text table, and FTS5 reads its configuration
# while connecting, inside the prepare: when the caller changes the file's schema meanwhile
# (the lists are written to the file the workers read, and the first deep list creates its
# tables: `deep.store`), that read fails and SQLite says "vtable constructor failed" (seen
# once in a full test run; a /tmp script of two threads opening readers while a writer
# created and dropped a table made it 221 times in 10 s, and none with this retry). The
# deep tables are made before the workers start (`champions.make_wanted`); any other
# change of the schema meanwhile is tried again, briefly: a schema change is one statement.
CONNECT_TRIES = 50
CONNECT_PAUSE = 0.02


def _reader(files: list[tuple[str, Path]]) -> sqlite3.Connection:
    """A connection that only reads (query_only; opened read-write like every reader of
    projections.db.connect) the caller's database files: the first as its main database,
    the others attached under the caller's names (a rebuild's lists read the rows' weights
    and the full-text index from two side files: projections.bulk_tail); the statements
    above need no function of ours."""
    uri = "file:" + _uri_path(files[0][1]) + "?mode=rw"
    con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        for name, path in files[1:]:
            con.execute("ATTACH DATABASE ? AS " + name, ("file:" + _uri_path(path) + "?mode=rw",))
        con.execute("PRAGMA query_only = 1")
    except BaseException:
        con.close()
        raise
    return con


def _uri_path(path: Path) -> str:
    return str(path.absolute()).replace("?", "%3f").replace("#", "%23")


def _files(con: sqlite3.Connection) -> list[tuple[str, Path]]:
    """(name, file) of the connection's databases that are files, main first (an in-memory
    main database is left out: it holds only the lists being written, which the workers'
    statements never read)."""
    return [(str(name), Path(file)) for _, name, file in con.execute("PRAGMA database_list")
            if name != "temp" and file]
