"""Every ranking accelerator (projections/rank/) answers as SQLite's own ranking does: the
reference, `projections.ranking` (bm25(documents_fts) x role weight, ORDER BY s, rowid DESC,
one statement), on random history.db contents. Each accelerator's answer is a head of the
reference ranking: the same ids in the same order, two ids swapped only where their
reference scores are equal, and each id's score the reference's (within 1e-12, relative).

Checked: the champion lists of one word (`champions.candidates`: the certified candidates,
whose v = weight x g is the reference score over -idf, one factor for every document), of
several words (`multi.search`, every state of its threshold walk, with and without deep
lists and their cross columns, walked or scored as arrays), the ranking of a word's
matches the lists are made from (`scan.ranked_all`, on threads, weight floors pruned), the
split full ranking
(`split.pages`, on threads), and the door the query layer calls (`rank.top`, with a
filter): after a rebuild's `build`, with new, changed and deleted documents not folded yet,
after the fold, and after the idle upkeep (`step`). Real SQLite FTS5; the lists' sizes are
made small (a list of 4 documents for a word in more than 6) so that a few dozen documents
have lists, deep lists and cross columns, and every query splits; the production sizes are
checked once on 6,000 documents (`test_production_sizes`).
"""

from __future__ import annotations

import itertools
import math
import random
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections import db, rank, ranking
from projections.filters import Filters
from projections.rank import champions, deep, multi, scan, split
from projections.rows import put_document
from projections.text import fts_phrase

VOCAB = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
ROLES = [None, "user", "assistant", "tool_result", "thinking", "question", "report", "odd"]
REL = 1e-12

Scored = list[tuple[float, int]]  # (reference score s, rowid), best first

words_st = st.lists(st.sampled_from(VOCAB[:3]) | st.sampled_from(VOCAB), min_size=1,
                    max_size=12)
docs_st = st.lists(st.tuples(words_st, st.sampled_from(ROLES), st.sampled_from(["s1", "s2"])),
                   min_size=60, max_size=80)  # some word is in more than 6
query_st = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3)


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists on small files: a word in more than 6 documents has one (4 champions, a deep
    list of up to 8, cross columns); every query ranks on threads; multi-word queries are
    answered from lists however few their matches; a word's matches are ranked heaviest
    weights first."""
    monkeypatch.setattr(champions, "CHAMPIONS", 4)
    monkeypatch.setattr(champions, "HOT_DF", 6)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    monkeypatch.setattr(champions, "REFRESH_AT", 1)
    monkeypatch.setattr(champions, "FRESH_MAX", 10_000)
    monkeypatch.setattr(deep, "DEEP_SHARE", 1)
    monkeypatch.setattr(deep, "DEEP_MAX", 8)
    monkeypatch.setattr(deep, "UNKNOWN", 3)  # cross columns keep f of 1 and 2 only
    monkeypatch.setattr(multi, "FULL_BELOW", 0)
    monkeypatch.setattr(multi, "PER_MATCH", 1e-6)
    monkeypatch.setattr(scan, "PRUNE_AT", 0)
    monkeypatch.setattr(scan, "SPARE", 1)
    monkeypatch.setattr(split, "PARALLEL_AT", 0)


def _home(path: Path) -> sqlite3.Connection:
    con = db.connect(path)
    con.execute("PRAGMA synchronous = OFF")
    db.create_schema(con, engine="fts5")
    con.close()
    con = db.connect(path)  # knows its file: the split may run
    con.execute("PRAGMA synchronous = OFF")
    return con


def _put(con: sqlite3.Connection, docs: Iterable[tuple[list[str], str | None, str]],
         first: int = 0) -> None:
    for i, (words, role, session) in enumerate(docs, first):
        put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent": "claude",
                           "at": 1000 + i % 5, "session": session, "role": role,
                           "text": " ".join(words)})


def reference(con: sqlite3.Connection, words: list[str], flt: Filters | None = None) -> Scored:
    """SQLite's ranking of every match: (s, rowid), best first."""
    where, params = (flt or Filters()).where("d")
    expr = " AND ".join(fts_phrase(w) for w in words)
    return [(float(s), int(r)) for r, s in con.execute(
        ranking.statement("documents_fts", where), [expr, *params, -1, 0])]


