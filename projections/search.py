"""The two search engines over history.db.

fts5: every query token is a quoted FTS5 phrase (never syntax) ANDed in the main index;
CJK runs of >= 2 characters match through the bigram side index; single CJK characters
and the non-CJK part of mixed tokens are literal substring conditions. EVERY match is
ranked: s = bm25 x role weight (user prompts above assistant text above tool output), best
first, ties newest first: SQLite's own ranking, one statement (`projections.ranking`, the
reference). The accelerators of `projections.rank` answer some queries with the same hits
sooner (champion lists for words that all have one, when their certificate holds; a query
with many matches ranked on one thread per CPU): one call, `rank.top`; when it returns
None the reference statement ranks every match.

plain: case/diacritic-folded literal substring AND over every token, newest first. Used when
SQLite has no FTS5 or when the caller asks for it. Slower, substring semantics.

Both engines drop hits whose (kind, role, text) repeat an earlier hit (resumed and forked
sessions copy records). `group`: at most one hit per conversation (its best), over at most
`GROUP_ROWS` ranked matches. `prefixes` (the terminal's `zebra*`): those tokens match the
words starting with them (FTS5's `"zebra" *`); such a query is always ranked by the
reference statement (no champion list answers a prefix); CJK and literal parts, and the
plain engine, match substrings anyway.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from projections import cjk, rank, ranking
from projections.filters import Filters
from projections.text import fold, fts_phrase

__all__ = ["distinct", "fts_search", "latest_search", "plain_search", "take"]

GROUP_ROWS = 5_000  # ranked matches a per-conversation search looks through at most

_HIT_COLS = (
    "d.rowid, d.id, d.kind, d.agent, d.at, d.message, d.job, d.run, d.session, d.cursor,"
    " d.conversation, d.project, d.role, d.subagent, d.title, d.text, d.archived"
)


def _plan(tokens: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(main FTS tokens, CJK runs >= 2 chars, literal substrings) of the query tokens."""
    main: list[str] = []
    grams: list[str] = []
    lits: list[str] = []
    for tok in tokens:
        if not cjk.has_cjk(tok):
            main.append(tok)
            continue
        runs, rest = cjk.split_token(tok)
        for run in runs:
            (grams if len(run) >= 2 else lits).append(run)
        lits.extend(rest)
    return main, grams, lits


def fts_search(
    con: sqlite3.Connection, tokens: list[str], filters: Filters, limit: int, *,
    lists: bool = True, prefixes: frozenset[str] | set[str] = frozenset(), group: bool = False,
) -> list[tuple[Any, ...]]:
    """The best `limit` hits over every match (`lists=False`: never from a champion list);
    `prefixes`: tokens that match words starting with them; `group`: one hit a
    conversation."""
    main, grams, lits = _plan(tokens)
    if not main and not grams:
        return plain_search(con, tokens, filters, limit, group=group)
    match, where, params = _match(main, grams, lits, filters, lists, prefixes)
    # Every match is ranked inside SQLite; Python sees a page of rowids at a time (dedupe may
    # need more than one page; one hit a conversation, more rows a page).
    page = max(limit * 20, 200) if group else max(limit * 4, 40)
    pick = take(con, limit, where, params, group=group)
    hits = rank.top(con, match, limit, page, pick)
    if hits is None:
        hits = pick(ranking.pages(con, match.table, match.expr, match.conds, match.params,
                                  page), True)
    return hits


def latest_search(
    con: sqlite3.Connection, tokens: list[str], filters: Filters, limit: int,
) -> list[tuple[Any, ...]]:
    """NOT the ranking: the latest captured of the newest `LATEST_SCAN` matches of the
    full-text expression that satisfy the filters and the query's other conditions, newest
    (highest rowid) first, duplicates dropped: a bounded query, no bm25, a few milliseconds
    whatever the match count (a first page while every match is ranked, shown as such)."""
    main, grams, lits = _plan(tokens)
    if not main and not grams:
        return plain_search(con, tokens, filters, limit)
    match, where, params = _match(main, grams, lits, filters, False)
    t = match.table
    # the lowest rowid of the newest LATEST_SCAN matches (none: fewer matches), then the
    # matches from the newest down, streamed by FTS5 in rowid order (no sort, no bm25)
    low = con.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rowid DESC"
                      " LIMIT 1 OFFSET ?", (match.expr, LATEST_SCAN - 1)).fetchone()
    bound = [int(low[0])] if low is not None else [_LOWEST]
    sql = (f"SELECT {t}.rowid FROM {t} JOIN documents d ON d.rowid = {t}.rowid"
           f" WHERE {t} MATCH ? AND {t}.rowid >= ? AND {match.conds}"
           f" ORDER BY {t}.rowid DESC LIMIT ? OFFSET ?")
    page = max(limit * 4, 40)

    def pages() -> Iterable[list[int]]:
        offset = 0
        while True:
            rowids = [int(r[0]) for r in con.execute(
                sql, [match.expr, *bound, *match.params, page, offset])]
            yield rowids
            if len(rowids) < page:
                return
            offset += page

    return take(con, limit, where, params)(pages(), True)


LATEST_SCAN = 20_000  # matches `latest_search` looks at, at most (the newest)
_LOWEST = -(1 << 63)


