"""Queries of several common words ranked from champion lists (projections.rank.multi): the
certified answer is the full ranking's, every candidate's score is bit-identical to FTS5's
bm25 x weight (so idf uses the exact document counts), before and after new, changed and
deleted documents and refreshes, with and without deep lists (projections.rank.deep: their
adds and stale marks) (real SQLite FTS5, small lists so that they exist)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from projections import ranking, search
from projections.filters import Filters
from projections.rank import champions, multi
from projections.rank import deep as rank_deep
from projections.rank import tokens as rank_tokens
from projections.text import fts_phrase
from tests.test_rank import WORDS, _home, _put, _put_all, certified, docs_st, ids


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(champions, "CHAMPIONS", 4)
    monkeypatch.setattr(champions, "HOT_DF", 6)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    monkeypatch.setattr(champions, "REFRESH_AT", 1)
    monkeypatch.setattr(champions, "FRESH_MAX", 10_000)
    monkeypatch.setattr(multi, "FULL_BELOW", 0)  # the lists answer even tiny homes
    monkeypatch.setattr(multi, "PER_MATCH", 1e-6)


@pytest.fixture(params=["champions", "deep", "cross"])
def deep(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """With deep lists: every word in >= 8 documents keeps its best 8 (or all of them);
    "cross": and they carry each other's f (rank_deep_cross), "deep": they do not."""
    if request.param != "champions":
        monkeypatch.setattr(rank_deep, "DEEP_SHARE", 1)
        monkeypatch.setattr(rank_deep, "DEEP_MAX", 8)
    else:
        monkeypatch.setattr(rank_deep, "DEEP_MAX", 0)
    if request.param != "cross":
        monkeypatch.setattr(rank_deep, "CROSS", 0)
    return request.param != "champions"


def cross(con: sqlite3.Connection) -> int:
    """Give every wanted deep list its cross columns (the capture loop's later steps)."""
    made = 0
    while (wanted := rank_deep.cross_wanted(con, champions.CHAMPIONS)) and made < 100:
        assert rank_deep.make_cross(con, wanted[0], champions.CHAMPIONS)
        made += 1
    return made


def fts5_scores(con: sqlite3.Connection, words: list[str]) -> dict[int, float]:
    """bm25(documents_fts) x weight of every match, by FTS5 itself."""
    expr = " AND ".join(fts_phrase(w) for w in words)
    return {int(r): float(s) for r, s in con.execute(
        f"SELECT f.rowid, bm25(documents_fts) * {ranking.WEIGHT_SQL} FROM documents_fts f"
        " JOIN documents d ON d.rowid = f.rowid WHERE documents_fts MATCH ?", (expr,))}


def check(con: sqlite3.Connection, words: list[str], flt: Filters, k: int) -> bool:
    """The answer equals the full ranking's, walked and scored as arrays; every certified
    candidate's score is FTS5's, bit for bit, and every other match is under the threshold
    it was certified against. True when the lists answered."""
    full = ids(search.fts_search(con, words, flt, k, lists=False))
    assert ids(search.fts_search(con, words, flt, k)) == full
    seen: list[tuple[list[tuple[float, int]], float]] = []

    def accept(scored: list[tuple[float, int]], threshold: float) -> list[Any] | None:
        seen.append((list(scored), threshold))
        return certified(con, scored, threshold, flt, k)

    hits = multi.search(con, words, accept)
    try:  # crossed lists scored as arrays (browse, mcp, serve): the same answer
        multi.use_arrays()
        assert multi.search(con, words, accept) == hits
    finally:
        multi.ARRAYS = False
    ref = fts5_scores(con, words)
    for scored, threshold in seen:
        for v, rid in scored:
            assert -v == ref[rid], (rid, v, ref[rid])  # also: every candidate matches
        listed = {rid for _, rid in scored}
        assert all(-s <= threshold for rid, s in ref.items() if rid not in listed)
    if hits is None:
        return False
    assert ids(hits) == full
    return True


