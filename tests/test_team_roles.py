"""Roles and row-level security on a real server: writers own their hosts, searchers read."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from projections.pg import query as pgq
from projections.pg.conn import TeamError
from projections.pg.project import project
from projections.pg.sync import sync
from tests.conftest import run_cli
from tests.pgserver import PASSWORD
from tests.test_projections_support import append
from tests.test_team_sync import make_log, messages

pytestmark = pytest.mark.postgres


@pytest.fixture
def team(home: Path, pg_url: str) -> dict[str, str]:
    tag = pg_url.rsplit("/", 1)[1]  # roles are cluster-wide: one set per test database
    args = ["team", "init", pg_url, "--writer", f"{tag}_a", "--writer", f"{tag}_b",
            "--reader", f"{tag}_s", "--json"]
    first = run_cli(home, *args)
    assert first.returncode == 0, first.stderr.decode()
    roles = {r["role"]: r["url"] for r in json.loads(first.stdout)["roles"]}
    assert all(roles.values()) and PASSWORD not in first.stdout.decode()
    again = run_cli(home, *args)  # idempotent: nothing changes, no password re-issued
    assert again.returncode == 0, again.stderr.decode()
    assert [r["url"] for r in json.loads(again.stdout)["roles"]] == [None, None, None]
    return {"a": roles[f"agentlog_w_{tag}_a"], "b": roles[f"agentlog_w_{tag}_b"],
            "s": roles[f"agentlog_r_{tag}_s"]}


def test_writers_ship_their_own_hosts_and_nothing_else(
        tmp_path: Path, team: dict[str, str]) -> None:
    log_a = make_log(tmp_path / "a", 10, prefix="a")
    log_b = make_log(tmp_path / "b", 10, prefix="b")
    assert sync(log_a, team["a"], "host-a").shipped == log_a.head().seq
    assert sync(log_b, team["b"], "host-b").shipped == log_b.head().seq
    # writer b may not extend host-a: not through sync, not with a raw INSERT
    more = make_log(tmp_path / "a2", 12, prefix="a")
    with pytest.raises(TeamError):
        sync(more, team["b"], "host-a")
    with psycopg.connect(team["b"]) as con, pytest.raises(psycopg.Error) as err:
        con.execute("INSERT INTO agentlog.records(host, seq, hash, value)"
                    " VALUES ('host-a', 99, decode(repeat('00', 32), 'hex'), '\\x01')")
    assert "permission denied" in str(err.value)  # writes go through the owner's functions
    with psycopg.connect(team["a"]) as con:
        for stmt in ("UPDATE agentlog.records SET value = '\\x00' WHERE host = 'host-a'",
                     "DELETE FROM agentlog.records WHERE host = 'host-a'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(stmt)
            con.rollback()
    # each writer projects its own host (derived data, row-level security: another host's
    # rows are refused); the searcher finds both hosts, and cannot write
    with pytest.raises(TeamError, match="may not write the projection"):
        project(team["a"], tmp_path / "scratch-x", hosts=["host-b"])
    assert project(team["a"], tmp_path / "scratch", hosts=["host-a"]).hosts == {
        "host-a": log_a.head().seq}
    assert project(team["b"], tmp_path / "scratch-b", hosts=["host-b"]).hosts == {
        "host-b": log_b.head().seq}
    hits = pgq.search(team["s"], "zebra", limit=50)["hits"]
    assert {h["host"] for h in hits} == {"host-a", "host-b"}
    with psycopg.connect(team["s"]) as con:
        for stmt in ("INSERT INTO agentlog.hosts(host) VALUES ('evil')",
                     "DELETE FROM agentlog.documents",
                     "UPDATE agentlog.hosts SET head_seq = 0"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(stmt)
            con.rollback()
    with pytest.raises(TeamError):
        sync(log_a, team["s"], "host-s")


def test_a_writer_cannot_forge_edit_or_delete_another_host_s_search_data(
        tmp_path: Path, team: dict[str, str]) -> None:
    log_a = make_log(tmp_path / "a", 10, prefix="a")
    assert sync(log_a, team["a"], "host-a").shipped == log_a.head().seq
    project(team["a"], tmp_path / "scratch", hosts=["host-a"])
    make_log(tmp_path / "b", 3, prefix="b")
    sync(make_log(tmp_path / "b2", 3, prefix="b"), team["b"], "host-b")

    def state() -> list[tuple[object, ...]]:
        with psycopg.connect(team["s"]) as con:
            return [*con.execute("SELECT host, id, text, session FROM agentlog.documents"
                                 " WHERE host = 'host-a' ORDER BY id"),
                    *con.execute("SELECT host, last_seq, last_hash FROM agentlog.projection"
                                 " WHERE host = 'host-a'")]

    before = state()
    assert len(before) > 1
    with psycopg.connect(team["b"]) as con:
        # the derived tables: SELECT only; their writes go through the schema owner's
        # functions, which act only for the caller's own hosts
        for stmt in ("INSERT INTO agentlog.documents(host, id, kind, agent, at, text, tsv)"
                     " VALUES ('host-a', 'forged', 'message', 'x', 1, 'zebra forged',"
                     " to_tsvector('simple', 'zebra forged'))",
                     "UPDATE agentlog.documents SET text = 'edited' WHERE host = 'host-a'",
                     "DELETE FROM agentlog.documents WHERE host = 'host-a'",
                     "DELETE FROM agentlog.aliases WHERE host = 'host-a'",
                     "UPDATE agentlog.projection SET last_seq = 0 WHERE host = 'host-a'",
                     "SELECT agentlog.put_documents('host-a', '[{\"id\": \"forged\","
                     " \"kind\": \"message\", \"agent\": \"x\", \"at\": 1,"
                     " \"archived\": 0, \"text\": \"zebra\", \"words\": \"zebra\"}]')",
                     "SELECT agentlog.drop_documents('host-a', ARRAY['x'])",
                     "SELECT agentlog.set_alias('host-a', 'a', 's', NULL, NULL)",
                     "SELECT agentlog.drop_host('host-a', 2, 'p')",
                     "SELECT agentlog.advance('host-a', 0, '', '{}')",
                     "SELECT agentlog.checkpoint('host-a')",
                     *(f"LOCK TABLE agentlog.{t} IN {m} MODE"
                       for t in ("documents", "aliases", "projection", "projector_locks")
                       for m in ("ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE",
                                 "SHARE ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE",
                                 "ROW EXCLUSIVE"))):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(stmt)
            con.rollback()
    assert state() == before
    hits = pgq.search(team["s"], "zebra", limit=50)["hits"]
    assert all(h["host"] == "host-a" for h in hits) and hits


def test_only_the_host_s_own_writer_can_hold_its_projector_lock(
        tmp_path: Path, team: dict[str, str]) -> None:
    log_a = make_log(tmp_path / "a", 6, prefix="a")
    sync(log_a, team["a"], "host-a")
    project(team["a"], tmp_path / "scratch", hosts=["host-a"])  # makes host-a's lock row
    with psycopg.connect(team["s"]) as con, pytest.raises(
            psycopg.errors.InsufficientPrivilege):  # a reader may not lock it
        con.execute("SELECT * FROM agentlog.projector_locks FOR UPDATE")
    with psycopg.connect(team["b"]) as con:  # another host's writer may not take it
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            con.execute("SELECT agentlog.projector_lock('host-a', true)")
        con.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            con.execute("SELECT * FROM agentlog.projector_locks FOR UPDATE")
        con.rollback()
        # ... and its advisory locks no longer stop host-a's projector
        con.execute("SELECT pg_advisory_lock(hashtext('agentlog.projector'),"
                    " hashtext('host-a'))")
        append(log_a, messages(3, "late"), prefix="late")
        sync(log_a, team["a"], "host-a")
        got = project(team["a"], tmp_path / "scratch", hosts=["host-a"])
        assert not got.busy and got.hosts == {"host-a": log_a.head().seq}
    with psycopg.connect(team["a"]) as holder:  # the host's own second projector waits
        assert holder.execute("SELECT agentlog.projector_lock('host-a', true)").fetchone() \
            == (True,)
        busy = project(team["a"], tmp_path / "scratch2", hosts=["host-a"])
        assert busy.busy and busy.busy_hosts == ["host-a"]


def test_a_writer_cannot_forge_or_lock_the_champion_lists(
        tmp_path: Path, team: dict[str, str]) -> None:
    log_a = make_log(tmp_path / "a", 6, prefix="a")
    sync(log_a, team["a"], "host-a")
    project(team["a"], tmp_path / "scratch", hosts=["host-a"])
    with psycopg.connect(team["b"]) as con:
        for stmt in ("INSERT INTO agentlog.rank_terms VALUES ('zebra', 99, 0, 0)",
                     "INSERT INTO agentlog.rank_champions VALUES ('zebra', 1, 99, 0)",
                     "UPDATE agentlog.rank_terms SET s = 99",
                     "DELETE FROM agentlog.rank_champions",
                     "TRUNCATE agentlog.rank_terms",
                     *(f"LOCK TABLE agentlog.{t} IN {m} MODE"
                       for t in ("rank_terms", "rank_champions")
                       for m in ("ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE"))):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(stmt)
            con.rollback()
        # the upkeep it may call drops only its own hosts' (or gone) documents from lists
        rids = [r[0] for r in con.execute("SELECT rid FROM agentlog.documents")]
        assert rids
    with psycopg.connect(team["s"]) as con, pytest.raises(  # nor may the searcher call it
            psycopg.errors.InsufficientPrivilege):
        con.execute("SELECT agentlog.rank_forget(%s)", (rids,))


_MODES = ("ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE ROW EXCLUSIVE", "SHARE",
          "SHARE UPDATE EXCLUSIVE", "ROW EXCLUSIVE", "ROW SHARE")


def test_a_writer_cannot_lock_write_or_forge_the_log_tables(
        tmp_path: Path, team: dict[str, str]) -> None:
    log_a = make_log(tmp_path / "a", 8, prefix="a")
    sync(log_a, team["a"], "host-a")
    log_b = make_log(tmp_path / "b", 4, prefix="b")
    sync(log_b, team["b"], "host-b")

    def state() -> list[tuple[object, ...]]:
        with psycopg.connect(team["s"]) as con:
            return [*con.execute("SELECT host, owner, head_seq, head_hash FROM agentlog.hosts"
                                 " ORDER BY host"),
                    *con.execute("SELECT host, seq, hash, value FROM agentlog.records"
                                 " ORDER BY host, seq")]

    before = state()
    one = log_a.read_raw(1, 1)[0].value  # a real record, to forge from
    tomb = bytes([0xF0]) + one[1:33] + bytes(8)
    with psycopg.connect(team["b"]) as con:
        # SELECT only on hosts and records: no write, no row lock, no table lock above
        # ACCESS SHARE (a search joins hosts: an exclusive lock there stalled it)
        for stmt in (*(f"LOCK TABLE agentlog.{t} IN {m} MODE"
                       for t in ("hosts", "records") for m in _MODES),
                     "INSERT INTO agentlog.records(host, seq, hash, value)"  # a record of
                     " VALUES ('host-b', 99, substring(%s FROM 2 FOR 32), %s)",  # its own,
                     "UPDATE agentlog.hosts SET head_seq = 0 WHERE host = 'host-b'",  # unchained
                     "INSERT INTO agentlog.hosts(host) VALUES ('host-x')",
                     "DELETE FROM agentlog.records WHERE host = 'host-b'",
                     "TRUNCATE agentlog.records", "TRUNCATE agentlog.hosts",
                     "SELECT * FROM agentlog.hosts WHERE host = 'host-b' FOR UPDATE",
                     "SELECT * FROM agentlog.hosts FOR SHARE",
                     "SELECT * FROM agentlog.records FOR KEY SHARE",
                     # the owner's functions act for the caller's own hosts only
                     "SELECT * FROM agentlog.take_head('host-a')",
                     "SELECT agentlog.forget_records('host-a', ARRAY[1::bigint],"
                     " ARRAY[%s::bytea])",
                     "SELECT agentlog.put_records('host-a', ARRAY[9::bigint],"
                     " ARRAY[%s::bytea])"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(stmt, [one if "INSERT" in stmt else tomb] * stmt.count("%s")
                            or None)
            con.rollback()
        con.execute("LOCK TABLE agentlog.hosts IN ACCESS SHARE MODE")  # what a read takes
        con.rollback()
    with psycopg.connect(team["a"]) as con:
        # its own host: a record that breaks the chain, skips a seq, rewrites a shipped one
        # or is not a known form is refused, and so is a "forget" that is not one
        head = log_a.head().seq
        forged = one[:40] + b"X" + one[41:]
        for seqs, values in (([head + 1], [forged]), ([head + 2], [one]), ([1], [one]),
                             ([head + 1], [b"\x07" + one[1:]])):
            with pytest.raises(psycopg.errors.CheckViolation):
                con.execute("SELECT agentlog.put_records('host-a', %s, %b)", (seqs, values))
            con.rollback()
        for value in (forged, bytes([0xF0]) + bytes(32) + bytes(8)):
            with pytest.raises(psycopg.errors.CheckViolation):
                con.execute("SELECT agentlog.forget_records('host-a', %s, %b)",
                            ([1], [value]))
            con.rollback()
    with psycopg.connect(team["s"]) as con:  # a searcher may not register a host
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            con.execute("SELECT agentlog.register_host('host-s', NULL)")
        con.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            con.execute("LOCK TABLE agentlog.hosts IN ROW EXCLUSIVE MODE")
    assert state() == before
    # the functions' own path still ships, and the server's chain still verifies
    append(log_a, messages(3, "late"), prefix="late")
    assert sync(log_a, team["a"], "host-a").shipped == 3
    from projections.pg.verify import check_hosts
    with psycopg.connect(team["s"]) as con:
        assert [c.ok for c in check_hosts(con)] == [True, True]
