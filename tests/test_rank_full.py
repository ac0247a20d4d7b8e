"""The full ranking on threads (projections/rank/split.py) gives exactly the one statement's
hits: the same rows in the same order, every score bit-identical, with filters, duplicates
dropped across pages, CJK and literal conditions, tiny and large limits (real SQLite FTS5;
`PARALLEL_AT` = 0 and `THREADS` force the split on small files)."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections import db, ranking, search
from projections.errors import ProjectionDamaged
from projections.filters import Filters
from projections.rank import split
from projections.rows import put_document

WORDS = ["alpha", "beta", "gamma", "delta"]  # few words, short texts: many exact score ties
ROLES = [None, "user", "assistant", "tool_result", "thinking"]


def _home(path: Path, docs: list[Any]) -> sqlite3.Connection:
    con = db.connect(path)
    con.execute("PRAGMA synchronous = OFF")
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for i, (words, role, session, agent) in enumerate(docs):
        put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent": agent,
                           "at": 1000 + i % 7, "session": session, "role": role,
                           "text": " ".join(words)})
    con.execute("COMMIT")
    con.close()
    return db.connect(path)  # knows its file (it did not create it): the split may run


def _search(con: sqlite3.Connection, tokens: list[str], flt: Filters, limit: int,
            threads: int) -> list[tuple[Any, ...]]:
    split.THREADS = threads
    try:
        return search.fts_search(con, tokens, flt, limit, lists=False)
    finally:
        split.THREADS = None


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every query splits; returns the statements each thread's own connection ran."""
    monkeypatch.setattr(split, "PARALLEL_AT", 0)
    ran: list[list[str]] = []
    opened = split._reader

    def reader(caller: sqlite3.Connection, path: Path) -> sqlite3.Connection:
        con = opened(caller, path)
        ran.append([])
        con.set_trace_callback(ran[-1].append)
        return con

    monkeypatch.setattr(split, "_reader", reader)
    return ran


def _ranked_on_threads(ran: list[list[str]]) -> int:
    return sum(any("bm25(" in s for s in sqls) for sqls in ran)


docs_st = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
              st.sampled_from(ROLES), st.sampled_from(["s1", "s2"]),
              st.sampled_from(["claude", "codex"])),
    min_size=1, max_size=120)
filters_st = st.builds(lambda session, agent, since, until: Filters(
    session=session, agent=agent, since=since, until=until),
    st.sampled_from([None, "s1"]), st.sampled_from([None, "codex"]),
    st.sampled_from([None, 1002]), st.sampled_from([None, 1005]))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60,
          deadline=None)
@given(docs=docs_st, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       flt=filters_st, limit=st.sampled_from([1, 2, 3, 10, 50]), threads=st.integers(2, 5),
       copies=st.integers(1, 30))
def test_threads_give_the_one_statements_hits(
        tmp_path: Path, forced: list[list[str]], docs: list[Any], query: list[str],
        flt: Filters, limit: int, threads: int, copies: int) -> None:
    # the first document copied `copies` times: dropped as duplicates across pages
    forced.clear()
    path = tmp_path / f"h{abs(hash((str(docs), copies)))}.db"
    con = _home(path, docs + [docs[0]] * copies) if not path.exists() else db.connect(path)
    try:
        one = _search(con, query, flt, limit, 1)
        assert not forced
        assert _search(con, query, flt, limit, threads) == one
        matched = con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                              (" AND ".join(query),)).fetchone()[0]
        assert _ranked_on_threads(forced) == (threads - 1 if matched else 0)
        assert not con.in_transaction  # the split's read transaction ended
    finally:
        con.close()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40,
          deadline=None)
@given(docs=docs_st, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
       page=st.integers(1, 7), threads=st.integers(2, 4), cut=st.integers(0, 130))
