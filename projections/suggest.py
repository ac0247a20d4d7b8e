""""Did you mean": the index's own words nearest a query word that matches nothing.

Promises:
- only a literal word of the fts5 engine is looked at (not a prefix `zebra*`, not CJK, not
  a token FTS5 does not index as one term), and only when no document holds it: its term
  (FTS5's own folding, `rank.tokens.index_term`) is not in `documents_fts_terms`
  (fts5vocab, projections.db);
- the candidates are the index's terms that start with the word's first two characters,
  or with its first and third (a character too many, or two swapped, at the second place),
  within `max_edits` of it by Levenshtein distance (rapidfuzz, in C): 1 for words of up to
  5 characters, 2 for longer ones, none under `MIN_CHARS`. A typo in the first character,
  or a wrong or missing second one, is not suggested for: fts5vocab costs ~4 µs a term
  read, and one first letter's share of 1.85M terms took 0.2–0.45 s (two characters'
  shares: docs/search.md "Did you mean");
- the best `SUGGESTIONS` by distance, then document frequency (more first), then the term;
- bounded: fts5vocab counts a term's documents by walking its doclist, so the words in
  more than `rank.hot_df()` documents (their counts are `rank_terms.df`) are stepped over
  by range rather than walked, and the scan reads at most `MAX_TERMS` terms.
Read-only.
"""

from __future__ import annotations

import sqlite3

from projections import cjk
from projections.rank import tokens

SUGGESTIONS = 3
MIN_CHARS = 3
MAX_TERMS = 200_000
_BEFORE = "\U0010ffff" * 8  # after every term this far below a bound (terms are shorter)


def max_edits(term: str) -> int:
    """The largest Levenshtein distance a suggestion may be from `term`."""
    if len(term) < MIN_CHARS:
        return 0
    return 1 if len(term) <= 5 else 2


def suggest(con: sqlite3.Connection, words: list[str]) -> dict[str, list[str]]:
    """{word: nearest indexed words} for each of `words` that no document holds (a word
    with nothing near it is left out)."""
    out: dict[str, list[str]] = {}
    for word in words:
        if cjk.has_cjk(word):
            continue
        term = tokens.index_term(word)
        if term is None or _held(con, term):
            continue
        near = nearest(con, term)
        if near:
            out[word] = near
    return out


def _held(con: sqlite3.Connection, term: str) -> bool:
    """Whether a document holds `term`: a common word is in `rank_terms` (fts5vocab would
    walk its whole doclist to count it), any other is asked of fts5vocab."""
    try:
        if con.execute("SELECT 1 FROM rank_terms WHERE term = ?", (term,)).fetchone():
            return True
    except sqlite3.OperationalError:  # (a file without the rank tables)
        pass
    return con.execute("SELECT 1 FROM documents_fts_terms WHERE term = ?",
                       (term,)).fetchone() is not None


def nearest(con: sqlite3.Connection, term: str, n: int = SUGGESTIONS) -> list[str]:
    """The `n` indexed terms nearest `term` (starting as it does, within `max_edits`)."""
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import extract

    edits = max_edits(term)
    if edits == 0:
        return []
    df: dict[str, int] = {}
    for start in dict.fromkeys((term[:2], term[0] + term[2])):
        df.update(_terms(con, start))
    found = extract(term, list(df), scorer=Levenshtein.distance, score_cutoff=edits,
                    limit=None)
    best = sorted(found, key=lambda m: (m[1], -df[m[0]], m[0]))
    return [str(m[0]) for m in best[:n]]


def _lower(ch: str) -> str:
    """The character before `ch` (never a surrogate, which SQLite cannot take)."""
    code = ord(ch) - 1
    return chr(0xD7FF if 0xD800 <= code <= 0xDFFF else code)


def _terms(con: sqlite3.Connection, first: str) -> dict[str, int]:
    """The indexed terms starting with `first` (at most `MAX_TERMS`), with their document
    counts: the common ones from `rank_terms`, the rest from fts5vocab in the ranges between
    them."""
    last = first + _BEFORE  # >= every term starting with `first`
    try:
        hot = dict(con.execute("SELECT term, df FROM rank_terms WHERE term >= ? AND term <= ?",
                               (first, last)).fetchall())
    except sqlite3.OperationalError:  # (a file without the rank tables)
        hot = {}
    out: dict[str, int] = dict(hot)
    lo = first
    sql = "SELECT term, doc FROM documents_fts_terms WHERE term >= ? AND term <= ?"
    for h in [*sorted(hot), None]:
        # fts5vocab reads `term < x` as `term <= x` (and walks x's doclist), so the bound
        # below `h` is the largest string before it: its last character lowered, then the
        # largest characters
        upper = last if h is None else h[:-1] + _lower(h[-1]) + _BEFORE
        for term, doc in con.execute(sql, (lo, upper)):
            if len(out) >= MAX_TERMS:
                return out
            out[str(term)] = int(doc)
        if h is not None:
            lo = h + "\x01"  # the first term after `h` (terms hold no control character)
    return out
