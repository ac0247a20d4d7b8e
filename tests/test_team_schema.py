"""Versioned migrations of the team schema, from version 1 of a populated database (issue 27)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from projections.pg import logsql, schema
from projections.pg.project import project
from projections.pg.roles import _with_credentials
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
        assert schema.ensure_schema(con) == [2, 3, 4, 5, 6, 7]
        con.commit()
        assert schema.version(con) == schema.LATEST == 7
        assert schema.ensure_schema(con) == []  # nothing twice
        names = [r[0] for r in con.execute("SELECT name FROM agentlog.migrations ORDER BY 1")]
        assert len(names) == 7
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
        assert schema.ensure_schema(con) == [4, 5, 6, 7]
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


# what a writer held on the log tables up to step 4 (`team init`'s grants and policies then)
_STEP4_WRITER = """
GRANT USAGE ON SCHEMA agentlog TO agentlog_writer;
GRANT SELECT ON ALL TABLES IN SCHEMA agentlog TO agentlog_writer;
GRANT INSERT, UPDATE (head_seq, head_hash, synced_at) ON agentlog.hosts TO agentlog_writer;
GRANT INSERT, UPDATE (value) ON agentlog.records TO agentlog_writer;
ALTER TABLE agentlog.hosts ENABLE ROW LEVEL SECURITY;
ALTER TABLE agentlog.records ENABLE ROW LEVEL SECURITY;
CREATE POLICY hosts_read ON agentlog.hosts FOR SELECT USING (true);
CREATE POLICY hosts_register ON agentlog.hosts FOR INSERT TO agentlog_writer
  WITH CHECK (owner = current_user);
CREATE POLICY hosts_advance ON agentlog.hosts FOR UPDATE TO agentlog_writer
  USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY records_read ON agentlog.records FOR SELECT USING (true);
CREATE POLICY records_own ON agentlog.records FOR INSERT TO agentlog_writer
  WITH CHECK (EXISTS (SELECT 1 FROM agentlog.hosts h
                      WHERE h.host = records.host AND h.owner = current_user));
"""


def test_a_version_4_database_with_writers_and_data_is_migrated(
        tmp_path: Path, pg_url: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # version 4 as released, with a synced and projected host and a writer's old grants
    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:4])
        m.setattr(schema, "LATEST", 4)
        with psycopg.connect(pg_url) as con:
            assert schema.ensure_schema(con) == [1, 2, 3, 4]
            if con.execute("SELECT 1 FROM pg_roles WHERE rolname = 'agentlog_writer'"
                           ).fetchone() is None:
                con.execute("CREATE ROLE agentlog_writer NOLOGIN")
            con.execute(_STEP4_WRITER + schema.WRITER_GRANTS)
            con.execute("INSERT INTO agentlog.hosts(host) VALUES ('old-host')")
            log = make_log(tmp_path / "old", 12, prefix="old")
            for r in log.read_raw(1, 100):
                con.execute("INSERT INTO agentlog.records(host, seq, hash, value) VALUES"
                            " ('old-host', %s, %s, %s)", (r.seq, r.value[1:33], r.value))
            con.execute("UPDATE agentlog.hosts SET head_seq = %s, head_hash = %s",
                        (log.head().seq, log.head().hash))
        # an agentlog that knows step 5 still ships into it, directly (old grants), until
        # the owner migrates
        from tests.test_projections_support import append
        from tests.test_team_sync import messages
        append(log, messages(2, "mid"), prefix="mid")
        assert sync(log, pg_url, "old-host").shipped == 2
        # ... and so does a writer role (its try to migrate fails, quietly; RLS as before)
        role = f"agentlog_w_{pg_url.rsplit('/', 1)[1]}_old"
        with psycopg.connect(pg_url) as con:
            con.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw4' IN ROLE agentlog_writer")
        writer = _with_credentials(pg_url, role, "pw4")
        other = make_log(tmp_path / "w4", 3, prefix="w4")
        assert sync(other, writer, "w4-host").shipped == other.head().seq
        before = project(pg_url, tmp_path / "scratch").hosts
        assert before == {"old-host": log.head().seq, "w4-host": other.head().seq}
        with psycopg.connect(pg_url) as con:
            assert schema.version(con) == 4
            assert con.execute("SELECT has_table_privilege('agentlog_writer',"
                               " 'agentlog.records', 'INSERT')").fetchone() == (True,)
            values = con.execute("SELECT seq, value FROM agentlog.records ORDER BY seq"
                                 ).fetchall()
    with psycopg.connect(pg_url) as con:
        assert schema.ensure_schema(con) == [5, 6, 7]
        con.commit()
        held = con.execute(
            "SELECT t, p FROM unnest(ARRAY['hosts', 'records']) t, unnest(ARRAY['INSERT',"
            " 'UPDATE', 'DELETE', 'TRUNCATE']) p"
            " WHERE has_table_privilege('agentlog_writer', 'agentlog.' || t, p)"
            " OR (p IN ('INSERT', 'UPDATE')"
            "     AND has_any_column_privilege('agentlog_writer', 'agentlog.' || t, p))"
            ).fetchall()
        assert held == []
        assert con.execute("SELECT count(*) FROM pg_policies WHERE schemaname = 'agentlog'"
                           " AND tablename IN ('hosts', 'records') AND cmd <> 'SELECT'"
                           ).fetchone() == (0,)
        assert all(con.execute("SELECT has_function_privilege('agentlog_writer', %s,"
                               " 'EXECUTE')", (f,)).fetchone() == (True,)
                   for f in logsql.SIGNATURES)
        # and may keep the (deep) ranking lists through step 7's function
        assert con.execute("SELECT has_function_privilege('agentlog_writer',"
                           " 'agentlog.rank_cross_add(text[], int)', 'EXECUTE')"
                           ).fetchone() == (True,)
        # every record byte kept
        assert con.execute("SELECT seq, value FROM agentlog.records ORDER BY seq"
                           ).fetchall() == values
    ver = run_cli(home, "verify", "--postgres", pg_url, "--json")
    assert ver.returncode == 0, ver.stdout.decode() + ver.stderr.decode()
    # the host goes on syncing (through the new functions) and projecting
    append(log, messages(4, "after"), prefix="after")
    assert sync(log, pg_url, "old-host").shipped == 4
    append(other, messages(2, "w4"), prefix="w4b")  # the writer, now through the functions
    assert sync(other, writer, "w4-host").shipped == 2
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT owner FROM agentlog.hosts WHERE host = 'w4-host'"
                           ).fetchone() == (role,)
    assert project(pg_url, tmp_path / "scratch").hosts == {"old-host": log.head().seq,
                                                            "w4-host": other.head().seq}
    ver = run_cli(home, "verify", "--postgres", pg_url, "--json")
    assert ver.returncode == 0, ver.stdout.decode() + ver.stderr.decode()
