"""Deep lists: the `depth` best documents of a very common word, packed, for multi-word
ranking (projections.rank.multi).

A one-word query needs only the word's champion list (projections.rank.champions, ~1,000
rows). An AND query of several common words needs far deeper lists: its best documents
hold every word moderately often and sit thousands of places down each word's own ranking
(bm25's g(f) saturates). So a word in more than `DEEP_SHARE` x 2 x `champions.CHAMPIONS`
documents also keeps a deep list of its best min(`DEEP_MAX`, df / `DEEP_SHARE`) documents
(by v = weight x g(f, D), the champions' order), packed into one zlib blob per word
(`rank_deep_blob`: ~2-3 bytes a document at 1M documents; rows would cost ~30 bytes and
~0.4 us each to read); `rank_deep` holds its bound, carried by every fold.

Promises (the same certificate as a champion list, one level deeper):
- every document of the word that is in none of (the blob minus `rank_deep_stale`, plus
  `rank_deep_add`) and is not new or changed since `rank_meta.wm` has
  v <= tau * max(1, avgdl_now / tavgdl);
- entries give exact (f, D, weight) as FTS5 indexed them (recovered from FTS5's bm25 like
  the champions, or tokenized by the fold); the blob is in v order at its own avgdl
  (`bavgdl`), best first, which bounds every later entry at another avgdl by the ratio;
- upkeep is catch-up's fold (`projections.rank.champions.refresh`): a new or changed
  document that beats the carried bound becomes a row of `rank_deep_add`; a changed or
  deleted one is marked stale for every deep word (its blob entry no longer counts);
  remaking a word's list (champions._build_one) clears both for that word. The blob itself
  is only written when the list is made. A cache of documents_fts like the other rank tables;
- cross columns (`rank_deep_cross`): the deep lists of the `CROSS` commonest deep words
  carry each other's f, one byte per entry in the blob's order (0: the document lacks the
  word; `UNKNOWN`: f that large is not kept), exact for every entry whose document did not
  change since the list was made (the others are excluded at query time anyway: new since
  `wm`, dirty, or stale). Made by `make_cross` after the list (never by a rebuild), one
  word at a time, texts read outside any transaction and written only if the blob is
  unchanged; remaking the list drops them (`store`);
- stale marks of documents a list does not hold exclude nothing: `compact` drops them
  (make_lists' idle steps, once all marks number more than `KEEP`).
"""

from __future__ import annotations

import sqlite3
import struct
import zlib
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from projections.rank.tokens import TextOf, counts_many, texts_of

DEEP_MAX = 20_000  # documents a deep list keeps at most
DEEP_SHARE = 8  # ... and at most this share of the word's documents (1 / DEEP_SHARE)
CROSS = 64  # the hottest words' deep lists carry each other's f (rank_deep_cross)
UNKNOWN = 255  # a cross f this large or larger is not kept (the query bounds it instead)
KEEP = 2_000  # stale marks all deep lists carry before make_lists drops the useless ones

SCHEMA = """
CREATE TABLE IF NOT EXISTS rank_deep(term TEXT PRIMARY KEY, tau REAL NOT NULL,
  tavgdl REAL NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rank_deep_blob(term TEXT PRIMARY KEY, data BLOB NOT NULL)
  WITHOUT ROWID;  -- apart, so that carrying tau (every fold) rewrites no blob
CREATE TABLE IF NOT EXISTS rank_deep_add(term TEXT NOT NULL, doc INTEGER NOT NULL,
  f INTEGER NOT NULL, dl INTEGER NOT NULL, w REAL NOT NULL, PRIMARY KEY(term, doc))
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rank_deep_stale(term TEXT NOT NULL, doc INTEGER NOT NULL,
  PRIMARY KEY(term, doc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rank_deep_cross(term TEXT NOT NULL, other TEXT NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY(term, other)) WITHOUT ROWID;
"""

_HEAD = struct.Struct("<2sdIB")  # magic, the blob's avgdl, entries, distinct weights


