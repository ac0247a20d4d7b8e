"""Ranking accelerators behind one door: SQLite's own ranking's answers, sooner.

The reference is SQLite's ranking (`projections.ranking`): s = bm25(fts table) x role weight
over EVERY match, best first, ties by rowid descending, one statement. It costs ~1.3 µs a
match, too much for a word in most of a million documents; the accelerators answer such
queries with the same hits, in the same order:

- `champions`: per common word (in more than `HOT_DF` documents) its best `CHAMPIONS`
  documents and a bound of every other; a one-word query is answered from them when the
  certificate holds (the hits beat the bound of every match not scored);
- `multi`, over `deep`: an AND of several common words by the threshold algorithm over
  their champion lists, or the deeper lists of the very common words;
- `split`: a query with many matches ranked on one thread per CPU, by rowid range (the
  reference statement on each range, merged by its own key);
- what the lists are made and kept with: `scan` (every match of a word ranked, on threads
  in a rebuild), `tokens` (FTS5's own tokenizing of a few texts), `bm25` (FTS5's formula
  in Python: the one private copy of the engine's ranking, held equal to it, scores
  included, by tests/test_rank_reference.py), `schema` (the tables).

The door: `top` for the query layer (None: no accelerator answers, run the reference);
`build`, `fold` and `step` for rebuild, catch-up and the idle capture loop; `build_apart`
and `copy_lists` for a rebuild that makes its lists beside the query-index sort
(projections.bulk_tail). projections.db creates the tables from `schema` itself (this
package imports no projections.db: `split`'s threads open their readers through the
caller's `projections.db.Connection`). Real annotations here (no `from __future__ import
annotations`): `Match` is a named tuple, and a catch-up that loads this door to fold
compiles no string annotation (docs/history/performance-journal.md, "Annotations")."""

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from projections.rank import champions, deep, multi, schema, split, tokens
from projections.rank.multi import Accept

Take = Callable[[Iterable[list[int]], bool], list[Any]]
SMALL_HOME = 20  # a rebuild of at most SMALL_HOME x HOT_DF documents makes no list (`build`)


class Match(NamedTuple):
    """What a full-text query matches: the rows of `table MATCH expr` whose `documents` row
    `d` satisfies `conds` (with `params`). `words`: the query's tokens when the match is
    their AND and `conds` only the caller's filters (champion lists may answer), else [].
    `prefix`: `expr` holds a prefix query (`"zebra" *`): no accelerator answers it."""

    table: str
    expr: str
    conds: str
    params: list[Any]
    words: list[str]
    prefix: bool = False


def top(con: sqlite3.Connection, match: Match, limit: int, page: int,
        take: Take) -> list[Any] | None:
    """The caller's best `limit` hits, from an accelerator; None when none answers (the
    caller runs the reference, `projections.ranking.pages`). `take(pages, filtered)` makes
    the caller's hits (at most `limit`) of rowids given in ranking order, page by page:
    duplicates dropped and, unless `filtered` (the pages come from SQL that applied
    `conds`), the caller's filters applied. `page`: the rowids a page of the full ranking
    holds. None for a prefix query (`match.prefix`): the lists know whole words only, and
    the reference ranks it."""
    if match.prefix:
        return None
    if match.words:
        hits = certified(con, match.words, limit, take)
        if hits is not None:
            return hits
    ranked = split.pages(con, match.table, match.expr, match.conds, match.params, page)
    if ranked is None:
        return None
    try:
        return take(ranked, True)
    finally:
        ranked.close()


def certified(con: sqlite3.Connection, words: list[str], limit: int,
              take: Take) -> list[Any] | None:
    """The best `limit` hits of the AND of `words` from the champion lists (one word:
    `champions`, several: `multi`), or None when the lists cannot certify them."""
    accept = certify(limit, take)
    if len(words) == 1:
        got = champions.candidates(con, words[0])
        return None if got is None else accept(*got)
    return multi.search(con, words, accept)


def use_arrays() -> None:
    """This process searches many times: score crossed deep lists as arrays from now on
    (`multi.use_arrays`; numpy's import paid now, once)."""
    multi.use_arrays()


def certify(limit: int, take: Take) -> Accept:
    """The certificate: of candidates (v, rowid) best first, only those beating the bound of
    every other match count, and they must make `limit` hits (after the caller's filters and
    de-duplication), else None (rank every match)."""

    def accept(scored: list[tuple[float, int]], bound: float) -> list[Any] | None:
        hits = take([[rid for v, rid in scored if v > bound]], False)
        return hits if len(hits) >= limit else None

    return accept


# -- upkeep: rebuild, catch-up, the idle capture loop ----------------------------------------

