"""Exact ranking of an AND query of several common words from their champion lists.

FTS5's bm25 of a query of phrases t_1..t_m (each one word) in a document d of D tokens is
-sum_i idf_i * g(f_i, D) (`projections.rank`); the ranking orders by s = bm25 x w(d), best
(most negative) first, ties newest first. With v_i = w * g(f_i, D), -s = sum_i idf_i * v_i,
and a document absent from word i's champion list has v_i <= T_i = tau_i * max(1, avgdl_now
/ avgdl_list) (the one-word certificate's bound). So (Fagin's threshold algorithm):

- every match that is in no list of the query's words (and neither new nor changed since
  the lists' watermark `wm`) has -s <= U = sum_i idf_i * T_i;
- the candidates are the union of the words' lists (minus changed documents) plus the new
  and changed documents; each is scored exactly — from the lists when it is in all of them,
  else from its text tokenized by FTS5 itself (`rank.frequencies`) — after an upper bound
  (T_i for the words whose list lacks it) shows it can beat U at all;
- hits are taken from the candidates only while they beat U strictly (search._certified),
  so the answer is the full ranking's, or None and the caller ranks every match.

Promises: scores are FTS5's formula in its operation order (bit-identical doubles); idf
needs each word's exact document count now: `rank_terms.df` is the count as of `wm`
(build/refresh keep it so) plus the new and changed documents' hits minus the hits of their
texts as of `wm` (`rank_was`, filled by the rank_dirty triggers). Files without `rank_was`
(made before it), words without a list, tokens that are not one indexed term, more than
`rank.FRESH_MAX` new/changed documents: None (full ranking). Read-only on the query side.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from typing import Any

from projections import rank, rank_tokens

MAX_TOKENIZE = 4_000  # candidates a query tokenizes at most; beyond: rank every match
FULL_BELOW = 5_000  # fewer matches expected (words independent): ranking them all is cheaper
PER_MATCH = 32  # expected matches per candidate a query may tokenize (ranking one is ~30x cheaper)

Accept = Callable[[list[tuple[float, int]], float], list[tuple[Any, ...]] | None]


def _score(fs: list[int], dl: int, w: float, idfs: list[float], avgdl: float) -> float:
    """-s: FTS5's bm25 sum in its phrase order, times the weight as SQL does."""
    score = 0.0
    for f, i in zip(fs, idfs, strict=True):
        score += i * rank.tf(float(f), float(dl), avgdl)
    return -((-1.0 * score) * w)


def search(
    con: sqlite3.Connection, tokens: list[str], accept: Accept,
    text_of: rank.TextOf = rank.texts_of,
) -> list[tuple[Any, ...]] | None:
    """The hits `accept(scored, threshold)` makes of the certified candidates, or None when
    the lists cannot answer (the caller ranks every match). `scored` is best first as
    (-s, rowid); every match not in it has -s <= threshold; `accept` returns None when it
    needs more (fewer hits beat the threshold than it wants after filters and dedupe).
    Candidates whose score needs their text are tokenized best upper bound first, in
    growing batches, until `accept` is satisfied or the threshold is the bound U."""
    got = _prepare(con, tokens, text_of)
    if got is None:
        return None
    scored, unsure, bound, words, phrases, idfs, a_now, budget = got
    done = 0
    batch = 50
    while True:
        scored.sort(key=lambda c: (-c[0], -c[1]))
        threshold = max(bound, unsure[done][0]) if done < len(unsure) else bound
        hits = accept([c for c in scored if c[0] > threshold], threshold)
        if hits is not None or done >= len(unsure):
            return hits
        if done + batch > budget:  # ranking every match is likely cheaper
            return None
        chunk = [d for _, d in unsure[done : done + batch]]
        done += len(chunk)
        batch *= 2
        docs = text_of(con, chunk)
        freq, sizes = rank_tokens.counts(((r, t) for r, t, _, _ in docs), words)
        for r, _, role, kind in docs:
            fs = [freq.get((t, r), 0) for t in phrases]
            if all(fs):
                scored.append((_score(fs, sizes[r], rank.weight(role, kind), idfs, a_now), r))


