"""The PostgreSQL projection and search: same parsers, same contract, plus `host`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest

from eventlog import EventLog
from projections import query as local
from projections.errors import NotFound, QueryError
from projections.pg import project as projector
from projections.pg import query as pgq
from projections.pg.project import project
from projections.pg.sync import sync
from projections.rebuild import rebuild
from tests.test_projections_support import append, mixed_events
from tests.test_team_sync import make_log

pytestmark = pytest.mark.postgres

QUERIES = ["zebra", "café", "migration plan", "中文", "okapi", "database FTS5", "plugh",
           "OR NOT", "xyzzy"]


@pytest.fixture
def two_hosts(tmp_path: Path, pg_url: str) -> tuple[str, EventLog, Path]:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    other = EventLog(tmp_path / "log2")
    append(other, mixed_events()[:3])
    sync(log, pg_url, "alpha", batch=4)
    sync(other, pg_url, "beta")
    scratch = tmp_path / "scratch"
    result = project(pg_url, scratch, batch=3)
    assert not result.busy and result.hosts == {"alpha": log.head().seq,
                                                "beta": other.head().seq}
    db_path = tmp_path / "history.db"
    rebuild(db_path, log)
    return pg_url, log, db_path


def _ids(result: dict[str, object]) -> list[str]:
    return sorted(str(h["id"]) for h in result["hits"])  # type: ignore[index,attr-defined]


def test_same_hits_as_local_search_with_host_on_every_hit(
        two_hosts: tuple[str, EventLog, Path]) -> None:
    url, _log, db_path = two_hosts
    for text in QUERIES:
        want = local.search(db_path, text, limit=50)
        got = pgq.search(url, text, {"host": "alpha"}, limit=50)
        assert got["engine"] == "postgres"
        assert _ids(got) == _ids(want), text
        for hit in got["hits"]:
            assert hit["host"] == "alpha"
            assert set(hit) == set(want["hits"][0]) | {"host"} if want["hits"] else True
    both = pgq.search(pgq_url := url, "migration", limit=50)
    assert {h["host"] for h in both["hits"]} <= {"alpha", "beta"}
    assert pgq.search(pgq_url, "zebra", {"host": "beta"})["hits"] == []
    cov = both["coverage"]
    assert cov["events"] > 0 and {h["host"] for h in cov["hosts"]} == {"alpha", "beta"}


def test_query_rules_hold(two_hosts: tuple[str, EventLog, Path]) -> None:
    url = two_hosts[0]
    with pytest.raises(QueryError) as err:
        pgq.search(url, " ".join(f"w{i}" for i in range(33)))
    assert err.value.param == "query"
    with pytest.raises(QueryError):
        pgq.search(url, "zebra", {"nope": 1})
    # operators and LIKE metacharacters are literal text
    assert pgq.search(url, "zebra & !café | (x)")["hits"] == pgq.search(url, "zebra café x")[
        "hits"]
    assert pgq.search(url, "%_")["hits"] == []  # no tokens: no hits, never a LIKE '%%'
    assert _ids(pgq.search(url, "中%", {"host": "alpha"})) == _ids(
        local.search(two_hosts[2], "中"))


def test_conversation_and_document(two_hosts: tuple[str, EventLog, Path]) -> None:
    url, _log, db_path = two_hosts
    hit = pgq.search(url, "zebra", {"host": "alpha", "kind": "transcript"})["hits"][0]
    want = local.get_conversation(db_path, hit["conversation"], limit=2)
    got = pgq.get_conversation(url, hit["conversation"], limit=2, host="alpha")
    assert [i["id"] for i in got["items"]] == [i["id"] for i in want["items"]]
    assert all(i["host"] == "alpha" for i in got["items"])
    seen = [i["id"] for i in got["items"]]
    while got["next"]:
        got = pgq.get_conversation(url, hit["conversation"], after=got["next"], limit=2,
                                   host="alpha")
        seen += [i["id"] for i in got["items"]]
    assert seen == [i["id"] for i in local.get_conversation(db_path, hit["conversation"],
                                                             limit=100)["items"]]
    doc = pgq.get_document(url, hit["id"])
    assert doc is not None and doc["body"] == local.get_document(db_path, hit["id"])["body"]
    with pytest.raises(NotFound):
        pgq.get_conversation(url, "no-such-conversation")


def test_rebuild_is_replay_and_one_projector_at_a_time(
        two_hosts: tuple[str, EventLog, Path], tmp_path: Path) -> None:
    url, log, _ = two_hosts

    def rows() -> list[tuple[str, str, str]]:
        with psycopg.connect(url) as con:
            return [(str(a), str(b), str(c)) for a, b, c in con.execute(
                "SELECT host, id, md5(text || coalesce(conversation, '') || agent)"
                " FROM agentlog.documents ORDER BY host, id")]

    before = rows()
    shutil.rmtree(tmp_path / "scratch")  # another machine projects next: replay
    again = project(url, tmp_path / "other-scratch", batch=1000)
    assert sorted(again.replayed) == ["alpha", "beta"]
    assert rows() == before
    append(log, mixed_events()[:1], prefix="more")
    sync(log, url, "alpha")
    with psycopg.connect(url) as holder:  # another projector of alpha holds its lock row
        holder.execute("SELECT * FROM agentlog.projector_locks WHERE host = 'alpha'"
                       " FOR UPDATE")
        held = project(url, tmp_path / "other-scratch")
        assert held.busy and held.busy_hosts == ["alpha"] and "alpha" not in held.hosts
        assert held.hosts == {"beta": 3 + 1}  # beta's projector is not blocked by alpha's
    done = project(url, tmp_path / "other-scratch", hosts=["alpha"])
    assert not done.busy and done.replayed == [] and done.hosts["alpha"] == log.head().seq


def test_no_projector_transaction_outlives_its_batch(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch updates the same statistics rows (words every message holds): before the
    third batch, what the second left dead can be vacuumed, since the lock's transaction
    began after it (one transaction held for the whole host kept every dead row of the
    projection, in every table, until the host was done)."""
    log = make_log(tmp_path / "log", 12)
    sync(log, pg_url, "alpha")
    said: list[str] = []
    calls: list[int] = []
    real = projector._HostProjector._batch

    def batch(self: Any, *args: Any) -> bool:
        if len(calls) == 2:  # two batches committed, the third not begun
            with psycopg.connect(pg_url, autocommit=True) as con:
                con.add_notice_handler(lambda d: said.append(d.message_primary or ""))
                con.execute("VACUUM (VERBOSE) agentlog.bm25_df")
        calls.append(1)
        return bool(real(self, *args))

    monkeypatch.setattr(projector._HostProjector, "_batch", batch)
    done = project(pg_url, tmp_path / "scratch", batch=4)
    assert done.hosts == {"alpha": log.head().seq} and len(calls) == 5  # 4 and the empty one
    tuples = [m for n in said for m in re.findall(
        r"tuples: (\d+) removed, \d+ remain, (\d+) are dead but not yet removable", n)]
    removed, stuck = tuples[0]  # the table's (then its TOAST table's)
    assert int(removed) > 0 and stuck == "0", said