def hot_df() -> int:
    """Documents a word must be in more than to get a champion list."""
    return champions.HOT_DF


def build(con: sqlite3.Connection, *, workers: int = 1,
          vocab: list[tuple[str, int]] | None = None) -> int:
    """Make the champion lists from scratch (a rebuild; the rank tables emptied first): the
    most common words' first, until `champions.BUILD_BUDGET` matches per document were
    ranked (the rest are made by `step`), ranked on `workers` threads (outside a
    transaction). `vocab`: every word in more than `hot_df()` documents with that count,
    when the caller read it. Returns the lists made."""
    nrow = max(1, tokens.totals(con)[0])
    # a small home does not pay for lists at its (first) build: ranking every match of a
    # word costs ~0.9 µs a match (session 34: the three commonest words of a 50,681-document
    # home, 42 ms against 2.3 ms from their lists), so below SMALL_HOME x HOT_DF documents
    # ~0.1 s at the very most; making the lists there took 0.45 s of the build's tail; the
    # words are still wanted, and upkeep makes their lists later
    small = nrow <= SMALL_HOME * champions.HOT_DF
    return champions.build(con, budget=champions.BUILD_BUDGET * nrow, workers=workers,
                           vocab=vocab, make=not small)


def fold(con: sqlite3.Connection) -> bool:
    """Fold the documents new or changed since the lists were made into them (catch-up,
    inside its write transaction; no list is made here). True when anything changed."""
    return champions.refresh(con, force=True, step=0)


def step(con: sqlite3.Connection) -> int | None:
    """One bounded step of list upkeep (call outside a transaction): the wanted lists, one
    short write transaction of `champions.STEP` matches ranked; once none is wanted, the
    cross columns of one of the hottest words' deep lists (~0.5 s of reading and counting
    texts outside any transaction, one short write); then the stale marks of documents a
    deep list does not hold, dropped. Returns the lists, cross columns and compactions
    made, or None when there is nothing (more) to do now."""
    if not champions.has_lists(con):
        return None
    if not con.execute("SELECT 1 FROM rank_terms WHERE tau IS NULL LIMIT 1").fetchone():
        crossing = deep.cross_wanted(con, champions.CHAMPIONS)
        untidy = [] if crossing else deep.untidy(con)
        if not crossing and not untidy:
            return None
        if crossing and not deep.make_cross(con, crossing[0], champions.CHAMPIONS):
            return None  # (remade meanwhile: a later step tries again)
        if untidy and not any(deep.compact(con, t) for t in untidy[:16]):
            return None  # (the marks left are the lists' own)
        return 1
    con.execute("BEGIN IMMEDIATE")
    try:
        made = champions.make_wanted(con, champions.STEP)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    return made


def build_apart(files: list[tuple[str, Path]], workers: int,
                vocab: list[tuple[str, int]] | None) -> sqlite3.Connection:
    """The champion lists made in the rank tables of an in-memory database (returned open)
    from files attached under their names (a rebuild's side file of the rows' weights and
    its scratch full-text index: projections.bulk_tail); `build`'s lists, bit for bit."""
    lcon = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        for name, path in files:
            lcon.execute(f"ATTACH DATABASE ? AS {name}", (str(path),))
        lcon.executescript(schema.SCHEMA)
        # no `rank_was`: it only ever holds changed documents' old texts (none in a build),
        # and reading it would need agentlog's own SQL functions
        lcon.execute("DROP TABLE rank_was")
        build(lcon, workers=workers, vocab=vocab)
    except BaseException:
        lcon.close()
        raise
    return lcon


def copy_lists(lcon: sqlite3.Connection, con: sqlite3.Connection, path: Path) -> None:
    """The rank tables of `lcon` (`build_apart`'s) into the new file at `path`, `con`'s (its
    deep-list tables made first when the lists made any, as `deep.store` does on the file
    itself)."""
    if deep.has_deep(lcon):
        deep.ensure(con)
    tables = [str(r[0]) for r in lcon.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' ORDER BY rowid")]
    lcon.execute("ATTACH DATABASE ? AS new", (str(path),))
    try:
        lcon.execute("PRAGMA new.journal_mode = OFF")  # private until the swap
        lcon.execute("PRAGMA new.synchronous = OFF")
        lcon.execute("BEGIN")
        for table in tables:
            lcon.execute(f"DELETE FROM new.{table}")
            lcon.execute(f"INSERT INTO new.{table} SELECT * FROM main.{table}")
        lcon.execute("COMMIT")
    finally:
        if lcon.in_transaction:
            lcon.execute("ROLLBACK")
        lcon.execute("DETACH DATABASE new")
