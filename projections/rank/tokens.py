"""FTS5's own view of a few texts, for the champion lists (projections.rank.champions, multi).

Promises: `frequencies` and `index_term` tokenize with documents_fts's tokenizer, so f
and D are exactly what documents_fts holds: an ASCII text is split in Python exactly as
unicode61 splits ASCII (`frequencies`, `counts`; tests compare them with FTS5 itself),
any other text by FTS5 (an in-memory FTS5 table per thread, `by_fts5`); `totals` reads
FTS5's own averages record (bm25's nRow and token total);
`fresh_docs`, `was_hits` and `df_since` tell what changed since the lists' watermark `wm`
(new rowids, `rank_dirty`, `rank_was`: see projections.rank.champions). Read-only.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

TOKENIZE = "unicode61 remove_diacritics 2"  # documents_fts's tokenizer (projections.db)
_ASCII_TOKEN = re.compile(r"[0-9A-Za-z]+")  # unicode61's token characters below 128
MAX_TOKEN = 32768  # FTS5 keeps the first 32768 bytes of a longer token (FTS5_MAX_TOKEN_SIZE)


def varints(blob: bytes) -> list[int]:
    """SQLite varints (FTS5's structure and docsize records)."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        v = 0
        for j in range(9):
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        out.append(v)
    return out


def totals(con: sqlite3.Connection) -> tuple[int, int]:
    """(documents, tokens) of documents_fts: FTS5's own averages record (the bm25 inputs)."""
    row = con.execute("SELECT block FROM documents_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    vals = varints(bytes(row[0]))
    return vals[0], sum(vals[1:])


def index_term(token: str) -> str | None:
    """The one term FTS5 indexes `token` as (its tokenizer's own folding), None when it is
    not exactly one term (then no list applies)."""
    if token.isascii() and token.isalnum():
        return token.lower()
    con = _tokenizer()
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM t")
        con.execute("INSERT INTO t(rowid, text) VALUES (1, ?)", (token,))
        terms = [str(r[0]) for r in con.execute("SELECT term FROM r")]
    finally:
        con.execute("ROLLBACK")
    return terms[0] if len(terms) == 1 else None


_local = threading.local()


def _tokenizer() -> sqlite3.Connection:
    con: sqlite3.Connection | None = getattr(_local, "tok", None)
    if con is None:
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        con.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{TOKENIZE}')")
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        con.execute("CREATE VIRTUAL TABLE r USING fts5vocab(t, row)")
        _local.tok = con
    return con


def frequencies(
    texts: Iterable[tuple[int, str]], terms: list[str], top: int = 0
) -> tuple[dict[tuple[str, int], int], dict[int, int], list[str]]:
    """({(term, doc): f}, {doc: D}, the `top` words in most of them) of `texts` as
    documents_fts tokenizes them: an ASCII text split here the way unicode61 splits ASCII
    (as `counts` does), any other text by FTS5 (`by_fts5`); the same answers, in the same
    order, as FTS5 alone (a +1 catch-up's fold made an in-memory FTS5 table for its ~40
    texts: ~6 % of the process's instructions)."""
    wanted = set(terms)
    freq: dict[tuple[str, int], int] = {}
    sizes: dict[int, int] = {}
    in_docs: Counter[str] = Counter()
    rest: list[tuple[int, str]] = []
    for r, toks in _ascii_split(texts, rest):
        sizes[r] = len(toks)
        per = Counter(toks)
        for t, n in per.items():
            if t in wanted:
                freq[(t, r)] = n
        if top:
            in_docs.update(per.keys())
    if rest:
        more, more_sizes, more_docs = _fts5(rest, terms, top)
        freq.update(more)
        sizes.update(more_sizes)
        in_docs.update(more_docs)
    common = [t for t, _ in sorted(in_docs.items(), key=lambda c: (-c[1], c[0]))[:top]]
    return ({k: freq[k] for k in sorted(freq)}, {r: sizes[r] for r in sorted(sizes)},
            common)


def by_fts5(
    texts: Iterable[tuple[int, str]], terms: list[str], top: int = 0
) -> tuple[dict[tuple[str, int], int], dict[int, int], list[str]]:
    """`frequencies` of every text by FTS5 itself (the reference the tests hold the Python
    split equal to)."""
    freq, sizes, in_docs = _fts5(texts, terms, top)
    common = [t for t, _ in sorted(in_docs.items(), key=lambda c: (-c[1], c[0]))[:top]]
    return freq, sizes, common


def _fts5(
    texts: Iterable[tuple[int, str]], terms: list[str], top: int
) -> tuple[dict[tuple[str, int], int], dict[int, int], Counter[str]]:
    """({(term, doc): f}, {doc: D}, {term: documents holding it} when `top`) by FTS5."""
    con = _tokenizer()
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM t")
        con.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", texts)
        marks = ",".join("?" * len(terms))
        freq = {(str(t), int(d)): int(n) for t, d, n in con.execute(
            f"SELECT term, doc, count(*) FROM v WHERE term IN ({marks}) GROUP BY term, doc",
            terms)}
        sizes = {int(i): varints(bytes(sz))[0] for i, sz in con.execute(
            "SELECT id, sz FROM t_docsize")}
        in_docs = Counter({str(t): int(n) for t, n in con.execute(
            "SELECT term, doc FROM r")}) if top else Counter()
    finally:
        con.execute("ROLLBACK")
    return freq, sizes, in_docs


def _ascii_split(texts: Iterable[tuple[int, str]], rest: list[tuple[int, str]]
                 ) -> Iterator[tuple[int, list[str]]]:
    """(doc, its tokens) of each ASCII text, split the way unicode61 splits ASCII (runs of
    [0-9A-Za-z], lower-cased); any other text (or one with a token FTS5 would cut at
    `MAX_TOKEN`) is put in `rest` for FTS5 to tokenize."""
    for r, text in texts:
        if text.isascii():
            toks = _ASCII_TOKEN.findall(text.lower())
            if len(text) <= MAX_TOKEN or all(len(t) <= MAX_TOKEN for t in toks):
                yield r, toks
                continue
        rest.append((r, text))


def counts(
    texts: Iterable[tuple[int, str]], terms: list[str]
) -> tuple[dict[tuple[str, int], int], dict[int, int]]:
    """`frequencies` without the common words, faster: an ASCII text is split here the way
    unicode61 splits ASCII (runs of [0-9A-Za-z], lower-cased), any other text by FTS5."""
    freq: dict[tuple[str, int], int] = {}
    sizes: dict[int, int] = {}
    rest: list[tuple[int, str]] = []
    for r, toks in _ascii_split(texts, rest):
        sizes[r] = len(toks)
        for t in terms:
            n = toks.count(t)
            if n:
                freq[(t, r)] = n
    if rest:
        more, more_sizes, _ = _fts5(rest, terms, 0)
        freq.update(more)
        sizes.update(more_sizes)
    return freq, sizes


def counts_many(
    texts: Iterable[tuple[int, str]], terms: Iterable[str]
) -> tuple[dict[str, dict[int, int]], dict[int, int]]:
    """`counts` for many words at once: ({term: {doc: f}}, {doc: D}); an ASCII text is
    counted once (not once per word)."""
    wanted = set(terms)
    freq: dict[str, dict[int, int]] = {}
    sizes: dict[int, int] = {}
    rest: list[tuple[int, str]] = []
    for r, toks in _ascii_split(texts, rest):
        sizes[r] = len(toks)
        for t, n in Counter(toks).items():
            if t in wanted:
                freq.setdefault(t, {})[r] = n
    if rest:
        more, more_sizes, _ = _fts5(rest, sorted(wanted), 0)
        for (t, r), n in more.items():
            freq.setdefault(t, {})[r] = n
        sizes.update(more_sizes)
    return freq, sizes


# -- what changed since the lists' watermark (rank_meta.wm) -------------------------------

def has_was(con: sqlite3.Connection) -> bool:
    """Whether the file keeps `rank_was` (and so exact `rank_terms.df` as of wm: what
    multi-word ranking needs; files made before it rank multi-word queries fully)."""
    return con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rank_was'"
    ).fetchone() is not None


TextOf = Callable[[sqlite3.Connection, list[int]], list[tuple[int, str, Any, Any]]]


def texts_of(con: sqlite3.Connection, rowids: list[int]) -> list[tuple[int, str, Any, Any]]:
    """(rowid, text, role, kind) of documents."""
    out: list[tuple[int, str, Any, Any]] = []
    for i in range(0, len(rowids), 500):
        chunk = rowids[i : i + 500]
        out += [(int(r), str(t), role, kind) for r, t, role, kind in con.execute(
            f"SELECT rowid, text, role, kind FROM documents WHERE rowid IN"
            f" ({','.join('?' * len(chunk))})", chunk)]
    return out


def fresh_docs(con: sqlite3.Connection, wm: int) -> list[int]:
    """Rowids of documents added or changed since the lists were made (still present)."""
    new = [int(r[0]) for r in con.execute("SELECT rowid FROM documents WHERE rowid > ?", (wm,))]
    dirty = [int(r[0]) for r in con.execute(  # (not a join: the planner would walk documents)
        "SELECT doc FROM rank_dirty WHERE doc <= ?"
        " AND EXISTS (SELECT 1 FROM document_rows WHERE rowid = doc)", (wm,))]
    return dirty + new


def was_hits(con: sqlite3.Connection, wm: int, terms: list[str]) -> Counter[str]:
    """Per word, the changed documents whose text as of `wm` contained it."""
    out: Counter[str] = Counter()
    if not terms:
        return out
    rows = [(int(d), str(t)) for d, t in con.execute(
        "SELECT doc, doc_text(body) FROM rank_was WHERE doc <= ?", (wm,))]
    for i in range(0, len(rows), 2000):
        freq, _, _ = frequencies(rows[i : i + 2000], terms)
        out.update(t for t, _ in freq)
    return out


def df_since(con: sqlite3.Connection, terms: list[str],
             text_of: TextOf = texts_of) -> dict[str, int]:
    """Per word, documents containing it now minus as of `wm` ({} without `rank_was`)."""
    if not terms or not has_was(con):
        return {}
    meta = con.execute("SELECT wm FROM rank_meta WHERE id = 1").fetchone()
    if meta is None:
        return {}
    wm = int(meta[0])
    fresh = fresh_docs(con, wm)
    now: Counter[str] = Counter()
    for i in range(0, len(fresh), 2000):
        docs = text_of(con, fresh[i : i + 2000])
        freq, _, _ = frequencies(((r, t) for r, t, _, _ in docs), terms)
        now.update(t for t, _ in freq)
    gone = was_hits(con, wm, terms)
    return {t: now[t] - gone[t] for t in terms if now[t] or gone[t]}


def term_counts(texts: Iterable[tuple[int, str]]) -> dict[int, tuple[int, Counter[str]]]:
    """{doc: (D, {term: f})} of every term of each text as documents_fts tokenizes it: what
    bm25 reads of a row (the team server's stored statistics, projections.pg). An ASCII
    text is split here the way unicode61 splits ASCII (as `frequencies` does), any other
    text by FTS5 itself (D from its docsize record, f from its instances)."""
    out: dict[int, tuple[int, Counter[str]]] = {}
    rest: list[tuple[int, str]] = []
    for r, toks in _ascii_split(texts, rest):
        out[r] = (len(toks), Counter(toks))
    if rest:
        con = _tokenizer()
        con.execute("BEGIN")
        try:
            con.execute("DELETE FROM t")
            con.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", rest)
            per: dict[int, Counter[str]] = {}
            for t, d, n in con.execute("SELECT term, doc, count(*) FROM v GROUP BY doc, term"):
                per.setdefault(int(d), Counter())[str(t)] = int(n)
            for i, sz in con.execute("SELECT id, sz FROM t_docsize"):
                out[int(i)] = (varints(bytes(sz))[0], per.get(int(i), Counter()))
        finally:
            con.execute("ROLLBACK")
    return out