def _prepare(
    con: sqlite3.Connection, tokens: list[str], text_of: rank.TextOf
) -> tuple[list[tuple[float, int]], list[tuple[float, int]], float, list[str], list[str],
           list[float], float, int] | None:
    """(exactly scored candidates, the others as (upper bound, rowid) best first, U, the
    distinct words, the phrases' words, their idf, avgdl now, how many of the others may
    be tokenized), or None."""
    terms = [rank.index_term(t) for t in tokens]
    if len(terms) < 2 or not rank.has_lists(con) or not rank.has_was(con):
        return None
    words = sorted({t for t in terms if t is not None})
    if len(words) < len(set(terms)):  # a token that is not one indexed term
        return None
    phrases = [t for t in terms if t is not None]
    marks = ",".join("?" * len(words))
    rows = {str(t): (float(tau), float(a), int(df)) for t, tau, a, df in con.execute(
        f"SELECT term, tau, avgdl, df FROM rank_terms WHERE term IN ({marks})"
        " AND tau IS NOT NULL", words)}
    meta = con.execute("SELECT wm FROM rank_meta WHERE id = 1").fetchone()
    if len(rows) < len(words) or meta is None:
        return None
    wm = int(meta[0])
    pending = int(con.execute(
        "SELECT count(*) FROM (SELECT 1 FROM documents WHERE rowid > ? LIMIT ?)",
        (wm, rank.FRESH_MAX + 1)).fetchone()[0])
    dirty = {int(r[0]) for r in con.execute("SELECT doc FROM rank_dirty")}
    if pending + len(dirty) > rank.FRESH_MAX:
        return None
    fresh = rank_tokens.fresh_docs(con, wm)
    docs = text_of(con, fresh) if fresh else []
    freq, sizes = rank_tokens.counts(((r, t) for r, t, _, _ in docs), words)
    now = Counter(t for t, _ in freq)
    gone = rank_tokens.was_hits(con, wm, words)
    nrow, ntok = rank.totals(con)
    if not nrow:
        return None
    a_now = ntok / nrow
    hits = {t: df + now[t] - gone[t] for t, (_, _, df) in rows.items()}
    expect = float(nrow)
    for n in hits.values():
        expect *= n / nrow
    if expect < FULL_BELOW:
        return None
    idf = {t: rank.idf(nrow, n) for t, n in hits.items()}
    idfs = [idf[t] for t in phrases]
    top = {t: tau * max(1.0, a_now / a) * (1 + rank.MARGIN) for t, (tau, a, _) in rows.items()}
    bound = sum(i * top[t] for i, t in zip(idfs, phrases, strict=True)) * (1 + rank.MARGIN)
    scored = []
    for r, _, role, kind in docs:
        fs = [freq.get((t, r), 0) for t in phrases]
        if all(fs):
            scored.append((_score(fs, sizes[r], rank.weight(role, kind), idfs, a_now), r))
    skip = dirty | set(fresh)
    known: dict[int, dict[str, int]] = {}
    shape: dict[int, tuple[int, float]] = {}
    for t in words:
        for d, f, dl, w in con.execute(
                "SELECT doc, f, dl, w FROM rank_champions WHERE term = ? AND doc <= ?",
                (t, wm)).fetchall():
            if d not in skip:
                known.setdefault(d, {})[t] = f
                shape[d] = (dl, w)
    # an upper bound: the words whose list lacks the document count at their bound T
    weight_of = {t: sum(i for i, p in zip(idfs, phrases, strict=True) if p == t) for t in words}
    free = sum(weight_of[t] * top[t] for t in words)
    unsure = []
    for d, fs_of in known.items():
        dl, w = shape[d]
        if len(fs_of) == len(words):
            scored.append((_score([fs_of[t] for t in phrases], dl, w, idfs, a_now), d))
            continue
        upper = free
        for t, f in fs_of.items():
            upper += weight_of[t] * (w * rank.tf(float(f), float(dl), a_now) - top[t])
        upper = upper * (1 + rank.MARGIN) + bound * rank.MARGIN
        if upper > bound:  # it might beat U: its exact score decides
            unsure.append((upper, d))
    unsure.sort(key=lambda c: (-c[0], -c[1]))
    budget = min(MAX_TOKENIZE, int(expect / PER_MATCH))
    return scored, unsure, bound, words, phrases, idfs, a_now, budget