def same_head(got: Scored, ref: Scored) -> None:
    """`got` is a head of `ref`: its ids in ref's order, two swapped only where ref's scores
    are equal, each id's score ref's."""
    score = {r: s for s, r in ref}
    assert len(got) <= len(ref), (got, ref)
    assert len({r for _, r in got}) == len(got), got
    for (s, rid), (s_ref, rid_ref) in zip(got, ref, strict=False):
        assert rid in score, (rid, ref)
        assert math.isclose(s, score[rid], rel_tol=REL), (rid, s, score[rid])
        assert rid == rid_ref or score[rid] == s_ref, (got, ref)


def idf(con: sqlite3.Connection, word: str) -> float:
    """FTS5's idf of one word (fts5_aux.c: log((N - n + 0.5) / (n + 0.5)), at least 1e-6),
    from the index's own counts."""
    n_all = con.execute("SELECT count(*) FROM documents_fts_docsize").fetchone()[0]
    n = con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                    (fts_phrase(word),)).fetchone()[0]
    return max(math.log((n_all - n + 0.5) / (n + 0.5)), 1e-6)


def one_word(con: sqlite3.Connection, word: str) -> bool:
    """The one-word lists' certified candidates against the reference (v = weight x g, the
    reference score over -idf); True if they answered."""
    got = champions.candidates(con, word)
    listed = con.execute("SELECT 1 FROM rank_terms WHERE term = ? AND tau IS NOT NULL",
                         (word,)).fetchone()
    if got is None:
        assert not listed  # a word with a list answers (FRESH_MAX is not reached here)
        return False
    scored, bound = got
    i = idf(con, word)
    same_head([(-i * v, r) for v, r in scored if v > bound], reference(con, [word]))
    return True


def several_words(con: sqlite3.Connection, words: list[str]) -> int:
    """Every state of the threshold walk (its certified candidates: -s beats the threshold)
    against the reference, walked one entry at a time and with crossed deep lists scored
    as arrays (`multi.use_arrays`); the states seen."""
    states: list[tuple[list[tuple[float, int]], float]] = []

    def accept(scored: list[tuple[float, int]], threshold: float) -> None:
        states.append((list(scored), threshold))
        return None  # never enough: the walk goes on as far as it can

    try:
        multi.search(con, words, accept)
        multi.use_arrays()
        multi.search(con, words, accept)
    finally:
        multi.ARRAYS = False
    ref = reference(con, words)
    for scored, threshold in states:
        same_head([(-v, r) for v, r in scored if v > threshold], ref)
    return len(states)


def door(con: sqlite3.Connection, words: list[str], flt: Filters, k: int) -> None:
    """`rank.top` (lists, else the split) against the reference with the same filter."""
    where, params = flt.where("d")
    allowed = {int(r) for r, in con.execute(
        f"SELECT rowid FROM documents d WHERE {where}", params)}

    def take(pages: Iterable[list[int]], filtered: bool) -> list[int]:
        ids = (r for page in pages for r in page if filtered or r in allowed)
        return list(itertools.islice(ids, k))

    expr = " AND ".join(fts_phrase(w) for w in words)
    hits = rank.top(con, rank.Match("documents_fts", expr, where, params, words), k,
                    max(4 * k, 40), take)
    ref = reference(con, words, flt)
    if hits is None:  # every query with a match splits here (PARALLEL_AT = 0, THREADS >= 2)
        assert not reference(con, words)
        return
    by_id = {r: s for s, r in ref}
    assert len(hits) == min(k, len(ref))
    same_head([(by_id[r], r) for r in hits], ref)