def test_pages_and_scores_are_bit_identical(
        tmp_path: Path, forced: list[list[str]], docs: list[Any], query: list[str], page: int,
        threads: int, cut: int) -> None:
    """Every page equals the one statement's LIMIT/OFFSET page, and a rowid range's scores
    are the whole statement's doubles bit for bit (bm25's statistics are the index's)."""
    forced.clear()
    path = tmp_path / f"p{abs(hash(str(docs)))}.db"
    con = _home(path, docs) if not path.exists() else db.connect(path)
    try:
        expr = " AND ".join(f'"{w}"' for w in query)
        every = con.execute(ranking.statement("documents_fts", "1"),
                            (expr, -1, 0)).fetchall()
        one = [[int(r) for r, _ in every[i : i + page]]
               for i in range(0, len(every) + 1, page)]
        one = one[: next(i for i, p in enumerate(one) if len(p) < page) + 1]
        split.THREADS = threads
        try:
            ranked = split.pages(con, "documents_fts", expr, "1", [], page)
            got = None if ranked is None else list(ranked)
        finally:
            split.THREADS = None
        assert got == (one if every else None)  # no match: nothing to split (the statement)
        assert list(ranking.pages(con, "documents_fts", expr, "1", [], page)) == one
        assert _ranked_on_threads(forced) == (threads - 1 if every else 0)
        bits = {r: struct.pack("<d", s) for r, s in every}
        for lo, hi in ((-1, cut), (cut, 1 << 40)):
            part = con.execute(ranking.statement(
                "documents_fts", "1", " AND documents_fts.rowid > ? AND documents_fts.rowid <= ?"),
                (expr, lo, hi, -1, 0)).fetchall()
            assert [r for r, _ in part] == [r for r, _ in every if lo < r <= hi]
            assert all(struct.pack("<d", s) == bits[r] for r, s in part)
    finally:
        con.close()


def test_many_duplicates_take_many_pages(tmp_path: Path, forced: list[list[str]]) -> None:
    docs = [(["alpha"] * 3, "user", "s1", "claude")] * 300 + [
        (["alpha", "beta", f"w{i}"], "assistant", "s2", "codex") for i in range(60)]
    con = _home(tmp_path / "h.db", docs)
    one = _search(con, ["alpha"], Filters(), 50, 1)
    assert len(one) == 50 and len({r[15] for r in one}) == 50
    assert _search(con, ["alpha"], Filters(), 50, 3) == one
    assert _ranked_on_threads(forced) == 2
    con.close()


def test_cjk_and_literal_conditions(tmp_path: Path, forced: list[list[str]]) -> None:
    """The CJK side index ranks the same way; a literal condition calls `fold` on each
    thread's connection."""
    texts = ["東京 alpha 中", "東京の天気 beta", "alpha 中文 東京", "東京 東京 alpha", "gamma 中"]
    docs = [(t.split(), role, "s1", "claude") for t in texts for role in ROLES]
    con = _home(tmp_path / "h.db", docs * 4)
    for tokens in (["東京"], ["alpha", "中"], ["alpha", "東京"]):
        one = _search(con, tokens, Filters(), 10, 1)
        assert one and _search(con, tokens, Filters(), 10, 2) == one
    assert _ranked_on_threads(forced) == 3
    con.close()