def depth(df: int, champions: int) -> int:
    """How many documents a word in `df` documents keeps in its deep list (0: none)."""
    d = min(DEEP_MAX, df // DEEP_SHARE)
    return d if d >= 2 * champions else 0


def ensure(con: sqlite3.Connection) -> None:
    """Create the deep tables (writers; files made before them gain them here)."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            con.execute(statement)


def has_deep(con: sqlite3.Connection) -> bool:
    return con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rank_deep_stale'"
    ).fetchone() is not None


def pack(avgdl: float, docs: Sequence[int], fs: Sequence[int], dls: Sequence[int],
         ws: Sequence[float]) -> bytes:
    """The blob of entries given best first."""
    kinds = sorted(set(ws))
    if len(kinds) > 255:
        raise ValueError("too many distinct weights")
    index = {w: i for i, w in enumerate(kinds)}
    body = b"".join((
        _HEAD.pack(b"D1", avgdl, len(docs), len(kinds)),
        array("d", kinds).tobytes(), array("q", docs).tobytes(), array("q", fs).tobytes(),
        array("q", dls).tobytes(), bytes(index[w] for w in ws)))
    return zlib.compress(body, 1)


class Weights(Sequence[float]):
    """The entries' weights, looked up when read (a query reads only a few of them)."""

    def __init__(self, kinds: array[float], codes: bytes) -> None:
        self.kinds, self.codes = kinds, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(map(self.kinds.__getitem__, self.codes[i]))
        return self.kinds[self.codes[i]]


def unpack(blob: bytes) -> tuple[float, array[int], array[int], array[int], Weights]:
    """(the blob's avgdl, docs, f, D, weights), best first."""
    raw = zlib.decompress(blob)
    magic, avgdl, n, k = _HEAD.unpack_from(raw)
    if magic != b"D1":
        raise ValueError("not a deep list")
    at = _HEAD.size
    kinds = array("d")
    kinds.frombytes(raw[at : at + 8 * k])
    at += 8 * k
    cols = []
    for _ in range(3):
        col = array("q")
        col.frombytes(raw[at : at + 8 * n])
        cols.append(col)
        at += 8 * n
    return avgdl, cols[0], cols[1], cols[2], Weights(kinds, raw[at : at + n])


def store(con: sqlite3.Connection, term: str, tau: float, avgdl: float,
          entries: Sequence[tuple[int, int, int, float]]) -> None:
    """Write `term`'s deep list (entries (doc, f, D, w) best first at `avgdl`, every other
    document of the word has v <= tau); its adds, stale marks and cross columns go."""
    ensure(con)
    blob = pack(avgdl, [e[0] for e in entries], [e[1] for e in entries],
                [e[2] for e in entries], [e[3] for e in entries])
    con.execute("INSERT OR REPLACE INTO rank_deep(term, tau, tavgdl, n) VALUES (?, ?, ?, ?)",
                (term, tau, avgdl, len(entries)))
    con.execute("INSERT OR REPLACE INTO rank_deep_blob(term, data) VALUES (?, ?)",
                (term, blob))
    for table in ("rank_deep_add", "rank_deep_stale", "rank_deep_cross"):
        con.execute(f"DELETE FROM {table} WHERE term = ?", (term,))


# -- cross columns: the hottest words' deep lists carry each other's f ----------------------

def cross_words(con: sqlite3.Connection, champions: int) -> list[str]:
    """The words whose deep lists carry each other's f: the `CROSS` commonest words that
    get a deep list (by `rank_terms.df`)."""
    if CROSS <= 1:
        return []
    return [str(r[0]) for r in con.execute(
        "SELECT term FROM rank_terms WHERE df >= ? ORDER BY df DESC, term LIMIT ?",
        (max(1, DEEP_SHARE * 2 * champions), CROSS))]


def _has_cross(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                       " AND name = 'rank_deep_cross'").fetchone() is not None


def cross_wanted(con: sqlite3.Connection, champions: int) -> list[str]:
    """Deep lists of cross words that have no cross columns yet (made since, or before
    cross columns existed). Read-only."""
    words = cross_words(con, champions)
    if len(words) < 2 or not has_deep(con):
        return []
    marks = ",".join("?" * len(words))
    having = " AND NOT EXISTS (SELECT 1 FROM rank_deep_cross c WHERE c.term = d.term)" \
        if _has_cross(con) else ""
    got = {str(r[0]) for r in con.execute(
        f"SELECT d.term FROM rank_deep d WHERE d.term IN ({marks}){having}", words)}
    return [t for t in words if t in got]


def make_cross(con: sqlite3.Connection, term: str, champions: int,
               text_of: TextOf = texts_of) -> bool:
    """Give `term`'s deep list its cross columns: per other cross word, its f in each
    entry's document (one byte each, `UNKNOWN` when that large), as documents_fts
    tokenizes the texts now. The texts are read and counted OUTSIDE any transaction (a
    word's 20,000 texts take ~0.5 s; no writer waits for that); the columns are written
    in one short IMMEDIATE transaction only if the list is still the one counted (else
    False: remade or gone meanwhile). Why a later read is exact: an entry whose document
    changed or went since the list was made is excluded at query time for good (it is new
    since `wm`, in `rank_dirty`, or marked stale by the fold), whatever its column says.
    Call outside a transaction."""
    row = con.execute("SELECT data FROM rank_deep_blob WHERE term = ?", (term,)).fetchone()
    others = [t for t in cross_words(con, champions) if t != term]
    if row is None or not others:
        return False
    blob = bytes(row[0])
    _, docs, _, _, _ = unpack(blob)
    freq, _ = counts_many(((r, t) for r, t, _, _ in text_of(con, list(docs))), others)
    columns = []
    for t in others:
        got = freq.get(t, {})
        columns.append((term, t, zlib.compress(bytes(min(got.get(d, 0), UNKNOWN)
                                                     for d in docs), 6)))

    def write() -> None:
        ensure(con)
        con.execute("DELETE FROM rank_deep_cross WHERE term = ?", (term,))
        con.executemany("INSERT INTO rank_deep_cross(term, other, data) VALUES (?, ?, ?)",
                        columns)

    return _write_if_unchanged(con, term, blob, write)


def _write_if_unchanged(con: sqlite3.Connection, term: str, blob: bytes,
                        write: Callable[[], object]) -> bool:
    """Run `write` in one short IMMEDIATE transaction if `term`'s deep list is still
    `blob` (what the caller read and worked from outside a transaction); else nothing is
    written (False: remade or gone meanwhile)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        now = con.execute("SELECT data FROM rank_deep_blob WHERE term = ?", (term,)).fetchone()
        if now is None or bytes(now[0]) != blob:
            con.execute("ROLLBACK")
            return False
        write()
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    return True


def drop(con: sqlite3.Connection, term: str | None = None) -> None:
    """Forget one word's deep list, or every one."""
    if not has_deep(con):
        return
    ensure(con)  # (files made before rank_deep_cross gain it)
    for table in ("rank_deep", "rank_deep_blob", "rank_deep_add", "rank_deep_stale",
                  "rank_deep_cross"):
        if term is None:
            con.execute(f"DELETE FROM {table}")
        else:
            con.execute(f"DELETE FROM {table} WHERE term = ?", (term,))


def untidy(con: sqlite3.Connection) -> list[str]:
    """Deep words by their stale marks, most first, when all of them number more than
    `KEEP` (the fold marks a changed document stale in every deep list — 329 rows at 1M
    bench documents — though only a few lists hold it). Read-only."""
    if not has_deep(con) or con.execute(
            "SELECT 1 FROM rank_deep_stale LIMIT 1 OFFSET ?", (KEEP,)).fetchone() is None:
        return []
    return [str(r[0]) for r in con.execute(
        "SELECT term FROM rank_deep_stale GROUP BY term ORDER BY count(*) DESC, term")]


def compact(con: sqlite3.Connection, term: str) -> int:
    """Drop `term`'s stale marks of documents its deep list does not hold (a mark only
    excludes the list's own entry; adds are not affected). Read outside any transaction,
    deleted in one short IMMEDIATE transaction only if the list is unchanged. Returns the
    marks dropped. Call outside a transaction."""
    row = con.execute("SELECT data FROM rank_deep_blob WHERE term = ?", (term,)).fetchone()
    if row is None:
        return 0
    blob = bytes(row[0])
    held = set(unpack(blob)[1])
    useless = [(term, int(d)) for (d,) in con.execute(
        "SELECT doc FROM rank_deep_stale WHERE term = ?", (term,)) if int(d) not in held]
    if not useless:
        return 0
    if not _write_if_unchanged(con, term, blob, lambda: con.executemany(
            "DELETE FROM rank_deep_stale WHERE term = ? AND doc = ?", useless)):
        return 0
    return len(useless)


def fold_marks(con: sqlite3.Connection, a_now: float) -> dict[str, float]:
    """Catch-up's fold, first half (inside its transaction, before rank_dirty is cleared):
    changed and deleted documents become stale in every deep list and leave the adds; the
    bounds are carried to `a_now`. Returns each deep word's bound now."""
    if not has_deep(con):
        return {}
    con.execute("INSERT OR IGNORE INTO rank_deep_stale(term, doc)"
                " SELECT d.term, r.doc FROM rank_deep d, rank_dirty r")
    con.execute("DELETE FROM rank_deep_add WHERE doc IN (SELECT doc FROM rank_dirty)")
    con.execute("UPDATE rank_deep SET tau = tau * max(1.0, ? / tavgdl), tavgdl = ?",
                (a_now, a_now))
    return {str(t): float(tau) for t, tau in con.execute("SELECT term, tau FROM rank_deep")}


def crossed(con: sqlite3.Connection, terms: list[str]) -> bool:
    """Whether every one of `terms` has a deep list carrying the f of each other one."""
    words = sorted(set(terms))
    if len(words) < 2 or not has_deep(con) or not _has_cross(con):
        return False
    marks = ",".join("?" * len(words))
    n = con.execute(f"SELECT count(*) FROM rank_deep_cross WHERE term IN ({marks})"
                    f" AND other IN ({marks})", [*words, *words]).fetchone()[0]
    return int(n) == len(words) * (len(words) - 1)


Deep = tuple[float, float, float, "array[int]", "array[int]", "array[int]", Weights,
             set[int], list[tuple[int, int, int, float]], dict[str, bytes]]
# (tau, tavgdl, the blob as stored, stale docs, adds, the other terms' cross columns as
# stored): what `load` reads, before any decompression
Raw = tuple[float, float, bytes, set[int], list[tuple[int, int, int, float]], dict[str, bytes]]


def read(con: sqlite3.Connection, terms: list[str]) -> dict[str, Raw]:
    """Per word with a deep list, its rows as stored (`Raw`; `decode` unpacks the blob
    and the columns). Read-only."""
    out: dict[str, Raw] = {}
    if not terms or not has_deep(con):
        return out
    marks = ",".join("?" * len(terms))
    crossed = _has_cross(con)
    for t, tau, tavgdl, blob in con.execute(
            "SELECT d.term, d.tau, d.tavgdl, b.data FROM rank_deep d JOIN rank_deep_blob b"
            f" ON b.term = d.term WHERE d.term IN ({marks})", terms):
        stale = {int(r[0]) for r in con.execute(
            "SELECT doc FROM rank_deep_stale WHERE term = ?", (t,))}
        adds = [(int(d), int(f), int(dl), float(w)) for d, f, dl, w in con.execute(
            "SELECT doc, f, dl, w FROM rank_deep_add WHERE term = ?", (t,))]
        cross: dict[str, bytes] = {}
        if crossed:
            cross = {str(other): bytes(data) for other, data in con.execute(
                "SELECT other, data FROM rank_deep_cross WHERE term = ?"
                f" AND other IN ({marks})", [t, *terms])}
        out[str(t)] = (float(tau), float(tavgdl), bytes(blob), stale, adds, cross)
    return out


def decode(blob: bytes, cross: dict[str, bytes]) -> tuple[
        float, array[int], array[int], array[int], Weights, dict[str, bytes]]:
    """`unpack(blob)` and the cross columns decompressed (a column of another length than
    the blob's is left out)."""
    avgdl, docs, fs, dls, ws = unpack(blob)
    columns = {}
    for other, data in cross.items():
        column = zlib.decompress(data)
        if len(column) == len(docs):
            columns[other] = column
    return avgdl, docs, fs, dls, ws, columns


def load(con: sqlite3.Connection, terms: list[str]) -> dict[str, Deep]:
    """Per word with a deep list: (tau, tavgdl, the blob's avgdl, docs, f, D, w best
    first, stale docs, adds as (doc, f, D, w), cross columns of the other `terms`).
    Read-only."""
    out: dict[str, Deep] = {}
    for t, (tau, tavgdl, blob, stale, adds, cross) in read(con, terms).items():
        avgdl, docs, fs, dls, ws, columns = decode(blob, cross)
        out[t] = (tau, tavgdl, avgdl, docs, fs, dls, ws, stale, adds, columns)
    return out