def split_pages(con: sqlite3.Connection, words: list[str], page: int) -> None:
    """The split ranking's pages are the reference's ids, in its very order."""
    expr = " AND ".join(fts_phrase(w) for w in words)
    ref = [r for _, r in reference(con, words)]
    ranked = split.pages(con, "documents_fts", expr, "1", [], page)
    if not ref:
        assert ranked is None
        return
    assert ranked is not None
    try:
        got = [r for p in ranked for r in p]
    finally:
        ranked.close()
    assert got == ref


def scanned(con: sqlite3.Connection, words: list[str], workers: int) -> None:
    """A word's best matches as the lists are made from them (bm25 x weight, best first):
    the reference's head, on `workers` threads, weight floors pruned."""
    jobs = [(w, 6, scan.count(con, w)) for w in dict.fromkeys(words)]
    for (term, rows), (_, limit, _) in zip(scan.ranked_all(con, jobs, workers), jobs,
                                           strict=True):
        ref = reference(con, [term])
        assert len(rows) == min(limit, len(ref))
        assert [r for r, _, _ in rows] == [r for _, r in ref[: len(rows)]]
        same_head([(b * w, r) for r, b, w in rows], ref)


def check(con: sqlite3.Connection, queries: list[list[str]], flt: Filters, k: int,
          page: int, workers: int) -> None:
    """Every accelerator on every query, and the commonest listed word's list answers."""
    hottest = con.execute("SELECT term FROM rank_terms WHERE tau IS NOT NULL"
                          " ORDER BY df DESC, term LIMIT 1").fetchone()[0]
    assert one_word(con, hottest)
    for words in queries:
        if len(words) == 1:
            one_word(con, words[0])
        else:
            several_words(con, words)
        split_pages(con, words, page)
        door(con, words, flt, k)
        scanned(con, words, workers)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=10,
          deadline=None)
@given(docs=docs_st, later=docs_st.map(lambda d: d[:12]), queries=st.lists(query_st,
       min_size=2, max_size=3), changed=st.integers(0, 29), session=st.sampled_from([None, "s1"]),
       k=st.integers(1, 8), page=st.integers(1, 6), threads=st.integers(2, 3))
def test_accelerators_answer_as_sqlite_ranks(
        tmp_path_factory: pytest.TempPathFactory, small: None, docs: list[Any],
        later: list[Any], queries: list[list[str]], changed: int, session: str | None, k: int,
        page: int, threads: int) -> None:
    con = _home(tmp_path_factory.mktemp("ref") / "history.db")
    flt = Filters(session=session)
    split.THREADS = threads
    try:
        con.execute("BEGIN")
        _put(con, docs)
        con.execute("COMMIT")
        assert rank.build(con, workers=threads) > 0  # a rebuild's lists, ranked on threads
        check(con, queries, flt, k, page, threads)
        # new, changed and deleted documents the lists have not seen (fresh, dirty)
        con.execute("BEGIN")
        _put(con, later, len(docs))
        _put(con, [([VOCAB[changed % 3]] * 3, "user", "s1")], changed % len(docs))
        con.execute("DELETE FROM document_rows WHERE rowid = ?", ((changed + 7) % len(docs) + 1,))
        con.execute("COMMIT")
        check(con, queries, flt, k, page, threads)
        con.execute("BEGIN")
        rank.fold(con)  # catch-up's fold
        con.execute("COMMIT")
        check(con, queries, flt, k, page, threads)
        while rank.step(con) is not None:  # the idle loop: wanted lists, cross columns
            pass
        check(con, queries, flt, k, page, threads)
    finally:
        split.THREADS = None
        con.close()


