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
from tests.test_team_sync import make_log

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
    assert "row-level security" in str(err.value)
    with psycopg.connect(team["a"]) as con:
        for stmt in ("UPDATE agentlog.records SET value = '\\x00' WHERE host = 'host-a'",
                     "DELETE FROM agentlog.records WHERE host = 'host-a'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(stmt)
            con.rollback()
    # a writer projects (derived data); the searcher finds both hosts, and cannot write
    assert project(team["a"], tmp_path / "scratch").hosts == {
        "host-a": log_a.head().seq, "host-b": log_b.head().seq}
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
