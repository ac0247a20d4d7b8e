"""Versioned migrations of the team schema, from version 1 of a populated database (issue 27)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from projections.pg import schema
from projections.pg.project import project
from projections.pg.sync import sync
from tests.conftest import run_cli
from tests.test_team_sync import make_log

pytestmark = pytest.mark.postgres


def _v1(url: str, log_dir: Path) -> int:
    """A database as agentlog made it before migrations were recorded: step 1's tables, and
    a host's records in them."""
    log = make_log(log_dir, 12, prefix="old")
    with psycopg.connect(url) as con:
        con.execute(schema.MIGRATIONS[0][2])
        con.execute("INSERT INTO agentlog.hosts(host) VALUES ('old-host')")
        for r in log.read_raw(1, 100):
            con.execute("INSERT INTO agentlog.records(host, seq, hash, value) VALUES"
                        " ('old-host', %s, %s, %s)", (r.seq, r.value[1:33], r.value))
        con.execute("UPDATE agentlog.hosts SET head_seq = %s, head_hash = %s",
                    (log.head().seq, log.head().hash))
    seq = log.head().seq
    log.close()
    return seq


def test_a_version_1_database_with_data_is_migrated(tmp_path: Path, pg_url: str,
                                                    home: Path) -> None:
    head = _v1(pg_url, tmp_path / "old")
    with psycopg.connect(pg_url) as con:
        assert schema.version(con) == 1
        assert schema.ensure_schema(con) == [2, 3, 4, 5]
        con.commit()
        assert schema.version(con) == schema.LATEST == 5
        assert schema.ensure_schema(con) == []  # nothing twice
        names = [r[0] for r in con.execute("SELECT name FROM agentlog.migrations ORDER BY 1")]
        assert len(names) == 5
        with pytest.raises(psycopg.errors.CheckViolation):  # step 2 holds from now on
            con.execute("INSERT INTO agentlog.records VALUES ('old-host', 99,"
                        " decode(repeat('00', 32), 'hex'), '\\x07')")
        con.rollback()
    ver = run_cli(home, "verify", "--postgres", pg_url, "--json")
    assert ver.returncode == 0, ver.stdout.decode() + ver.stderr.decode()
    # a host syncing to the migrated database works as before
    log = make_log(tmp_path / "new", 5, prefix="new")
    assert sync(log, pg_url, "new-host").shipped == log.head().seq
    assert head == 13


def test_team_init_migrates_and_a_newer_database_is_refused(tmp_path: Path, pg_url: str,
                                                            home: Path) -> None:
    _v1(pg_url, tmp_path / "old")
    out = run_cli(home, "team", "init", pg_url)
    assert out.returncode == 0, out.stderr.decode()
    with psycopg.connect(pg_url) as con:
        assert schema.version(con) == schema.LATEST
        con.execute("INSERT INTO agentlog.migrations(version, name) VALUES (99, 'future')")
    again = run_cli(home, "team", "init", pg_url)
    assert again.returncode == 1 and b"newer than this agentlog" in again.stderr


def test_a_version_3_database_with_writers_and_data_is_migrated(
        tmp_path: Path, pg_url: str, home: Path) -> None:
    # version 3 as released: its tables, a host's records, and the writer group holding
    # write privileges on the derived and list tables (its old grants)
    head = _v1(pg_url, tmp_path / "old")
    with psycopg.connect(pg_url) as con:
        with pytest.MonkeyPatch.context() as m:  # the steps released up to version 3
            m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
            m.setattr(schema, "LATEST", 3)
            assert schema.ensure_schema(con) == [2, 3]
        if con.execute("SELECT 1 FROM pg_roles WHERE rolname = 'agentlog_writer'"
                       ).fetchone() is None:
            con.execute("CREATE ROLE agentlog_writer NOLOGIN")
        con.execute("GRANT INSERT, UPDATE, DELETE ON agentlog.documents, agentlog.aliases,"
                    " agentlog.projection, agentlog.rank_terms, agentlog.rank_champions,"
                    " agentlog.projector_locks TO agentlog_writer")
        con.commit()
        assert schema.version(con) == 3
        assert schema.ensure_schema(con) == [4, 5]
        con.commit()
        held = con.execute(
            "SELECT t, p FROM unnest(ARRAY['documents', 'aliases', 'projection',"
            " 'projector_locks', 'rank_terms', 'rank_champions']) t,"
            " unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p"
            " WHERE has_table_privilege('agentlog_writer', 'agentlog.' || t, p)").fetchall()
        assert held == []
    assert project(pg_url, tmp_path / "scratch").hosts == {"old-host": head}
    ver = run_cli(home, "verify", "--postgres", pg_url, "--json")
    assert ver.returncode == 0, ver.stdout.decode() + ver.stderr.decode()
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT last_seq FROM agentlog.projection WHERE host = 'old-host'"
                           ).fetchone() == (head,)
