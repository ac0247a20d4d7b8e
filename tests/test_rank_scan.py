"""A rebuild ranks its champion lists on worker threads (projections/rank/scan.py): the lists,
their deep lists and every rank table come out exactly as ranked on one connection (real
SQLite FTS5, score ties included: many documents share a text). Made beside the sort from
side files: tests/test_bulk_tail.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.rank import champions, deep, scan
from tests.test_rank import WORDS, _home, _put_all, docs_st

TABLES = ("rank_meta", "rank_terms", "rank_champions", "rank_deep", "rank_deep_blob")


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(champions, "CHAMPIONS", 4)
    monkeypatch.setattr(champions, "HOT_DF", 6)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    monkeypatch.setattr(deep, "DEEP_SHARE", 1)  # words in >= 8 documents: deep lists
    monkeypatch.setattr(deep, "DEEP_MAX", 8)


def _tables(con: sqlite3.Connection) -> dict[str, list[Any]]:
    return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES
            if t == "rank_meta" or deep.has_deep(con) or not t.startswith("rank_deep")}


Job = tuple[str, int, int]


def _ranked_one_way(tmp_path: Path, key: Any, docs: list[Any], limits: list[int]
                    ) -> tuple[sqlite3.Connection, list[Job], dict[str, Any]]:
    """A file of `docs` (named by the example, so each Hypothesis example has its own), the
    jobs of `WORDS` with `limits` and their rankings on this one connection."""
    con = _home(tmp_path / f"h{abs(hash((str(docs), key, str(limits))))}.db")
    _put_all(con, docs)
    jobs = [(t, n, scan.count(con, t)) for t, n in zip(WORDS, limits, strict=True)]
    return con, jobs, {t: scan.ranked(con, t, n) for t, n, _ in jobs}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40,
          deadline=None)
@given(docs=docs_st, workers=st.integers(2, 3), ahead=st.integers(0, 2),
       limits=st.lists(st.integers(1, 50), min_size=len(WORDS), max_size=len(WORDS)))
def test_threads_rank_exactly_as_one_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Any], workers: int,
        ahead: int, limits: list[int]) -> None:
    con, jobs, one = _ranked_one_way(tmp_path, (workers, ahead), docs, limits)
    try:
        got = list(scan.ranked_all(con, jobs, workers, ahead))
        assert [t for t, _ in got] == WORDS
        assert dict(got) == one
        champions.build(con)
        alone = _tables(con)
        monkeypatch.setattr(scan, "AHEAD", ahead)
        champions.build(con, workers=workers)
        assert _tables(con) == alone
    finally:
        con.close()


def test_an_error_on_a_worker_stops_the_build(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    con = _home(tmp_path / "h.db")
    _put_all(con, [(["alpha", "beta"], None, "s1")] * 12)
    champions.build(con, workers=2)
    before = _tables(con)
    assert before["rank_champions"]
    monkeypatch.setattr(scan, "_query", lambda where="": "SELECT no_such_column")
    with pytest.raises(sqlite3.OperationalError, match="no_such_column"):
        champions.build(con, workers=2)
    con.close()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60,
          deadline=None)
@given(docs=docs_st, workers=st.integers(1, 2), spare=st.sampled_from([0.01, 0.5, 1, 4]),
       limits=st.lists(st.integers(1, 30), min_size=len(WORDS), max_size=len(WORDS)))
def test_ranking_the_heaviest_weights_first_gives_the_full_ranking(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Any], workers: int,
        spare: float, limits: list[int]) -> None:
    """A weight floor for every word (any spare): the rows are the full ranking's, whether
    the certificate holds or the word is ranked again over every match."""
    monkeypatch.setattr(scan, "PRUNE_AT", 0)
    monkeypatch.setattr(scan, "SPARE", spare)
    con, jobs, full = _ranked_one_way(tmp_path, (workers, spare), docs, limits)
    try:
        assert dict(scan.ranked_all(con, jobs, workers)) == full
    finally:
        con.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_floor_is_kept_only_with_its_certificate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """Short user documents full of the word beat every tool result (certified: the floor's
    rows stand); long user documents with it once do not (ranked again, and the next word
    starts a weight lower)."""
    monkeypatch.setattr(scan, "PRUNE_AT", 0)
    monkeypatch.setattr(scan, "SPARE", 1)
    kept: list[tuple[float, bool]] = []
    certified = scan._Floors.certified

    def spy(self: scan._Floors, j: int, job: scan.Job, rows: list[Any]) -> bool:
        kept.append((self.of.get(j, 0.0), certified(self, j, job, rows)))
        return kept[-1][1]

    monkeypatch.setattr(scan._Floors, "certified", spy)
    con = _home(tmp_path / "h.db")
    filler = " ".join(f"f{i}" for i in range(60))
    docs = ([(["alpha"] * 4, "user", "s1")] * 6
            + [(["beta", *filler.split()], "user", "s1")] * 6
            + [(["alpha", "beta", "x"], "tool_result", "s1")] * 30)
    _put_all(con, docs)
    jobs = [("alpha", 4, 36), ("beta", 4, 36), ("alpha", 4, 36)]
    full = [scan.ranked(con, t, n) for t, n, _ in jobs]
    assert [rows for _, rows in scan.ranked_all(con, jobs, workers, ahead=0)] == full
    assert kept == [(0.8, True), (0.8, False), (0.0, True)]
    con.close()


def test_a_light_document_full_of_the_word_is_not_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is k1 + 1 times the heaviest weight left out: a tool result that is the
    word thirty times (g ~ 1.93, v ~ 1.35) outranks long user documents (v ~ 1.24, above
    k1 + 0.5 times 0.7 but under k1 + 1 times it): ranked again over every match."""
    monkeypatch.setattr(scan, "PRUNE_AT", 0)
    monkeypatch.setattr(scan, "SPARE", 1)
    con = _home(tmp_path / "h.db")
    _put_all(con, [(["gamma", *(f"f{i}" for i in range(30))], "user", "s1")] * 4
             + [(["gamma"] * 30, "tool_result", "s1")] + [(["zzz"], None, "s1")] * 20)
    jobs = [("gamma", 4, 5)]
    full = scan.ranked(con, "gamma", 4)
    assert full[0][2] == 0.7  # the tool result first
    assert [rows for _, rows in scan.ranked_all(con, jobs, 1)] == [full]
    con.close()
