"""Team search (PostgreSQL) ranks every match: an old document that is the best match comes
first however many newer documents also match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog
from eventlog.events import MessageSent
from projections.pg import query as pgq
from projections.pg.project import project
from projections.pg.sync import sync
from tests.test_projections_support import CLAUDE_SRC, append, chunks_of, claude_line, seen

pytestmark = pytest.mark.postgres

NEWER = 30


KINDS = ("message", "report", "progress", "approval")  # weights 2.0, 2.0, 1.5, 2.0


def _msg(i: int, body: str, kind: str = "message", project: str = "/p") -> MessageSent:
    return MessageSent(id=f"m{i}", sender="peer", to=["x"], kind=kind, body=body,
                       at=1_700_000_000_000 + i * 1000, project=project)


def _publish(log: EventLog, tmp_path: Path, pg_url: str, events: list[Any],
             prefix: str = "k") -> None:
    """`events` appended to the log, synced as host alpha and projected."""
    append(log, events, prefix)
    sync(log, pg_url, "alpha")
    project(pg_url, tmp_path / "scratch")


def _make_every_list(pg_url: str) -> Any:
    """Statistics gathered and every wanted list made; the connection (autocommit), open."""
    import psycopg

    from projections.pg import rank

    con = psycopg.connect(pg_url, autocommit=True)
    con.execute("ANALYZE agentlog.documents")
    while rank.make_lists(con):
        pass
    return con


def _as_every_match(pg_url: str, monkeypatch: pytest.MonkeyPatch,
                    cases: list[tuple[str, dict[str, str] | None, int]]) -> int:
    """Each (query, filters, limit) of `cases` searched as the lists answer it and with no
    list (every match ranked): the same hits, snippets included. Returns how many pages the
    lists answered."""
    answered = 0
    for q, flt, k in cases:
        got = [(h["id"], h["snippet"]) for h in pgq.search(pg_url, q, flt, limit=k)["hits"]]
        answered += pgq.last_path() == "lists"
        with monkeypatch.context() as m:
            m.setattr(pgq, "_listed", lambda con: frozenset())
            want = [(h["id"], h["snippet"]) for h in pgq.search(pg_url, q, flt, limit=k)["hits"]]
            assert pgq.last_path() == "all"
        assert got == want, (q, flt, k)
    return answered


def test_an_old_best_match_outranks_many_newer_matches(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the team search once ranked only the newest CANDIDATES (5,000) matches: with it
    # lowered below the number of newer matches, the old best document never ranked
    monkeypatch.setattr(pgq, "CANDIDATES", 10, raising=False)
    log = EventLog(tmp_path / "log")
    _publish(log, tmp_path, pg_url, [_msg(0, "okapi okapi okapi okapi okapi and more okapi")]
             + [_msg(i, f"one okapi among other words {i}") for i in range(1, NEWER + 1)])
    hits = pgq.search(pg_url, "okapi", limit=5)["hits"]
    assert [h["id"] for h in hits] == ["message:m0"] + [
        f"message:m{i}" for i in range(NEWER, NEWER - 4, -1)]  # then ties, newest first
    assert pgq.search(pg_url, "okapi words", limit=50)["hits"][-1]["id"] == "message:m1"
    # a server made before the list tables: projection and search go on, ranking all
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("DROP TABLE agentlog.rank_champions, agentlog.rank_terms")
    pgq.close_connections()
    append(log, [_msg(NEWER + 1, "okapi okapi okapi okapi okapi okapi and okapi")], "more")
    sync(log, pg_url, "alpha")
    assert project(pg_url, tmp_path / "scratch").documents == 1
    assert pgq.search(pg_url, "okapi", limit=1)["hits"][0]["id"] == f"message:m{NEWER + 1}"


def test_champion_lists_give_the_full_ranking_and_follow_new_documents(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from projections.pg import rank

    monkeypatch.setattr(rank, "HOT_DF", 3)
    monkeypatch.setattr(rank, "CHAMPIONS", 4)  # trimmed above 8

    def msgs(lo: int, hi: int) -> list[MessageSent]:
        return [_msg(i, " ".join(["okapi"] * (1 + i * 7 % 5) + [f"w{i % 3}", "zebra"]),
                     KINDS[i % 4], f"/p{i % 2}") for i in range(lo, hi)]

    def check(answered_by_lists: int) -> None:
        cases = [("okapi", None, k) for k in (1, 3, 6)] + [
            ("okapi", {"kind": "report"}, 2), ("okapi", {"project": "/p1"}, 3),
            ("zebra", None, 2), ("okapi w1", None, 3)]
        assert _as_every_match(pg_url, monkeypatch, cases) >= answered_by_lists

    # a transcript whose best okapi line is later re-emitted (same uid) without the word
    lines = claude_line("u0", "user", "okapi okapi okapi okapi okapi okapi") + b"".join(
        claude_line(f"u{i}", "user", f"okapi zebra line {i}") for i in range(1, 4))
    log = EventLog(tmp_path / "log")
    _publish(log, tmp_path, pg_url, [*msgs(0, 24), seen(CLAUDE_SRC, "claude", "claude.session"),
                                     *chunks_of(CLAUDE_SRC, lines, [])])
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("ANALYZE agentlog.documents")
        assert rank.make_lists(con) == 0  # the projector's pass made them: okapi, zebra, w0..w2
        assert {str(r[0]) for r in con.execute("SELECT term FROM agentlog.rank_terms")} \
            == {"okapi", "zebra", "w0", "w1", "w2"}
        assert con.execute("SELECT count(*) FROM agentlog.rank_champions WHERE term = 'okapi'"
                           ).fetchone() == (4,)
    pgq.close_connections()
    check(answered_by_lists=3)
    # newer documents, the best okapi among them, are folded in by the projector
    _publish(log, tmp_path, pg_url, [
        *msgs(24, 40), *chunks_of(CLAUDE_SRC, claude_line("u0", "user", "zebra now"), [],
                                  start=len(lines))], "more")
    with psycopg.connect(pg_url) as con:
        n, = con.execute("SELECT count(*) FROM agentlog.rank_champions WHERE term = 'okapi'"
                         ).fetchone() or (0,)
        assert 4 <= n <= 8  # folded, then trimmed with the bound raised
        assert con.execute("SELECT text FROM agentlog.documents WHERE text LIKE 'zebra now%'"
                           ).fetchone(), "the re-emitted line replaced its document"
    pgq.close_connections()
    # bm25 (projections.pg.bm25): the trim raised the bound to a document with the same
    # (f, D, weight) as the members, and a tie at the bound never certifies (as history.db's
    # lists): fewer answers from the lists, the same answers
    check(answered_by_lists=1)
    # longer documents raise the mean length: a list made at a mean length the corpus
    # outgrew by more than DRIFT is made again by the projector's pass, at today's (until
    # then members certify only above the bound scaled by the growth, projections.pg.bm25)
    with psycopg.connect(pg_url) as con:
        before, = con.execute("SELECT avgdl FROM agentlog.rank_terms WHERE term = 'okapi'"
                              ).fetchone() or (0.0,)
    longer = [_msg(i, " ".join(["okapi", "zebra"] + [f"filler{j}" for j in range(30)]),
                   KINDS[i % 4], "/p0") for i in range(40, 60)]
    _publish(log, tmp_path, pg_url, longer, "longer")
    with psycopg.connect(pg_url) as con:
        mean, = con.execute("SELECT sum(tokens)::float8 / sum(docs) FROM agentlog.bm25_hosts"
                            ).fetchone() or (0.0,)
        after, = con.execute("SELECT avgdl FROM agentlog.rank_terms WHERE term = 'okapi'"
                             ).fetchone() or (0.0,)
    assert before * (1 + rank.DRIFT) < mean and after == mean
    pgq.close_connections()
    check(answered_by_lists=1)
    # and a list that drifted, not yet made again: the same answers
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("UPDATE agentlog.rank_terms SET avgdl = avgdl / 2")  # (as the owner)
    pgq.close_connections()
    check(answered_by_lists=0)


def test_a_first_projection_makes_its_lists_before_any_analyze(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    from projections.pg import rank

    monkeypatch.setattr(rank, "HOT_DF", 3)
    monkeypatch.setattr(rank, "CHAMPIONS", 4)
    log = EventLog(tmp_path / "log")
    append(log, [_msg(i, " ".join(["okapi"] * (1 + i * 7 % 5) + [f"w{i % 3}", "zebra"]),
                      KINDS[i % 4], f"/p{i % 2}") for i in range(24)])
    sync(log, pg_url, "alpha")
    with psycopg.connect(pg_url, autocommit=True) as con:  # (as the owner) no autovacuum
        con.execute("ALTER TABLE agentlog.documents SET (autovacuum_enabled = false)")
    project(pg_url, tmp_path / "scratch")  # makes the lists wanted at its end
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'agentlog'"
                           " AND tablename = 'documents'").fetchone() == (0,)
        listed = {str(r[0]) for r in con.execute("SELECT term FROM agentlog.rank_terms")}
    assert listed == {"okapi", "zebra", "w0", "w1", "w2"}  # each in more than 3 documents
    pgq.close_connections()
    cases = [("okapi", None, k) for k in (1, 3, 6)] + [("okapi", {"project": "/p1"}, 3)]
    assert _as_every_match(pg_url, monkeypatch, cases) >= 2  # (a tie at a bound never certifies)


def test_several_words_are_ranked_from_their_lists_as_from_every_match(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # an AND of common words: the members of their lists that beat the sum of the bounds
    # (projections.pg.bm25.walk) are exactly the head of the full ranking
    import random

    import psycopg

    from projections.pg import rank

    monkeypatch.setattr(rank, "HOT_DF", 20)
    monkeypatch.setattr(rank, "CHAMPIONS", 25)
    rng = random.Random(7)
    vocab = ["okapi", "zebra", "lynx", "ibex", "tapir"]
    msgs = []
    for i in range(300):
        words = [rng.choice(vocab[:3]) if rng.random() < 0.5 else rng.choice(vocab)
                 for _ in range(rng.randrange(2, 14))] + [f"filler{rng.randrange(40)}"
                                                          for _ in range(rng.randrange(0, 20))]
        rng.shuffle(words)
        msgs.append(_msg(i, " ".join(words), KINDS[i % 4], f"/p{i % 3}"))
    log = EventLog(tmp_path / "log")
    _publish(log, tmp_path, pg_url, msgs)
    with _make_every_list(pg_url) as con:
        listed = {r[0] for r in con.execute("SELECT term FROM agentlog.rank_terms")}
    assert set(vocab) <= listed
    pgq.close_connections()
    queries = ["okapi zebra", "zebra okapi", "lynx ibex tapir", "okapi okapi lynx",
               "tapir ibex", "okapi zebra lynx ibex"]
    walked = _as_every_match(pg_url, monkeypatch, [
        (q, flt, k) for q in queries for flt, k in (
            (None, 1), (None, 5), (None, 20), ({"kind": "report"}, 3), ({"project": "/p1"}, 4))])
    assert walked >= 10, walked  # most pages come from the lists
    # a word's list dropped after the reader last looked (its cached set still names it):
    # no bound, nothing certified, every match ranked; the same answers
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("DELETE FROM agentlog.rank_champions WHERE term = 'zebra'")
        con.execute("DELETE FROM agentlog.rank_terms WHERE term = 'zebra'")
    with monkeypatch.context() as m:
        m.setattr(pgq, "_listed", lambda con: frozenset(vocab))
        got = [h["id"] for h in pgq.search(pg_url, "okapi zebra", limit=5)["hits"]]
        assert pgq.last_path() == "all"
        m.setattr(pgq, "_listed", lambda con: frozenset())
        assert got == [h["id"] for h in pgq.search(pg_url, "okapi zebra", limit=5)["hits"]]


def test_deep_lists_rank_an_and_of_common_words_from_the_lists_alone(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the commonest words keep deep lists whose members carry each other's f (`x`,
    # projections.pg.deep): an AND of them is scored from the lists and equals the full
    # ranking, before and after the projector folds new and rewritten documents in
    import random
    from collections import Counter

    import psycopg

    from projections.pg import deep, rank

    monkeypatch.setattr(rank, "HOT_DF", 20)
    monkeypatch.setattr(rank, "CHAMPIONS", 10)
    monkeypatch.setattr(deep, "DEEP_SHARE", 2)  # deep: half of a word's documents
    monkeypatch.setattr(deep, "CROSS", 3)
    rng = random.Random(5)
    vocab = ["okapi", "zebra", "lynx", "ibex", "tapir"]

    def msgs(lo: int, hi: int, seed: int) -> list[MessageSent]:
        r = random.Random(seed)
        out = []
        for i in range(lo, hi):
            words = [r.choice(vocab[:3]) if r.random() < 0.6 else r.choice(vocab)
                     for _ in range(r.randrange(1, 12))] + [
                f"filler{r.randrange(40)}" for _ in range(r.randrange(0, 25))]
            if KINDS[i % 4] == "progress":  # (weight 1.5, the others 2.0) denser in the
                words = [r.choice(vocab[:3])] * r.randrange(6, 14) + words[:2]  # words:
                # the pages mix weights
            r.shuffle(words)
            out.append(_msg(i, " ".join(words), KINDS[i % 4], f"/p{i % 3}"))
        return out

    def check_x(con: Any) -> int:
        cross = [str(r[0]) for r in con.execute(
            "SELECT term FROM agentlog.rank_cross ORDER BY pos")]
        rows = con.execute("SELECT c.x, d.text FROM agentlog.rank_champions c"
                           " JOIN agentlog.documents d ON d.rid = c.rid"
                           " WHERE c.term = ANY(%s)", (cross,)).fetchall()
        for x, text in rows:  # each byte: 0 absent, else 1 + the word's count
            counts = Counter(text.split())
            assert bytes(x) == bytes(min(1 + counts[w], 255) if counts[w] else 0
                                     for w in cross), (bytes(x), text)
        return len(rows)

    queries = ["okapi", "zebra", "tapir", "okapi zebra", "zebra lynx okapi",
               "lynx okapi okapi", "okapi tapir", "tapir zebra", "ibex zebra",
               "lynx ibex tapir"]

    def check(min_from_lists: int) -> None:
        walked = _as_every_match(pg_url, monkeypatch, [
            (q, flt, k) for q in queries for flt, k in (
                (None, 1), (None, 5), (None, 30), ({"kind": "report"}, 3),
                ({"project": "/p1"}, 4))])
        assert walked >= min_from_lists, walked

    log = EventLog(tmp_path / "log")
    _publish(log, tmp_path, pg_url, msgs(0, 400, 1))
    with _make_every_list(pg_url) as con:
        cross = {str(r[0]) for r in con.execute("SELECT term FROM agentlog.rank_cross")}
        assert cross == set(vocab[:3])  # the three commonest
        keeps: dict[str, int] = dict(con.execute(
            "SELECT term, keep FROM agentlog.rank_terms").fetchall())
        assert all(keeps[w] > rank.CHAMPIONS for w in cross), keeps
        assert all(keeps[w] == rank.CHAMPIONS for w in vocab[3:]), keeps
        assert check_x(con) > 300
    pgq.close_connections()
    check(min_from_lists=15)
    # new documents, and old ones rewritten with other words, folded in by the projector
    _publish(log, tmp_path, pg_url, msgs(400, 480, 2) + msgs(0, 60, 3), "more")
    with psycopg.connect(pg_url, autocommit=True) as con:
        check_x(con)
    pgq.close_connections()
    check(min_from_lists=15)
    # long documents double the mean length and the lists are not made again: a list's
    # key order (at the mean length it was made with) is no longer the score's, and only
    # the certificate (the bound past the prefix read, scaled by the growth) keeps the
    # answers those of the full ranking
    monkeypatch.setattr(rank, "DRIFT", 1e9)
    longer = [_msg(i, " ".join([rng.choice(vocab) for _ in range(rng.randrange(1, 6))]
                               + [f"filler{j}" for j in range(rng.randrange(40))]),
                   KINDS[i % 4], "/p0") for i in range(480, 640)]
    _publish(log, tmp_path, pg_url, longer, "longer")
    pgq.close_connections()
    check(min_from_lists=5)


def test_one_word_reads_a_prefix_of_its_list_with_the_bound_past_it(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # one word reads the first CHAMPIONS members of a (deep) list: the key of the member
    # past them bounds everything else (projections.pg.bm25.listed), and members are scored
    # with their stored weight; hand-made documents whose order the weights decide, then
    # one whose key (at the mean length the list was made with) is fourth but whose score
    # is third once the mean length grew sevenfold

    from projections.pg import deep, rank

    monkeypatch.setattr(rank, "HOT_DF", 3)
    monkeypatch.setattr(rank, "CHAMPIONS", 3)
    monkeypatch.setattr(rank, "DRIFT", 1e9)  # the lists are not made again
    monkeypatch.setattr(deep, "DEEP_SHARE", 1)
    monkeypatch.setattr(deep, "CROSS", 1)

    first = [_msg(0, "okapi " * 6, "progress"),  # weight 1.5: 2.81 at the first mean length
             _msg(1, "okapi okapi okapi x1 x2 x3")]  # weight 2.0: 3.26
    first += [_msg(i, "okapi " + " ".join(f"y{j}" for j in range(7)))
              for i in range(2, 7)]  # 1.91 each
    log = EventLog(tmp_path / "log")
    _publish(log, tmp_path, pg_url, first)
    with _make_every_list(pg_url) as con:
        assert con.execute("SELECT keep FROM agentlog.rank_terms WHERE term = 'okapi'"
                           ).fetchone() == (7,)  # deep: every document of the word
    pgq.close_connections()

    def both(k: int) -> tuple[list[str], list[str]]:
        got = [h["id"] for h in pgq.search(pg_url, "okapi", limit=k)["hits"]]
        path = pgq.last_path()
        with monkeypatch.context() as m:
            m.setattr(pgq, "_listed", lambda con: frozenset())
            want = [h["id"] for h in pgq.search(pg_url, "okapi", limit=k)["hits"]]
        return [*got, str(path)], [*want, str(path)]

    got, want = both(2)
    assert got == want == ["message:m1", "message:m0", "lists"]
    # a fourth by key (5 in 30 words: 2.43 at the first mean length) and one above the
    # rest (3.49); then documents without the word raise the mean length sevenfold
    _publish(log, tmp_path, pg_url,
             [_msg(7, "okapi " * 5 + " ".join(f"z{j}" for j in range(25))),
              _msg(8, "okapi okapi okapi okapi z1 z2")]
             + [_msg(i, " ".join(f"f{j}" for j in range(60))) for i in range(9, 39)], "more")
    pgq.close_connections()
    got, want = both(3)
    assert got[:3] == want[:3] == ["message:m8", "message:m1", "message:m7"]