def test_a_projector_whose_lock_was_taken_between_batches_stops(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    log = make_log(tmp_path / "log", 12)
    sync(log, pg_url, "alpha")
    renewals: list[int] = []
    real = projector._Lock.again
    with psycopg.connect(pg_url) as other:  # another projector of alpha, between two batches

        def again(self: projector._Lock) -> bool:
            renewals.append(1)
            if len(renewals) == 3:  # the first take, then after batches 1 and 2
                self.holder.rollback()
                other.execute("SELECT * FROM agentlog.projector_locks WHERE host = 'alpha'"
                              " FOR UPDATE")
            return real(self)

        monkeypatch.setattr(projector._Lock, "again", again)
        got = project(pg_url, tmp_path / "scratch", batch=4)
        assert got.busy and got.busy_hosts == ["alpha"] and got.hosts == {"alpha": 8}
    monkeypatch.undo()
    rest = project(pg_url, tmp_path / "scratch", batch=4)  # where the first left off
    assert not rest.busy and rest.replayed == [] and rest.hosts == {"alpha": log.head().seq}
    assert rest.events == log.head().seq - 8


def test_cjk_substring_uses_the_partial_trigram_index(
        two_hosts: tuple[str, EventLog, Path]) -> None:
    from projections.pg.schema import CJK_PREDICATE

    with psycopg.connect(two_hosts[0]) as con:
        con.execute("SET enable_seqscan = off")  # tiny table: ask whether the index CAN serve
        plan = "\n".join(r[0] for r in con.execute(
            f"EXPLAIN SELECT rid FROM agentlog.documents d WHERE d.{CJK_PREDICATE}"
            " AND d.text ILIKE %s", ("%中文%",)))
    assert "documents_cjk_trgm" in plan


def test_history_views_match_local(two_hosts: tuple[str, EventLog, Path]) -> None:
    from projections import db as local_db
    from projections import history as lh
    from projections.pg import history as ph

    url, _log, db_path = two_hosts
    con = local_db.connect(db_path, readonly=True)
    try:
        want_projects = lh.projects(con)
        assert want_projects, "the fixture has transcript turns with a project"
        got_projects = ph.projects(url, host="alpha")
        assert [(p["project"], p["turns"]) for p in got_projects] == [
            (p["project"], p["turns"]) for p in want_projects]
        project = want_projects[0]["project"]
        f = lh.HistoryFilters()
        want = lh.history_page(con, project, f)
        got = ph.history_page(url, project, f, host="alpha")
        assert [t["id"] for t in got["turns"]] == [t["id"] for t in want["turns"]]
        assert [s["sessionId"] for s in got["sessions"]] == [
            s["sessionId"] for s in lh.sessions(con, project)]
        assert all(t["host"] == "alpha" for t in got["turns"])
        assert got["hiddenArchivedSessions"] == want["hiddenArchivedSessions"]
        assert [p["project"] for p in ph.projects(url, "alpha", include_archived=True)] == [
            p["project"] for p in lh.projects(con, include_archived=True)]
        assert ph.archived_sessions(url) == 0 == lh.archived_sessions(con)
        for text in ("zebra", "中文", "okapi"):
            w = lh.search(con, text)
            g = ph.search(url, text, host="alpha")
            assert [h["id"] for h in g["hits"]] == [h["id"] for h in w["hits"]], text
            assert [h["preview"] for h in g["hits"]] == [h["preview"] for h in w["hits"]]
            assert g["hiddenArchivedSessions"] == w["hiddenArchivedSessions"]
        with pytest.raises(QueryError):
            ph.search(url, "zebra", role="nobody")
    finally:
        con.close()


def test_archived_sessions_are_hidden_and_counted_like_local(
        two_hosts: tuple[str, EventLog, Path], tmp_path: Path) -> None:
    from eventlog.events import SessionArchived
    from projections import db as local_db
    from projections import history as lh
    from projections.pg import history as ph

    url, log, db_path = two_hosts
    append(log, [SessionArchived(project="/proj", session="s1", path="x", sha256="0" * 64,
                                 turns=3, newest_at=2**62, at=2)], prefix="arch")
    sync(log, url, "alpha")
    project(url, tmp_path / "scratch", hosts=["alpha"])
    rebuild(db_path, log)
    con = local_db.connect(db_path, readonly=True)
    try:
        want = lh.search(con, "zebra")
        got = ph.search(url, "zebra", host="alpha")
        assert want["hiddenArchivedSessions"] == 1 == got["hiddenArchivedSessions"]
        assert [h["id"] for h in got["hits"]] == [h["id"] for h in want["hits"]]
        assert ph.archived_sessions(url) == lh.archived_sessions(con) == 1
        page = ph.history_page(url, "/proj", lh.HistoryFilters(), host="alpha")
        assert page["hiddenArchivedSessions"] == lh.history_page(
            con, "/proj", lh.HistoryFilters())["hiddenArchivedSessions"] == 1
    finally:
        con.close()


def test_a_peer_identity_finds_what_was_addressed_to_it(
        two_hosts: tuple[str, EventLog, Path]) -> None:
    """Schema 8 semantics on the team server too: `session` = a recipient's identity."""
    url, _log, db_path = two_hosts
    for who in ("peer-a", "peer-b", "nobody"):
        for text in ("migration", "report", "café", "the"):
            want = local.search(db_path, text, {"session": who}, limit=50)
            got = pgq.search(url, text, {"host": "alpha", "session": who}, limit=50)
            assert _ids(got) == _ids(want), (who, text)
    got = pgq.search(url, "migration", {"host": "alpha", "session": "peer-a"}, limit=50)
    assert {"message:m3", "message:m4"} <= set(_ids(got))


def test_a_two_character_cjk_word_is_found_through_the_tsvector_index(
        two_hosts: tuple[str, EventLog, Path]) -> None:
    """A trigram needs three characters: the projection adds CJK bigrams to `tsv`, so "中文"
    has an index to use, and answers as local search does."""
    url, _log, db_path = two_hosts
    with psycopg.connect(url) as con:
        con.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in con.execute(
            "EXPLAIN SELECT rid FROM agentlog.documents d WHERE d.tsv @@"
            " plainto_tsquery('simple', %s) AND d.text ILIKE %s", ("中文", "%中文%")))
        grams = con.execute("SELECT count(*) FROM agentlog.documents WHERE tsv @@"
                            " plainto_tsquery('simple', '中文')").fetchone()
    assert "documents_tsv" in plan and grams is not None and grams[0] > 0
    want = local.search(db_path, "中文", limit=50)
    got = pgq.search(url, "中文", {"host": "alpha"}, limit=50)
    assert _ids(got) == _ids(want) and _ids(got)