def test_a_thread_that_cannot_read_leaves_its_range_to_the_caller(
        tmp_path: Path, forced: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [([w] * (1 + i % 3), "user", "s1", "claude") for i, w in enumerate(WORDS * 20)]
    con = _home(tmp_path / "h.db", docs)
    one = _search(con, ["alpha"], Filters(), 10, 1)

    def busy(caller: sqlite3.Connection, path: Path) -> sqlite3.Connection:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(split, "_reader", busy)
    assert _search(con, ["alpha"], Filters(), 10, 3) == one
    con.close()


def test_a_swapped_file_is_not_read(tmp_path: Path, forced: list[list[str]]) -> None:
    """A rebuild that swaps a new file in while the caller reads the old one: the threads
    open the new file, see other FTS5 records, and rank nothing."""
    docs = [([w] * (1 + i % 3), "user", "s1", "claude") for i, w in enumerate(WORDS * 20)]
    con = _home(tmp_path / "h.db", docs)
    one = _search(con, ["alpha"], Filters(), 10, 1)
    _home(tmp_path / "new.db", docs[::-1]).close()
    (tmp_path / "new.db").replace(tmp_path / "h.db")
    assert _search(con, ["alpha"], Filters(), 10, 2) == one
    assert len(forced) == 1 and not _ranked_on_threads(forced)
    con.close()


def test_a_commit_between_the_callers_snapshot_and_a_threads_is_not_read(
        tmp_path: Path, forced: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """On a WAL file (what a rebuild publishes) a catch-up may commit while the split runs:
    a thread that sees another checkpoint than the caller ranks nothing, and the hits are
    the caller's snapshot's."""
    docs = [([w] * (1 + i % 3), "user", "s1", "claude") for i, w in enumerate(WORDS * 20)]
    path = tmp_path / "h.db"
    _home(path, docs).close()
    writer = db.connect(path)
    writer.execute("PRAGMA journal_mode = WAL")
    db.write_checkpoint(writer, 1, "aa")
    con = db.connect(path, readonly=True)
    one = _search(con, ["alpha"], Filters(), 10, 1)
    opened = split._reader

    def after_a_commit(caller: sqlite3.Connection, file: Path) -> sqlite3.Connection:
        writer.execute("BEGIN IMMEDIATE")
        for i in range(3):
            put_document(writer, {"id": f"transcript:late{i}", "kind": "transcript",
                                  "agent": "claude", "at": 1, "role": "user",
                                  "text": "alpha alpha alpha alpha"})
        db.write_checkpoint(writer, 2, "bb")
        writer.execute("COMMIT")
        return opened(caller, file)

    monkeypatch.setattr(split, "_reader", after_a_commit)
    assert _search(con, ["alpha"], Filters(), 10, 2) == one
    assert not _ranked_on_threads(forced)
    assert _search(con, ["alpha"], Filters(), 10, 1) != one  # the commit is there now
    con.close()
    writer.close()


def test_writers_wait_only_while_the_split_reads(tmp_path: Path,
                                                 forced: list[list[str]]) -> None:
    docs = [([w, "alpha"], "user", "s1", "claude") for w in WORDS * 30]
    con = _home(tmp_path / "h.db", docs)
    reader = db.connect(tmp_path / "h.db", readonly=True)
    split.THREADS = 2
    try:
        ranked = split.pages(reader, "documents_fts", '"alpha"', "1", [], 5)
        assert ranked is not None and len(next(ranked)) == 5
    finally:
        split.THREADS = None
    assert reader.in_transaction  # the snapshot lasts while pages are asked for
    ranked.close()
    assert not reader.in_transaction
    con.execute("PRAGMA busy_timeout = 0")
    put_document(con, {"id": "transcript:new", "kind": "transcript", "agent": "claude",
                       "at": 1, "text": "alpha"})
    reader.close()
    con.close()


def test_few_matches_one_cpu_or_a_transaction_rank_on_one_statement(
        tmp_path: Path, forced: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [([w], "user", "s1", "claude") for w in WORDS * 5]
    con = _home(tmp_path / "h.db", docs)
    monkeypatch.setattr(split, "PARALLEL_AT", 6)
    _search(con, ["alpha"], Filters(), 10, 4)  # 5 matches
    _search(con, ["alpha"], Filters(), 10, 1)
    con.execute("BEGIN")
    _search(con, ["beta", "gamma"], Filters(), 10, 4)
    con.execute("COMMIT")
    assert not forced
    monkeypatch.setattr(split, "PARALLEL_AT", 5)
    _search(con, ["alpha"], Filters(), 10, 4)
    assert _ranked_on_threads(forced) == 3
    con.close()
    mem = sqlite3.connect(":memory:", isolation_level=None)
    db.register_functions(mem)
    db.create_schema(mem, engine="fts5")
    put_document(mem, {"id": "transcript:1", "kind": "transcript", "agent": "claude", "at": 1,
                       "text": "alpha"})
    assert len(_search(mem, ["alpha"], Filters(), 10, 4)) == 1
    assert _ranked_on_threads(forced) == 3
    mem.close()


def test_an_error_on_a_thread_is_raised_by_the_caller(
        tmp_path: Path, forced: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [([w] * (1 + i % 3), "user", "s1", "claude") for i, w in enumerate(WORDS * 20)]
    con = _home(tmp_path / "h.db", docs)

    def damaged(caller: sqlite3.Connection, path: Path) -> sqlite3.Connection:
        raise ProjectionDamaged(f"{path} is damaged")

    monkeypatch.setattr(split, "_reader", damaged)
    with pytest.raises(ProjectionDamaged):
        _search(con, ["alpha"], Filters(), 10, 2)
    assert not con.in_transaction
    con.close()
