"""A team server that stops answering, TLS kept in what `team init` hands out, errors that
say what to do (issue 27). A real server; its backend process is frozen with SIGSTOP."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import psycopg
import pytest

from projections.pg import conn as pgconn
from projections.pg import query as pgq
from projections.pg.conn import ServerUnavailable
from projections.pg.roles import _with_credentials
from tests.conftest import run_cli

pytestmark = pytest.mark.postgres


def _frozen(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)


def test_a_frozen_server_fails_a_statement_within_its_deadline(pg_url: str) -> None:
    con = pgconn.connect(pg_url, timeouts=(50, 2))
    pid = con.info.backend_pid
    _frozen(pid)
    try:
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            con.execute("SELECT 1")
        took = time.monotonic() - started
        assert pgconn.expired(con) and 1.5 < took < 6, took
    finally:
        os.kill(pid, signal.SIGCONT)
        con.close()


def test_a_search_of_a_frozen_server_says_so_within_seconds(pg_url: str) -> None:
    from projections.pg import schema

    owner = pgconn.connect(pg_url)
    schema.ensure_schema(owner)
    owner.commit()
    owner.close()
    pgq.close_connections()
    assert pgq.search(pg_url, "anything")["hits"] == []
    con = pgq._con(pg_url)
    pid = con.info.backend_pid
    _frozen(pid)
    try:
        started = time.monotonic()
        with pytest.raises(ServerUnavailable, match="did not answer within"):
            pgq.search(pg_url, "anything")
        assert time.monotonic() - started < pgconn.QUERY_TIMEOUTS[1] + 5
    finally:
        os.kill(pid, signal.SIGCONT)
        pgq.close_connections()


def test_every_connection_has_timeouts_and_keepalives(pg_url: str) -> None:
    con = pgconn.connect(pg_url, timeouts=pgconn.QUERY_TIMEOUTS)
    try:
        got = {k: con.execute(f"SHOW {k}").fetchone()[0] for k in (
            "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")}
        assert got == {"statement_timeout": "8s", "lock_timeout": "5s",
                       "idle_in_transaction_session_timeout": "1min"}
        params = con.info.get_parameters()
        assert params.get("keepalives") == "1" and params.get("keepalives_idle") == "10"
    finally:
        con.close()
    # a DBA's own options in the URL win
    sep = "&" if "?" in pg_url else "?"
    mine = pgconn.connect(f"{pg_url}{sep}options=-c%20statement_timeout%3D1234")
    try:
        assert mine.execute("SHOW statement_timeout").fetchone()[0] == "1234ms"
    finally:
        mine.close()


def test_plaintext_to_another_machine_needs_saying_so() -> None:
    far = "postgresql://u@db.example.com/team"
    assert pgconn._settings(far, 8)["sslmode"] == "require"
    assert "sslmode" not in pgconn._settings(f"{far}?sslmode=disable", 8)
    assert "sslmode" not in pgconn._settings("postgresql://u@127.0.0.1/team", 8)
    assert "sslmode" not in pgconn._settings("host=/var/run/postgresql dbname=t", 8)


def test_handed_out_urls_keep_tls() -> None:
    url = ("postgresql://owner:pw@db.example.com:5433/team?sslmode=verify-full"
           "&sslrootcert=/etc/ca.pem")
    got = _with_credentials(url, "agentlog_w_laptop", "p/w:x")
    assert got == ("postgresql://agentlog_w_laptop:p%2Fw%3Ax@db.example.com:5433/team"
                   "?sslmode=verify-full&sslrootcert=/etc/ca.pem")
    assert psycopg.conninfo.conninfo_to_dict(got)["password"] == "p/w:x"


def test_team_init_hands_out_the_owner_s_tls_settings(home: Path, pg_url: str) -> None:
    tag = pg_url.rsplit("/", 1)[1]
    url = f"{pg_url}?sslmode=disable&application_name=x"
    out = run_cli(home, "team", "init", url, "--writer", f"{tag}_tls", "--json")
    assert out.returncode == 0, out.stderr.decode()
    handed = json.loads(out.stdout)["roles"][0]["url"]
    assert handed.endswith("?sslmode=disable&application_name=x")


def test_a_missing_schema_is_one_line_that_says_what_to_do(home: Path, pg_url: str) -> None:
    (home / "config.json").write_text(json.dumps({"team": {"postgres": pg_url}}))
    out = run_cli(home, "search", "anything", "--postgres", "config")
    text = out.stderr.decode()
    assert out.returncode != 0 and "team init" in text and "Traceback" not in text
    assert len(text.strip().splitlines()) == 1, text