def df_is_exact(con: sqlite3.Connection) -> None:
    """rank_terms.df (as of wm) plus what changed since is every list word's count now."""
    terms = [str(r[0]) for r in con.execute("SELECT term FROM rank_terms")]
    since = rank_tokens.df_since(con, terms)
    for t in terms:
        df = con.execute("SELECT df FROM rank_terms WHERE term = ?", (t,)).fetchone()[0]
        now = con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                          (fts_phrase(t),)).fetchone()[0]
        assert df + since.get(t, 0) == now, t


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60,
          deadline=None)
@example(  # an add replacing its stale deep entry must not bound the entries after it
    docs=[(["alpha"], None, "s1"), (["beta"], None, "s1"), (["zeta"], None, "s1"),
          (["zeta"], None, "s1"), (["zeta"], None, "s1"), (["beta", "zeta"], None, "s1"),
          (["beta", "zeta"], "user", "s1"), (["beta"], None, "s1"),
          (["alpha", "beta"], None, "s1"), (["alpha", "zeta"], None, "s1"),
          (["alpha"], None, "s1"), (["alpha"], None, "s1"), (["alpha", "zeta"], None, "s1"),
          (["alpha", "alpha", "zeta"], "user", "s1")],
    later=[(["alpha"], None, "s1")] * 6 + [(["alpha"], "user", "s1"),
                                           (["alpha", "alpha"], None, "s1")],
    words=["alpha", "alpha", "zeta"], k=1, session=None, change=5)
@given(docs=docs_st, later=docs_st,
       words=st.lists(st.sampled_from(WORDS), min_size=2, max_size=3),
       k=st.integers(1, 6), session=st.sampled_from([None, "s1"]), change=st.integers(0, 7))
def test_multi_word_top_k_equals_the_full_ranking(
    tmp_path: Path, deep: bool, docs: list[Any], later: list[Any], words: list[str], k: int,
    session: str | None, change: int,
) -> None:
    path = tmp_path / f"h{abs(hash((str(docs), str(words), k, session, change)))}.db"
    con = _home(path)
    try:
        con.execute("BEGIN")
        _put_all(con, docs)
        champions.build(con)
        con.execute("COMMIT")
        cross(con)
        if deep and max(sum(w in ws for ws, _, _ in docs) for w in WORDS) >= 8:
            assert con.execute("SELECT count(*) FROM rank_deep").fetchone()[0]
        flt = Filters(session=session)
        check(con, words, flt, k)
        df_is_exact(con)
        # new documents, a changed one and a deleted one, before and after a refresh
        con.execute("BEGIN")
        _put_all(con, later, 1000)
        _put(con, change % len(docs), " ".join(words * 3), "user", "s1")
        _put(con, (change + 1) % len(docs), "zeta", None, "s2")
        con.execute("DELETE FROM document_rows WHERE rowid = ?", ((change + 2) % len(docs) + 1,))
        con.execute("COMMIT")
        check(con, words, flt, k)
        df_is_exact(con)
        con.execute("BEGIN")
        champions.refresh(con, force=True)
        con.execute("COMMIT")
        cross(con)
        df_is_exact(con)
        check(con, words, flt, k)
        # changes after the fold: deep lists' entries go stale, better texts are added
        con.execute("BEGIN")
        _put(con, (change + 3) % len(docs), " ".join(words * 2), "user", "s1")
        _put(con, 2000, " ".join(words * 4), "question", "s2")
        con.execute("DELETE FROM document_rows WHERE rowid = ?", ((change + 4) % len(docs) + 1,))
        con.execute("COMMIT")
        check(con, words, flt, k)
        con.execute("BEGIN")
        champions.refresh(con, force=True)
        con.execute("COMMIT")
        check(con, words, flt, k)
        df_is_exact(con)
    finally:
        con.close()
        path.unlink(missing_ok=True)


@pytest.fixture
def deep_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deep lists for `_listed`'s common words (`DEEP_SHARE` 1), of at most 40 entries."""
    monkeypatch.setattr(rank_deep, "DEEP_SHARE", 1)
    monkeypatch.setattr(rank_deep, "DEEP_MAX", 40)


