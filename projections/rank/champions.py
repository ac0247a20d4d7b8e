"""Exact ranking of every match of a common word: champion lists with a certificate.

The ranking (docs/search.md) is s = bm25(documents_fts) x role weight, best (most negative)
first, ties by rowid descending, over EVERY match. FTS5's bm25 of one word t in a document
of D tokens with f occurrences is -idf(t) * g(f, D), g = f(k1+1) / (f + k1(1-b+b*D/avgdl)).
Ranking all matches costs ~2 µs a match, too much for a word in most of a million documents,
so for each word in more than `HOT_DF` documents a champion list keeps the `CHAMPIONS`
documents with the largest v = w * g (at the `avgdl` the list was made with) and their (f, D,
w); `tau` bounds v of every other document of the word.

Promises:
- a one-word query is answered from the list only with a certificate: the new documents
  (rowid > `wm`) and the changed ones (`rank_dirty`, filled by triggers on UPDATE/DELETE)
  that match are scored from their current text, tokenized by FTS5 itself in an in-memory
  table with the same tokenizer; every other match has v <= tau * max(1, avgdl_now /
  avgdl_ref) (g grows with avgdl at most by that ratio); each returned hit's v beats that
  bound strictly. Otherwise `candidates` returns None and the caller ranks every match:
  never a silently different top-k. idf is one positive factor for one word, so it does
  not change the order;
- scores are computed with FTS5's own formula and operation order (bit-identical doubles);
- `refresh` (every catch-up that applied documents) folds the new and changed documents into
  the lists (same bound, carried forward), a few at a time so no one capture pays for a
  thousand; wanted lists are made by `make_wanted` in bounded steps, off the hook and
  one-shot capture path (the capture loop, `reindex`); `build` (rebuild) makes them from
  scratch;
- `rank_terms.df` is the word's document count as of `wm`, exactly (multi-word idf,
  `projections.rank.multi`): build counts it, refresh adds the fresh documents' hits and
  subtracts those of `rank_was` (the text a changed document had at `wm`), a list made
  later subtracts what changed since `wm`. The tables (projections.rank.schema) are a
  cache of documents_fts: `drift` does not compare them, and a missing or stale list only
  costs time.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable

from projections.rank import deep, scan
from projections.rank.bm25 import K1, B, idf, tf, weight
from projections.rank.tokens import (
    TextOf,
    df_since,
    frequencies,
    fresh_docs,
    has_was,
    index_term,
    texts_of,
    totals,
    varints,
    was_hits,
)
from projections.text import fts_phrase

HOT_DF = 5_000  # a word in more documents gets a champion list
CHAMPIONS = 1000  # documents kept per word (fewer: ties at the bound fail more often)
FRESH_MAX = 2_000  # new/changed matches a query scores itself; beyond: rank every match
REFRESH_AT = 1_000  # new/changed documents that make refresh() fold without `force`
MARGIN = 1e-9  # relative slack for the bound's own rounding
ADOPT_TOP = 20  # refresh checks the words in most new documents for a new list
BUILD_BUDGET = 3  # a rebuild makes lists until it ranked this many matches per document
STEP = 100_000  # matches a refresh ranks to make wanted lists (~0.2 s)

def has_lists(con: sqlite3.Connection) -> bool:
    return con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rank_meta'"
    ).fetchone() is not None


# -- building and refreshing (writers) -------------------------------------------------------

def build(con: sqlite3.Connection, *, hot_df: int | None = None,
          budget: int | None = None, workers: int = 1,
          vocab: list[tuple[str, int]] | None = None, make: bool = True) -> int:
    """Make the champion lists from scratch: every word in more than `hot_df` documents is
    wanted; lists are made hottest first until the matches ranked would exceed `budget`
    (None: all; at least one); with `make` False none is made: every such word stays
    wanted. The rest wait for `refresh`. Returns the lists made. `workers` > 1 (a
    rebuild, outside a transaction): the matches are ranked on that many threads
    (projections.rank.scan, same lists). `vocab`: every word of documents_fts in more than
    `hot_df` documents with that count (fts5vocab's), when the caller already read it."""
    hot = HOT_DF if hot_df is None else hot_df
    for table in ("rank_champions", "rank_terms", "rank_dirty", "rank_meta"):
        con.execute(f"DELETE FROM {table}")
    if has_was(con):
        con.execute("DELETE FROM rank_was")
    deep.drop(con)
    nrow, ntok = totals(con)
    wm = int(con.execute("SELECT coalesce(max(rowid), 0) FROM documents").fetchone()[0])
    con.execute("INSERT INTO rank_meta(id, wm, avgdl) VALUES (1, ?, ?)",
                (wm, ntok / nrow if nrow else 1.0))
    if not nrow:
        return 0
    if vocab is None:  # fts5vocab (projections.db)
        vocab = [(str(t), int(df)) for t, df in con.execute(
            "SELECT term, doc FROM documents_fts_terms WHERE doc > ?", (hot,))]
    con.executemany("INSERT INTO rank_terms(term, df) VALUES (?, ?)", vocab)
    return make_wanted(con, budget, workers) if make else 0


def make_wanted(con: sqlite3.Connection, budget: int | None, workers: int = 1) -> int:
    """Make the wanted lists, hottest first, within `budget` matches ranked (at least one);
    `workers`: as `build`."""
    nrow, ntok = totals(con)
    if not nrow:
        return 0
    avgdl = ntok / nrow
    spent = made = 0
    chosen: list[str] = []
    for term, df in con.execute("SELECT term, df FROM rank_terms WHERE tau IS NULL"
                                " ORDER BY df DESC, term").fetchall():
        if budget is not None and spent + df > budget and spent:
            break
        spent += df
        chosen.append(str(term))
    if not chosen:
        return 0
    since = df_since(con, [str(r[0]) for r in con.execute(  # df now - df as of wm
        "SELECT term FROM rank_terms WHERE tau IS NULL")])
    dfs = {term: scan.count(con, term) for term in chosen}
    jobs = [(term, max(CHAMPIONS, deep.depth(dfs[term], CHAMPIONS)), dfs[term])
            for term in chosen]
    if workers > 1 and any(limit > CHAMPIONS for _, limit, _ in jobs):
        deep.ensure(con)  # the deep tables made before the workers connect (a schema change
        # while one connects fails its first statement: scan.CONNECT_TRIES)
    for term, rows in scan.ranked_all(con, jobs, workers):
        if _build_one(con, term, nrow, avgdl, since.get(term, 0), dfs[term], rows):
            made += 1
        else:
            con.execute("DELETE FROM rank_terms WHERE term = ?", (term,))
    return made


def _build_one(con: sqlite3.Connection, term: str, nrow: int, avgdl: float, since: int,
               df: int, rows: list[scan.Row]) -> bool:
    """Keep the best `CHAMPIONS` of `term`'s ranked matches (FTS5's bm25 x weight, best
    first: `scan`) with (f, D) recovered exactly from the score (D from FTS5's
    docsize), and for a very common word the deeper list of `projections.rank.deep` from
    the same ranking. False: no list."""
    depth = deep.depth(df, CHAMPIONS)
    if len(rows) < CHAMPIONS:
        return False
    i = idf(nrow, df)
    sizes = dict(_docsizes(con, [int(r[0]) for r in rows]))
    out: list[tuple[str, int, int, int, float]] = []
    for rowid, b, w in rows:
        dl = sizes[int(rowid)]
        g = -b / i
        k = K1 * (1 - B + B * dl / avgdl)
        f = round(g * k / (K1 + 1.0 - g)) if g < K1 + 1.0 else 0
        if f < 1 or -1.0 * (0.0 + i * tf(float(f), float(dl), avgdl)) != b:
            if len(out) < CHAMPIONS:
                return False  # (f, D) not recovered exactly: no list (the full ranking)
            depth = 0  # no deep list; the champions stand
            break
        out.append((term, int(rowid), f, dl, float(w)))
    champions = out[:CHAMPIONS]
    con.execute("DELETE FROM rank_champions WHERE term = ?", (term,))
    con.executemany("INSERT INTO rank_champions(term, doc, f, dl, w) VALUES (?, ?, ?, ?, ?)",
                    champions)
    tau = min(w * tf(float(f), float(dl), avgdl) for _, _, f, dl, w in champions)
    con.execute("UPDATE rank_terms SET df = ?, tau = ?, avgdl = ? WHERE term = ?",
                (df - since, tau, avgdl, term))
    if depth and len(out) > CHAMPIONS:
        entries = [(d, f, dl, w) for _, d, f, dl, w in out]
        low = min(w * tf(float(f), float(dl), avgdl) for _, f, dl, w in entries)
        deep.store(con, term, low, avgdl, entries)
    else:
        deep.drop(con, term)
    return True


def _docsizes(con: sqlite3.Connection, rowids: list[int]) -> Iterable[tuple[int, int]]:
    for i in range(0, len(rowids), 500):
        chunk = rowids[i : i + 500]
        for rid, sz in con.execute(f"SELECT id, sz FROM documents_fts_docsize WHERE id IN"
                                   f" ({','.join('?' * len(chunk))})", chunk):
            yield int(rid), varints(bytes(sz))[0]


def refresh(con: sqlite3.Connection, *, force: bool = False, step: int | None = STEP,
            text_of: TextOf = texts_of) -> bool:
    """Once `REFRESH_AT` new or changed documents wait (or with `force`: any): fold them
    into the lists, adopt words that became common, and make wanted lists within `step`
    matches ranked (`step` 0: none; catch-up passes 0 and leaves them to the capture loop
    and `reindex`). Call inside a write transaction; True when anything changed."""
    if not has_lists(con):
        return False
    meta = con.execute("SELECT wm FROM rank_meta WHERE id = 1").fetchone()
    if meta is None:
        return False
    wm = int(meta[0])
    pending = int(con.execute("SELECT count(*) FROM documents WHERE rowid > ?",
                              (wm,)).fetchone()[0])
    pending += int(con.execute("SELECT count(*) FROM rank_dirty").fetchone()[0])
    if pending < REFRESH_AT and not (force and pending):
        return False
    nrow, ntok = totals(con)
    a_now = ntok / nrow if nrow else 1.0
    lists = {str(t): (float(tau), float(a)) for t, tau, a in con.execute(
        "SELECT term, tau, avgdl FROM rank_terms WHERE tau IS NOT NULL")}
    fresh = fresh_docs(con, wm)
    freq: dict[tuple[str, int], int] = {}
    sizes: dict[int, int] = {}
    weights: dict[int, float] = {}
    common: set[str] = set()
    for i in range(0, len(fresh), 2000):
        docs = text_of(con, fresh[i : i + 2000])
        weights.update((r, weight(role, kind)) for r, _, role, kind in docs)
        fq, sz, top = frequencies(((r, t) for r, t, _, _ in docs), list(lists), ADOPT_TOP)
        freq.update(fq)
        sizes.update(sz)
        common.update(top)
    # Changed documents leave the lists (their new text is fresh); every bound is carried to
    # today's avgdl; a fresh document joins a list when it beats the bound (else the bound
    # covers it); a list grown past twice its size is cut back to its best.
    con.execute("DELETE FROM rank_champions WHERE doc IN (SELECT doc FROM rank_dirty)")
    if has_was(con):  # df as of the new wm: + fresh documents with the word - old texts
        gone = was_hits(con, wm, list(lists))
        now = Counter(t for t, _ in freq)
        con.executemany("UPDATE rank_terms SET df = df + ? WHERE term = ?",
                        [(now[t] - gone.get(t, 0), t) for t in lists])
        con.execute("DELETE FROM rank_was")
    con.execute("UPDATE rank_terms SET tau = tau * max(1.0, ? / avgdl), avgdl = ?"
                " WHERE tau IS NOT NULL", (a_now, a_now))
    taus = {t: tau * max(1.0, a_now / a) for t, (tau, a) in lists.items()}
    bounds = deep.fold_marks(con, a_now)  # changed documents leave the deep lists too
    joins = []
    deeper = []
    for (term, doc), f in freq.items():
        dl, w = sizes[doc], weights[doc]
        v = w * tf(float(f), float(dl), a_now)
        if v > taus[term]:
            joins.append((term, doc, f, dl, w))
        if term in bounds and v > bounds[term]:
            deeper.append((term, doc, f, dl, w))
    con.executemany("INSERT OR REPLACE INTO rank_champions(term, doc, f, dl, w)"
                    " VALUES (?, ?, ?, ?, ?)", joins)
    if deeper:
        con.executemany("INSERT OR REPLACE INTO rank_deep_add(term, doc, f, dl, w)"
                        " VALUES (?, ?, ?, ?, ?)", deeper)
    for term in sorted({j[0] for j in joins}):
        size = con.execute("SELECT count(*) FROM rank_champions WHERE term = ?",
                           (term,)).fetchone()[0]
        if size > 2 * CHAMPIONS:
            _trim(con, term, taus[term], a_now)
    last = int(con.execute("SELECT coalesce(max(rowid), 0) FROM documents").fetchone()[0])
    con.execute("UPDATE rank_meta SET wm = ?, avgdl = ? WHERE id = 1", (max(wm, last), a_now))
    con.execute("DELETE FROM rank_dirty")
    known = {str(r[0]) for r in con.execute("SELECT term FROM rank_terms")}
    for term in sorted(common - known):
        df = int(con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                             (fts_phrase(term),)).fetchone()[0])
        if df > HOT_DF:  # a word that became common since: wanted
            con.execute("INSERT INTO rank_terms(term, df) VALUES (?, ?)", (term, df))
    if step != 0:
        make_wanted(con, step)
    return True


