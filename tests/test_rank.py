"""Ranking covers every match: the champion lists (projections.rank) and the full ranking give
exactly the top-k of a brute-force bm25 x role weight over every document, with filters,
dedupe and limits, before and after new and changed documents (real SQLite FTS5)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections import db, rank, search
from projections.filters import Filters
from projections.rank import bm25, champions
from projections.rank import tokens as rank_tokens
from projections.rows import put_document

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
ROLES = [None, "user", "assistant", "tool_result", "thinking"]


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(champions, "CHAMPIONS", 4)
    monkeypatch.setattr(champions, "HOT_DF", 6)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    monkeypatch.setattr(champions, "REFRESH_AT", 1)
    monkeypatch.setattr(champions, "FRESH_MAX", 10_000)


def _home(path: Path) -> sqlite3.Connection:
    con = db.connect(path)
    con.execute("PRAGMA synchronous = OFF")
    db.create_schema(con, engine="fts5")
    return con


def _put(con: sqlite3.Connection, i: int, text: str, role: str | None, session: str) -> None:
    put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent": "claude",
                       "at": 1000 + i, "session": session, "role": role, "text": text})


def _put_all(con: sqlite3.Connection, docs: list[Any], first: int = 0) -> None:
    """`docs_st`'s documents (words, role, session), numbered from `first`."""
    for i, (words, role, session) in enumerate(docs):
        _put(con, first + i, " ".join(words), role, session)


def brute(
    con: sqlite3.Connection, word: str, session: str | None = None
) -> list[tuple[float, int]]:
    """bm25 x weight of every document, from the texts alone (FTS5's formula; the texts
    are space-separated ASCII words, so tokens are the words), best first, deduped."""
    rows = con.execute("SELECT rowid, text, role, kind, session FROM documents").fetchall()
    lens = {r[0]: len(r[1].split()) for r in rows}
    n = len(rows)
    avgdl = sum(lens.values()) / n
    hits = [r for r in rows if word in r[1].split()]
    idf = math.log((n - len(hits) + 0.5) / (len(hits) + 0.5))
    idf = idf if idf > 0 else 1e-6
    scored = []
    for rowid, text, role, kind, sess in hits:
        f = text.split().count(word)
        g = (f * 2.2) / (f + 1.2 * (1 - 0.75 + 0.75 * lens[rowid] / avgdl))
        key = (kind, str(role), text)
        scored.append((-(idf * g) * bm25.weight(role, kind), -rowid, rowid, key, sess))
    scored.sort()
    out, seen = [], set()
    for s, _, rowid, key, sess in scored:
        if (session is not None and sess != session) or key in seen:
            continue
        seen.add(key)
        out.append((s, rowid))
    return out


def same_ranking(got: list[int], ref: list[tuple[float, int]], k: int) -> None:
    """`got` is the reference top-k; rowids may differ only inside exact score ties."""
    top = ref[:k]
    assert len(got) == len(top)
    score = dict((r, s) for s, r in ref)
    for rid, (s, ref_id) in zip(got, top, strict=True):
        assert rid in score, rid
        assert rid == ref_id or math.isclose(score[rid], s, rel_tol=1e-12), (got, top)


def certified(con: sqlite3.Connection, scored: list[tuple[float, int]], bound: float,
              flt: Filters, k: int) -> list[tuple[Any, ...]] | None:
    """The hits the query layer takes from champion-list candidates (`rank.certify` over
    `search.take`), None when the certificate does not hold."""
    hits: list[tuple[Any, ...]] | None = rank.certify(k, search.take(con, k, *flt.where("d")))(
        scored, bound)
    return hits


def ids(rows: list[tuple[Any, ...]]) -> list[int]:
    return [int(r[0]) for r in rows]


docs_st = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
              st.sampled_from(ROLES), st.sampled_from(["s1", "s2"])),
    min_size=8, max_size=40)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60,
          deadline=None)
@given(docs=docs_st, later=docs_st, word=st.sampled_from(WORDS), k=st.integers(1, 6),
       session=st.sampled_from([None, "s1"]), change=st.integers(0, 7))
def test_top_k_equals_brute_force(tmp_path: Path, docs: list[Any], later: list[Any],
                                  word: str, k: int, session: str | None, change: int) -> None:
    path = tmp_path / f"h{abs(hash((str(docs), word, k, session, change)))}.db"
    con = _home(path)
    try:
        con.execute("BEGIN")
        _put_all(con, docs)
        champions.build(con)
        con.execute("COMMIT")
        flt = Filters(session=session)

        def check() -> None:
            ref = brute(con, word, session)
            same_ranking(ids(search.fts_search(con, [word], flt, k)), ref, k)
            got = champions.candidates(con, word)
            if got is not None:  # the list's answer, when certified, is the same
                hits = certified(con, got[0], got[1], flt, k)
                if hits is not None:
                    same_ranking(ids(hits), ref, k)

        check()
        # new documents (the tail) and a changed one (dirty), before and after a refresh
        con.execute("BEGIN")
        _put_all(con, later, 1000)
        _put(con, change % len(docs), f"{word} {word} {word}", "user", "s1")
        con.execute("COMMIT")
        check()
        con.execute("BEGIN")
        champions.refresh(con, force=True)
        con.execute("COMMIT")
        check()
    finally:
        con.close()
        path.unlink(missing_ok=True)