def _listed(path: Path, n: int) -> sqlite3.Connection:
    """A history.db of documents of two common words (a few short user prompts are the
    best matches), its champion lists made."""
    con = _home(path)
    con.execute("BEGIN")
    for i in range(n):
        text = f"fix the error in step{i} " + "and more words here " * (1 + i % 3)
        _put(con, i, text, "tool_result" if i % 2 else "assistant", f"s{i % 3}")
    for i in range(3):
        _put(con, n + i, f"fix error now {'fix ' * i}", "user", "s0")
    con.execute("COMMIT")
    con.execute("BEGIN")
    champions.build(con)
    con.execute("COMMIT")
    return con


def test_lists_answer_several_common_words_and_fall_back_when_unsure(tmp_path: Path) -> None:
    con = _listed(tmp_path / "h.db", 60)
    assert check(con, ["fix", "error"], Filters(), 3)  # certified from the lists
    assert check(con, ["error", "FIX", "fix"], Filters(), 2)  # order, case, a repeated word
    # deeper than the lists reach: the certificate fails, the full ranking answers
    assert not check(con, ["fix", "error"], Filters(), 20)
    # a filter that leaves out the champions: not certified, same answer
    assert not check(con, ["fix", "error"], Filters(session="s1"), 3)
    # a word without a list, or one that is not a single term: no candidates
    assert multi._prepare(con, ["fix", "step7"], rank_tokens.texts_of) is None
    assert multi._prepare(con, ["fix", "error-now"], rank_tokens.texts_of) is None
    # new better documents are seen before catch-up folds them in
    _put(con, 500, "fix error fix error", "user", "s1")
    assert check(con, ["fix", "error"], Filters(), 3)
    assert ids(search.fts_search(con, ["fix", "error"], Filters(), 1)) == [
        con.execute("SELECT rowid FROM documents WHERE id = 'transcript:500'").fetchone()[0]]
    df_is_exact(con)
    con.close()


def test_deep_lists_certify_what_champion_lists_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep_lists: None
) -> None:
    con = _listed(tmp_path / "h.db", 60)
    assert con.execute("SELECT count(*) FROM rank_deep").fetchone()[0] >= 2
    assert check(con, ["fix", "error"], Filters(), 20)  # champions (4) alone cannot
    assert check(con, ["fix", "error"], Filters(session="s1"), 3)
    # a changed document goes stale in the deep lists; a better new one is added
    _put(con, 7, "fix fix error", "user", "s1")
    _put(con, 501, "fix error error", "user", "s2")
    con.execute("BEGIN")
    champions.refresh(con, force=True)
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM rank_deep_stale").fetchone()[0] >= 2
    assert con.execute("SELECT count(*) FROM rank_deep_add").fetchone()[0] >= 2
    assert check(con, ["fix", "error"], Filters(), 20)
    con.execute("BEGIN")
    champions.build(con)  # a rebuild forgets them
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM rank_deep_stale").fetchone()[0] == 0
    assert check(con, ["fix", "error"], Filters(), 20)
    con.close()