def _trim(con: sqlite3.Connection, term: str, tau: float, avgdl: float) -> None:
    cands = [(int(d), int(f), int(dl), float(w)) for d, f, dl, w in con.execute(
        "SELECT doc, f, dl, w FROM rank_champions WHERE term = ?", (term,))]
    cands.sort(key=lambda c: (-c[3] * tf(float(c[1]), float(c[2]), avgdl), -c[0]))
    last = cands[CHAMPIONS - 1]
    tau = max(tau, last[3] * tf(float(last[1]), float(last[2]), avgdl))
    con.executemany("DELETE FROM rank_champions WHERE term = ? AND doc = ?",
                    [(term, c[0]) for c in cands[CHAMPIONS:]])
    con.execute("UPDATE rank_terms SET tau = ? WHERE term = ?", (tau, term))


# -- the query side (read-only) --------------------------------------------------------------

def candidates(
    con: sqlite3.Connection, token: str, text_of: TextOf = texts_of
) -> tuple[list[tuple[float, int]], float] | None:
    """Every document that can outrank the bound, best first as (v, rowid), and the bound
    (every other match of `token` has v <= bound); None when the list cannot answer."""
    term = index_term(token)
    if term is None or not has_lists(con):
        return None
    row = con.execute("SELECT tau, avgdl FROM rank_terms WHERE term = ? AND tau IS NOT NULL",
                      (term,)).fetchone()
    meta = con.execute("SELECT wm FROM rank_meta WHERE id = 1").fetchone()
    if row is None or meta is None:
        return None
    tau, a_ref, wm = float(row[0]), float(row[1]), int(meta[0])
    phrase = fts_phrase(term)
    dirty = [int(r[0]) for r in con.execute("SELECT doc FROM rank_dirty WHERE doc <= ?", (wm,))]
    fresh = [int(r[0]) for r in con.execute(
        "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? AND rowid > ?"
        f" LIMIT {FRESH_MAX + 1}", (phrase, wm))]
    for i in range(0, len(dirty), 500):
        chunk = dirty[i : i + 500]
        fresh += [int(r[0]) for r in con.execute(
            "SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? AND rowid IN"
            f" ({','.join('?' * len(chunk))})", [phrase, *chunk])]
        if len(fresh) > FRESH_MAX:
            break
    if len(fresh) > FRESH_MAX:
        return None
    nrow, ntok = totals(con)
    a_now = ntok / nrow if nrow else a_ref
    skip = set(dirty)
    scored = [(w * tf(float(f), float(dl), a_now), int(d)) for d, f, dl, w in con.execute(
        "SELECT doc, f, dl, w FROM rank_champions WHERE term = ? AND doc <= ?", (term, wm))
        if int(d) not in skip]
    if fresh:
        docs = text_of(con, fresh)
        freq, sizes, _ = frequencies(((r, t) for r, t, _, _ in docs), [term])
        scored += [(weight(role, kind) * tf(float(freq[(term, r)]), float(sizes[r]), a_now), r)
                   for r, _, role, kind in docs if (term, r) in freq]
    scored.sort(key=lambda c: (-c[0], -c[1]))
    return scored, tau * max(1.0, a_now / a_ref) * (1 + MARGIN)