def _many(con: sqlite3.Connection, n: int) -> None:
    """An old, best match (a short user prompt), then `n` newer, weaker ones."""
    _put(con, 0, "deploy", "user", "s1")
    con.execute("BEGIN")
    for i in range(1, n + 1):
        _put(con, i, f"deploy notes number{i} and more words here", "tool_result",
             "s1" if i % 2 else "s2")
    con.execute("COMMIT")


@pytest.mark.parametrize("lists", [False, True])
def test_an_older_better_match_ranks_first(tmp_path: Path, lists: bool) -> None:
    # The former ranking looked at the newest 5,000 matches only and missed document 0.
    con = _home(tmp_path / "h.db")
    _many(con, 5100)
    if lists:
        con.execute("BEGIN")
        assert champions.build(con) == 6  # deploy notes and more words here
        con.execute("COMMIT")
        got = champions.candidates(con, "deploy")
        assert got is not None and got[0][0][1] == 1  # the list holds the best match
    rows = search.fts_search(con, ["deploy"], Filters(), 3)
    assert ids(rows)[0] == 1
    same_ranking(ids(rows), brute(con, "deploy"), 3)
    assert ids(search.fts_search(con, ["Deploy"], Filters(session="s2"), 5)) == [
        r for _, r in brute(con, "deploy", "s2")[:5]]
    con.close()


def test_dedupe_and_a_certificate_that_fails_fall_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(champions, "CHAMPIONS", 10)
    con = _home(tmp_path / "h.db")
    _many(con, 60)
    con.execute("BEGIN")
    for i in range(3):  # copies (resumed sessions): one hit
        _put(con, 100 + i, "deploy deploy", "user", "s9")
    champions.build(con)
    con.execute("COMMIT")
    got = champions.candidates(con, "deploy")
    assert got is not None
    # unfiltered: the list answers (certified), copies dropped
    hits = certified(con, got[0], got[1], Filters(), 2)
    assert hits is not None
    assert ids(hits) == [r for _, r in brute(con, "deploy")[:2]]
    assert [r[15] for r in hits] == ["deploy deploy", "deploy"]
    # one more would be a tie with the bound: not certified
    assert certified(con, got[0], got[1], Filters(), 3) is None
    # a filter that leaves the champions out: no certificate, the full ranking answers
    assert certified(con, got[0], got[1], Filters(session="s2"), 3) is None
    same_ranking(ids(search.fts_search(con, ["deploy"], Filters(session="s2"), 3)),
                 brute(con, "deploy", "s2"), 3)
    con.close()


def test_words_that_become_common_get_a_list(tmp_path: Path) -> None:
    con = _home(tmp_path / "h.db")
    con.execute("BEGIN")
    champions.build(con)
    con.execute("COMMIT")
    con.execute("BEGIN")
    for i in range(20):
        _put(con, i, f"rollout step {i % 3}" + " rollout" * (i % 4), "assistant", "s1")
    assert champions.refresh(con)
    con.execute("COMMIT")
    assert champions.candidates(con, "rollout") is not None
    same_ranking(ids(search.fts_search(con, ["rollout"], Filters(), 4)),
                 brute(con, "rollout"), 4)
    con.close()


def test_mirror_of_fts5_bm25_is_bit_identical(tmp_path: Path) -> None:
    con = _home(tmp_path / "h.db")
    _many(con, 50)
    nrow, ntok = rank_tokens.totals(con)
    assert (nrow, ntok) == (51, 1 + 50 * 7)
    rows = con.execute("SELECT rowid, bm25(documents_fts) FROM documents_fts"
                       " WHERE documents_fts MATCH 'notes'").fetchall()
    i = bm25.idf(nrow, len(rows))
    for rowid, b in rows:
        assert -1.0 * (0.0 + i * bm25.tf(1.0, 7.0, ntok / nrow)) == b, rowid
    con.close()


def test_a_list_that_grows_is_cut_back_and_stays_exact(tmp_path: Path) -> None:
    con = _home(tmp_path / "h.db")
    _many(con, 40)
    con.execute("BEGIN")
    champions.build(con)
    for i in range(12):  # better than every champion: they join, the list passes 2 x 4
        _put(con, 500 + i, "deploy " * (2 + i % 5), "user" if i % 2 else "assistant", "s1")
    assert champions.refresh(con)
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM rank_champions WHERE term = 'deploy'"
                       ).fetchone()[0] == champions.CHAMPIONS
    got = champions.candidates(con, "deploy")
    assert got is not None
    hits = certified(con, got[0], got[1], Filters(), 3)
    assert hits is not None
    same_ranking(ids(hits), brute(con, "deploy"), 3)
    con.close()


def test_a_word_with_diacritics_uses_the_list_of_its_folded_term(tmp_path: Path) -> None:
    con = _home(tmp_path / "h.db")
    con.execute("BEGIN")
    for i in range(30):
        _put(con, i, "déploy " * (1 + i % 4) + f"étape{i}", ROLES[i % 5], "s1")
    champions.build(con)
    con.execute("COMMIT")
    assert rank_tokens.index_term("DÉPLOY") == "deploy"
    assert rank_tokens.index_term("foo-bar") is None  # two terms: no list
    got = champions.candidates(con, "DÉPLOY")
    assert got is not None
    hits = certified(con, got[0], got[1], Filters(), 2)
    assert hits is not None
    assert ids(hits) == ids(search.fts_search(con, ["deploy"], Filters(), 2, lists=False))
    con.close()