def test_cross_columns_score_deep_members_without_their_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep_lists: None
) -> None:
    monkeypatch.setattr(multi, "FULL_BELOW", 10**9)  # crossed lists answer anyway
    con = _listed(tmp_path / "h.db", 60)
    words = ["fix", "error", "more"]
    assert multi._prepare(con, words, rank_tokens.texts_of) is None  # no cross columns yet
    assert cross(con) >= 3
    # each cross column is the other word's f in each entry's document, as FTS5 indexed it
    loaded = rank_deep.load(con, words)
    assert set(loaded) == set(words)
    for t, (*_, docs, _fs, _dls, _ws, _stale, _adds, columns) in loaded.items():
        assert set(columns) == set(words) - {t}
        freq, _, _ = rank_tokens.frequencies(
            [(r, text) for r, text, _, _ in rank_tokens.texts_of(con, list(docs))], words)
        for u, column in columns.items():
            assert list(column) == [freq.get((u, d), 0) for d in docs]
    read: list[int] = []

    def text_of(c: sqlite3.Connection, rowids: list[int]) -> list[tuple[int, str, Any, Any]]:
        read.extend(rowids)
        return rank_tokens.texts_of(c, rowids)

    assert multi._prepare(con, words, text_of) is not None
    for k, flt in ((3, Filters()), (20, Filters()), (2, Filters(session="s1"))):
        assert check(con, words, flt, k)
        accept = lambda sc, b, f=flt, n=k: certified(con, sc, b, f, n)  # noqa: E731
        assert multi.search(con, words, accept, text_of) is not None
    assert read == []  # every candidate scored from the lists: no text tokenized

    # a list remade while its texts were read (outside any transaction): nothing written
    def remade(c: sqlite3.Connection, rowids: list[int]) -> list[tuple[int, str, Any, Any]]:
        texts = rank_tokens.texts_of(c, rowids)
        _put(c, 700, "fix fix fix error more more", "user", "s2")
        c.execute("BEGIN")
        champions.build(c)
        c.execute("COMMIT")
        return texts

    assert not rank_deep.make_cross(con, "fix", champions.CHAMPIONS, remade)
    assert con.execute("SELECT count(*) FROM rank_deep_cross").fetchone()[0] == 0
    assert "fix" in rank_deep.cross_wanted(con, champions.CHAMPIONS)
    # without the cross columns the same lists need the texts (or cannot answer)
    assert multi._prepare(con, words, text_of) is None  # FULL_BELOW applies again
    monkeypatch.setattr(multi, "FULL_BELOW", 0)
    assert check(con, words, Filters(), 20)
    accept20 = lambda sc, b: certified(con, sc, b, Filters(), 20)  # noqa: E731
    multi.search(con, words, accept20, text_of)
    assert read
    con.close()


def test_crossed_lists_scored_as_arrays_answer_as_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep_lists: None
) -> None:
    """`use_arrays` (browse): every crossed entry scored at once, bit for bit FTS5's score;
    the entries whose f a column does not keep, the adds, the new and the changed still
    counted exactly; the same answers as the walk."""
    monkeypatch.setattr(multi, "FULL_BELOW", 10**9)
    monkeypatch.setattr(multi, "RELEASE", 2)  # (several releases on a small list)
    monkeypatch.setattr(multi, "ARRAYS", False)  # (restored after the test)
    monkeypatch.setattr(rank_deep, "UNKNOWN", 2)  # f >= 2 is not kept: visited instead
    con = _listed(tmp_path / "h.db", 60)
    words = ["fix", "error", "more"]
    assert cross(con) >= 3
    queries = [(words, k, flt) for k in (2, 3, 20) for flt in (Filters(), Filters(session="s1"))]
    queries += [(["fix", "more"], 20, Filters())]

    def answers() -> list[list[int] | None]:
        out = []
        for ws, k, flt in queries:
            accept = lambda sc, b, f=flt, n=k: certified(con, sc, b, f, n)  # noqa: E731
            hits = multi.search(con, ws, accept)
            out.append(None if hits is None else ids(hits))
            check(con, ws, flt, k)  # every state certified and FTS5's scores
        return out

    for change in range(3):
        monkeypatch.setattr(multi, "ARRAYS", False)
        walked = answers()
        multi.use_arrays()
        st = multi._prepare(con, words, rank_tokens.texts_of)
        assert st is not None and st.held is not None  # scored as arrays: nothing to walk
        assert all(li.at == len(li.order) for li in st.lists.values())
        assert st.walk_bound == float("-inf")
        if change == 0:  # entries with f >= UNKNOWN in some column (visited, unless
            assert any(not li.columns.known.all()  # scored from another list)
                       for li in st.lists.values() if li.columns is not None)
        assert answers() == walked
        assert any(a is not None for a in walked)
        if change == 0:  # new and changed documents the lists have not folded
            _put(con, 7, "fix fix error more", "user", "s1")
            _put(con, 501, "fix error error more", "user", "s2")
        elif change == 1:  # folded: stale marks and adds
            con.execute("BEGIN")
            champions.refresh(con, force=True)
            con.execute("COMMIT")
            assert con.execute("SELECT count(*) FROM rank_deep_add").fetchone()[0] >= 1
    con.close()