def _match(main: list[str], grams: list[str], lits: list[str], filters: Filters,
           lists: bool, prefixes: frozenset[str] | set[str] = frozenset(),
           ) -> tuple[rank.Match, str, list[Any]]:
    """The full-text match of a query's parts (`_plan`'s; `prefixes`: tokens matching the
    words they start) under `filters`, and the filters' own condition over the row `d` with
    its parameters."""
    where, params = filters.where("d")
    conds = [where]
    cparams: list[Any] = list(params)
    if main and grams:
        conds.append("d.rowid IN (SELECT rowid FROM documents_cjk WHERE documents_cjk MATCH ?)")
        cparams.append(_cjk_expr(grams))
    for lit in lits:
        conds.append("instr(fold(d.text), ?) > 0")
        cparams.append(fold(lit))
    if main:
        table = "documents_fts"
        expr = " AND ".join(fts_phrase(t) + (" *" if t in prefixes else "") for t in main)
    else:
        table, expr = "documents_cjk", _cjk_expr(grams)
    prefix = any(t in prefixes for t in main)
    words = main if lists and main and not grams and not lits and not prefix else []
    return (rank.Match(table, expr, " AND ".join(conds), cparams, words, prefix), where,
            params)


def take(con: sqlite3.Connection, limit: int, where: str, params: list[Any], *,
         group: bool = False) -> rank.Take:
    """The hits (at most `limit`) of rowid pages in ranking order: rows fetched, duplicates
    dropped, and the filters (`where` over the row `d`, `Filters.where`) applied unless the
    pages are `filtered` already (in SQL). `group`: only the first (best) hit of each
    conversation, looking through at most `GROUP_ROWS` rowids."""

    def pick(pages: Iterable[list[int]], filtered: bool) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        seen: set[tuple[str, ...]] = set()
        looked = 0
        for rowids in pages:
            if group:
                rowids = rowids[: GROUP_ROWS - looked]
                looked += len(rowids)
            if filtered:
                out += _fetch_dedup(con, rowids, limit - len(out), seen, group=group)
            else:
                out += _fetch_dedup(con, rowids, limit - len(out), seen, where, params,
                                    group=group)
            if len(out) >= limit or (group and looked >= GROUP_ROWS):
                break
        return out

    return pick


def _cjk_expr(grams: list[str]) -> str:
    return " AND ".join(fts_phrase(" ".join(cjk.bigrams(run))) for run in grams)


def _fetch_dedup(
    con: sqlite3.Connection, rowids: list[int], limit: int, seen: set[tuple[str, ...]],
    where: str = "1", params: list[Any] | None = None, *, group: bool = False,
) -> list[tuple[Any, ...]]:
    """The rows of `rowids` (in that order) that satisfy `where`, duplicates dropped, at most
    `limit`."""
    out: list[tuple[Any, ...]] = []
    step = max(limit * 2, 20)
    for i in range(0, len(rowids), step):
        chunk = rowids[i : i + step]
        marks = ",".join("?" * len(chunk))
        rows = con.execute(
            f"SELECT {_HIT_COLS} FROM documents d WHERE d.rowid IN ({marks}) AND {where}",
            [*chunk, *(params or [])]).fetchall()
        by_id = {int(r[0]): r for r in rows}
        for rid in chunk:
            row = by_id.get(rid)
            if row is None or not _fresh(row, seen, group):
                continue
            out.append(tuple(row))
            if len(out) >= limit:
                return out
    return out


def distinct(rows: Iterable[tuple[Any, ...]], limit: int, group: bool = False
             ) -> list[tuple[Any, ...]]:
    """The first `limit` of hit rows (best first) after the duplicate drop every search makes,
    and with `group` one a conversation: for lists merged outside SQL (search by meaning)."""
    out: list[tuple[Any, ...]] = []
    seen: set[tuple[str, ...]] = set()
    for row in rows:
        if _fresh(row, seen, group):
            out.append(row)
            if len(out) >= limit:
                break
    return out


def _fresh(row: Any, seen: set[tuple[str, ...]], group: bool = False) -> bool:
    # the text itself (not a digest): no hashlib on the search path, and no collisions
    key = (str(row[2]), str(row[12]), str(row[15]))
    if key in seen:
        return False
    if group:  # a 1-tuple: never equal to a (kind, role, text) key
        conv = (str(row[10] or row[1]),)
        if conv in seen:
            return False
        seen.add(conv)
    seen.add(key)
    return True


def plain_search(
    con: sqlite3.Connection, tokens: list[str], filters: Filters, limit: int, *,
    group: bool = False,
) -> list[tuple[Any, ...]]:
    where, params = filters.where("d")
    conds = [where] + ["instr(fold(d.text), ?) > 0"] * len(tokens)
    params = params + [fold(t) for t in tokens]
    sql = (
        f"SELECT {_HIT_COLS} FROM documents d WHERE {' AND '.join(conds)}"
        " ORDER BY d.at DESC, d.rowid DESC LIMIT ?"
    )
    out: list[tuple[Any, ...]] = []
    seen: set[tuple[str, ...]] = set()
    fetch = max(limit * 20, 200) if group else limit * 3
    offset = 0
    while len(out) < limit:
        rows = con.execute(sql + " OFFSET ?", [*params, fetch, offset]).fetchall()
        for row in rows:
            if _fresh(row, seen, group):
                out.append(tuple(row))
                if len(out) >= limit:
                    break
        if len(rows) < fetch or (group and offset + fetch >= GROUP_ROWS):
            break
        offset += fetch
    return out