def test_production_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lists at their production sizes (a word in more than 5,000 documents, 1,000
    champions): 6,000 documents of a small vocabulary, so that the two commonest words have
    lists and answer, one word and both (deep lists need 16,000 documents of a word: the
    random test has them, small). Roles of near weights, so that the lists mix them."""
    monkeypatch.setattr(multi, "FULL_BELOW", 0)
    monkeypatch.setattr(split, "PARALLEL_AT", 0)
    monkeypatch.setattr(rank, "SMALL_HOME", 0)  # (a home this small makes no list at build)
    rng = random.Random(25)
    docs = [([VOCAB[0], *VOCAB[1:2] * (rng.random() < 0.95),
              *rng.choices(VOCAB, k=rng.randrange(0, 14))],
             rng.choice(["assistant", "progress", "metadata", "thinking", None]),
             rng.choice(["s1", "s2"])) for _ in range(6_000)]
    con = _home(tmp_path / "history.db")
    split.THREADS = 2
    try:
        con.execute("BEGIN")
        _put(con, docs)
        con.execute("COMMIT")
        assert rank.build(con, workers=2) >= 2
        for word in VOCAB[:2]:
            assert one_word(con, word)
        assert several_words(con, VOCAB[:2])
        door(con, [VOCAB[0]], Filters(), 10)
        door(con, VOCAB[:2], Filters(session="s2"), 10)
        split_pages(con, [VOCAB[1]], 200)
    finally:
        split.THREADS = None
        con.close()


def test_a_worker_whose_table_failed_to_connect_tries_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FTS5 connects a worker's table inside its first prepare, which fails ("vtable
    constructor failed") when the caller changed the schema meanwhile (the first deep list
    creates its tables; scan.CONNECT_TRIES): the worker tries again and the lists come out
    as from one thread."""
    monkeypatch.setattr(rank, "SMALL_HOME", 0)
    monkeypatch.setattr(scan, "CONNECT_PAUSE", 0.0)
    rng = random.Random(3)
    docs = [([VOCAB[0], *VOCAB[1:2] * (rng.random() < 0.95),
              *rng.choices(VOCAB, k=rng.randrange(0, 10))], "assistant", "s1")
            for _ in range(6_000)]  # two words past HOT_DF (5,000): two lists
    failed: list[int] = []
    real = scan._reader

    class Flaky:  # a worker's connection whose first statements meet a schema change
        def __init__(self, con: sqlite3.Connection) -> None:
            self.con = con

        def execute(self, *args: Any) -> Any:
            if len(failed) < 3:
                failed.append(1)
                raise sqlite3.OperationalError("vtable constructor failed: documents_fts")
            return self.con.execute(*args)

        def close(self) -> None:
            self.con.close()

    def rows(workers: int) -> list[Any]:
        (tmp_path / f"w{workers}").mkdir()
        con = _home(tmp_path / f"w{workers}" / "history.db")
        try:
            con.execute("BEGIN")
            _put(con, docs)
            con.execute("COMMIT")
            assert rank.build(con, workers=workers) > 0
            return con.execute("SELECT * FROM rank_champions ORDER BY 1, 2").fetchall()
        finally:
            con.close()

    monkeypatch.setattr(scan, "_reader", lambda files: Flaky(real(files)))
    assert rows(2) == rows(1) and len(failed) == 3


def test_the_deep_tables_exist_before_the_workers_connect(
        tmp_path: Path, small: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A threaded list making that will store a deep list makes the deep tables first: the
    workers never connect while the file's schema changes (scan.CONNECT_TRIES)."""
    rng = random.Random(5)
    con = _home(tmp_path / "history.db")
    seen: list[bool] = []
    real = scan.ranked_all

    def ranked_all(c: sqlite3.Connection, jobs: Any, workers: int, *args: Any) -> Any:
        seen.append(deep.has_deep(c))
        return real(c, jobs, workers, *args)

    monkeypatch.setattr(scan, "ranked_all", ranked_all)
    try:
        con.execute("BEGIN")
        _put(con, [([VOCAB[0], *rng.choices(VOCAB, k=4)], "assistant", "s1")
                   for _ in range(40)])
        con.execute("COMMIT")
        assert not deep.has_deep(con)
        assert rank.build(con, workers=2) > 0
        assert seen == [True] and con.execute("SELECT count(*) FROM rank_deep").fetchone()[0]
    finally:
        con.close()