def test_stale_marks_of_documents_a_list_does_not_hold_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep_lists: None
) -> None:
    from projections.catchup import make_lists

    monkeypatch.setattr(rank_deep, "KEEP", 0)
    path = tmp_path / "h.db"
    con = _listed(path, 60)
    _put(con, 62, "error", "user", "s0")  # the best 'fix error' prompt: in both lists
    _put(con, 5, "zzz", "assistant", "s2")
    con.execute("BEGIN")
    champions.refresh(con, force=True)
    con.execute("COMMIT")
    held = {t: set(docs) for t, (*_, docs, _f, _d, _w, _s, _a, _c)
            in rank_deep.load(con, [str(r[0]) for r in con.execute(
                "SELECT term FROM rank_deep")]).items()}
    marks = {(str(t), int(d)) for t, d in con.execute("SELECT term, doc FROM rank_deep_stale")}
    assert len(marks) == 2 * len(held) >= 4  # every deep list marks both
    assert rank_deep.untidy(con)
    made = make_lists(path)
    assert made >= len(held)  # cross columns, then compaction steps
    left = {(str(t), int(d)) for t, d in con.execute("SELECT term, doc FROM rank_deep_stale")}
    assert left == {(t, d) for t, d in marks if d in held[t]}
    assert ("fix", 63) in left and ("error", 63) in left  # (rowid 63: document 62)
    assert rank_deep.untidy(con) == [] or not any(
        rank_deep.compact(con, t) for t in rank_deep.untidy(con))
    for words in (["fix", "error"], ["fix", "error", "more"]):
        for k in (3, 20):
            check(con, words, Filters(), k)
    con.close()


def test_a_file_without_rank_was_ranks_fully(tmp_path: Path) -> None:
    con = _listed(tmp_path / "h.db", 40)
    assert multi._prepare(con, ["fix", "error"], rank_tokens.texts_of) is not None
    con.execute("DROP TABLE rank_was")  # a file made before it: df not kept as of wm
    assert multi._prepare(con, ["fix", "error"], rank_tokens.texts_of) is None
    check(con, ["fix", "error"], Filters(), 3)
    con.close()


def test_few_expected_matches_are_ranked_fully(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = _listed(tmp_path / "h.db", 60)
    monkeypatch.setattr(multi, "FULL_BELOW", 63)  # 63 docs, both words in all of them
    assert multi._prepare(con, ["fix", "error"], rank_tokens.texts_of) is not None
    monkeypatch.setattr(multi, "FULL_BELOW", 63.5)
    assert multi._prepare(con, ["fix", "error"], rank_tokens.texts_of) is None
    check(con, ["fix", "error"], Filters(), 3)
    con.close()


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.text(st.characters(max_codepoint=0x17F), max_size=60), min_size=1,
                      max_size=6),
       extra=st.lists(st.sampled_from(["a", "abc", "x1", "1", "e", "é"]), max_size=3))
def test_counts_split_texts_exactly_as_fts5(texts: list[str], extra: list[str]) -> None:
    # ASCII texts are split in Python, the others by FTS5: both must give FTS5's (f, D)
    words = sorted({w for t in texts for w in rank_tokens._ASCII_TOKEN.findall(t.lower())}
                   | {rank_tokens.index_term(e) or e for e in extra})
    rows = list(enumerate(texts, 1))
    freq, sizes, _ = rank_tokens.by_fts5(rows, words)
    got_freq, got_sizes = rank_tokens.counts(rows, words)
    assert got_freq == freq
    assert {r: n for r, n in got_sizes.items() if n} == {r: n for r, n in sizes.items() if n}
    many, many_sizes = rank_tokens.counts_many(rows, words)
    assert {(t, r): n for t, per in many.items() for r, n in per.items()} == freq
    assert {r: n for r, n in many_sizes.items() if n} == {r: n for r, n in sizes.items() if n}


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.text(st.characters(max_codepoint=0x17F), max_size=60), min_size=1,
                      max_size=8),
       extra=st.lists(st.sampled_from(["a", "abc", "x1", "1", "e", "é"]), max_size=3),
       top=st.integers(0, 6))
def test_frequencies_are_fts5s_with_the_common_words(texts: list[str], extra: list[str],
                                                     top: int) -> None:
    # the champion-list fold's tokenizer (champions.refresh): ASCII texts split in Python, the
    # others by FTS5; the same (f, D), in the same order, and the same `top` common words
    # (ties by word) as FTS5 alone
    words = sorted({w for t in texts for w in rank_tokens._ASCII_TOKEN.findall(t.lower())}
                   | {rank_tokens.index_term(e) or e for e in extra})
    rows = list(enumerate(texts, 1))
    want = rank_tokens.by_fts5(rows, words, top)
    got = rank_tokens.frequencies(rows, words, top)
    assert list(got[0].items()) == list(want[0].items())
    assert {r: n for r, n in got[1].items() if n} == {r: n for r, n in want[1].items() if n}
    assert got[2] == want[2]


def test_a_token_fts5_cuts_is_counted_as_fts5_counts_it() -> None:
    # FTS5 keeps the first 32768 bytes of a longer token: such a text goes to FTS5
    rows = [(1, "a" * 40000 + " bb a"), (2, "bb " + "c" * 100)]
    terms = ["a" * rank_tokens.MAX_TOKEN, "bb"]
    assert rank_tokens.frequencies(rows, terms, 3) == rank_tokens.by_fts5(rows, terms, 3)
    assert rank_tokens.counts(rows, terms)[0] == rank_tokens.by_fts5(rows, terms)[0]


def test_a_cancel_stops_the_walk_at_its_next_stop_point(tmp_path: Path) -> None:
    """The threshold algorithm is Python between small statements, which SQLite's interrupt
    cannot reach: a caller's Cancel (projections/cancel.py) stops it at the loop's stop
    point; without one the walk goes on to its own end (the answer is never changed)."""
    from projections.cancel import Cancel
    from projections.errors import Interrupted

    con = _listed(tmp_path / "h.db", 60)
    stop = Cancel()
    asked: list[int] = []

    def accept(scored: list[tuple[float, int]], bound: float) -> None:
        asked.append(len(scored))
        stop.cancel()  # a newer keystroke while the walk goes on
        return None  # (wants more)

    with pytest.raises(Interrupted), stop.watching(con):
        multi.search(con, ["fix", "error"], accept)
    assert len(asked) == 1
    asked.clear()
    assert multi.search(con, ["fix", "error"], lambda s, b: asked.append(1)) is None
    assert len(asked) >= 1
    con.close()


def test_a_servers_first_search_arms_the_arrays_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`agentlog mcp` and `serve` call `many_searches_soon` after each search: the first
    call imports numpy on a thread of its own and turns the arrays on; the later ones start
    nothing."""
    import threading

    from cli.services import search as search_service

    monkeypatch.setattr(multi, "ARRAYS", False)
    monkeypatch.setattr(search_service, "_arrays_asked", [])
    before = set(threading.enumerate())
    search_service.many_searches_soon()
    started = [t for t in threading.enumerate() if t not in before]
    assert [t.name for t in started] in (["agentlog-arrays"], [])  # (it may be done already)
    for t in started:
        t.join(30)
    assert multi.ARRAYS
    before = set(threading.enumerate())
    search_service.many_searches_soon()
    assert not [t for t in threading.enumerate() if t not in before]


def test_the_walk_never_chooses_a_list_walked_to_its_end() -> None:
    """A list walked to its end has head 0; another list's head may have fallen far below
    its T (a deep list's bound carried to a longer mean length). Chosen by head - T alone,
    the finished list won again and again: the walk made no progress and the search never
    returned (seen twice in the suite, on random examples)."""
    done = multi._List(10.0, 10.0, 10.0)
    done.members, done.order, done.at = {1: (1, 10, 1.0, 0)}, [1], 1
    left = multi._List(100.0, 10.0, 10.0)  # its members' v (~1) far below its T (100)
    left.members = {2: (1, 10, 1.0, 0), 3: (1, 10, 1.0, 0)}
    left.order = [2, 3]
    st = multi._State({"a": done, "b": left}, ["a", "b"], ["a", "b"], [1.0, 1.0], 10.0,
                      bound=110.0, budget=0)
    assert done.head() - done.top > left.head() - left.top  # (what chose `done` before)
    st.walk()
    assert left.at == 2 and st.visits == 2
    st.walk()  # every list at its end: nothing to do, and the walk says so
    assert st.walk_bound == float("-inf")
