"""The team commands as processes: sync, verify --postgres, search --postgres, audit, and
the background sync of `capture --watch`. No password ever appears in their output."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.capture_helpers import write
from tests.conftest import ROOT, run_cli
from tests.pgserver import PASSWORD
from tests.test_projections_support import claude_line

pytestmark = pytest.mark.postgres

MESSAGES = "\n".join(json.dumps({
    "type": "message", "id": f"m{i}", "from": "alice", "to": ["bob"], "kind": "message",
    "body": f"hello quokka number {i}", "at": "2026-03-01T10:00:00Z"}) for i in range(5))


def _ok(p: subprocess.CompletedProcess[bytes]) -> str:
    assert p.returncode == 0, p.stderr.decode()
    text = p.stdout.decode() + p.stderr.decode()
    assert PASSWORD not in text
    return p.stdout.decode()


def test_sync_verify_search_audit(home: Path, pg_url: str) -> None:
    _ok(run_cli(home, "record", input=MESSAGES.encode()))
    synced = run_cli(home, "sync", "--to", pg_url, "--json")
    assert b"visible in process listings" in synced.stderr  # the password on argv
    out = json.loads(_ok(synced))
    host = _ok(run_cli(home, "team", "host")).strip()
    assert out["host"] == host and out["behind"] == 0 and out["shipped"] == out["localHead"]
    assert out["projection"]["hosts"] == {host: out["localHead"]}
    assert "***" not in out["server"] and "agentlog_admin@127.0.0.1" in out["server"]
    assert _ok(run_cli(home, "team", "host")).strip() == host  # stable
    ver = json.loads(_ok(run_cli(home, "verify", "--postgres", pg_url, "--json")))
    assert ver["ok"] and ver["hosts"][0]["local"]["state"] == "in sync"
    found = json.loads(_ok(run_cli(home, "search", "quokka", "--postgres", pg_url,
                                   "--host", host, "--json")))
    assert found["engine"] == "postgres" and len(found["hits"]) == 5
    assert {h["host"] for h in found["hits"]} == {host}
    text = _ok(run_cli(home, "search", "quokka", "--postgres", pg_url))
    assert f"@{host}" in text
    _ok(run_cli(home, "record", input=MESSAGES.replace('"id": "m', '"id": "n').encode()))
    audit = json.loads(_ok(run_cli(home, "audit", "--json")))
    # five messages and the writing process's writer.started record
    assert audit["team"]["behind"] == 6 and audit["team"]["host"] == host
    bad = run_cli(home, "search", "quokka", "--host", host)
    assert bad.returncode == 2 and b"--host" in bad.stderr


def test_server_down_never_fails_capture_and_audit_says_so(home: Path, tmp_path: Path) -> None:
    url = f"postgresql://w:{PASSWORD}@127.0.0.1:1/none"
    (home / "config.json").write_text(json.dumps({"team": {"postgres": url}}))
    _ok(run_cli(home, "record", input=MESSAGES.encode()))
    failed = run_cli(home, "sync", "--json")
    assert failed.returncode == 1 and PASSWORD not in failed.stderr.decode()
    audit = json.loads(_ok(run_cli(home, "audit", "--json")))
    assert audit["team"]["lastError"] and audit["team"]["serverHead"] is None
    assert PASSWORD not in json.dumps(audit)


def test_capture_watch_syncs_continuously(home: Path, tmp_path: Path, pg_url: str) -> None:
    (home / "config.json").write_text(json.dumps({"team": {"postgres": pg_url}}))
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "live.jsonl", claude_line("u1", "user", "find wombat"))
    cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--watch",
           "--claude-dir", str(root), "--settle", "0"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def server_docs() -> int:
        try:
            with psycopg.connect(pg_url) as con:
                return int(con.execute("SELECT count(*) FROM agentlog.documents"
                                       " WHERE text LIKE '%wombat%'").fetchone()[0])
        except psycopg.Error:
            return 0

    try:
        deadline = time.monotonic() + 60
        while server_docs() < 1 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert server_docs() == 1
        with f.open("ab") as fh:
            fh.write(claude_line("u2", "assistant", "the wombat is here"))
        while server_docs() < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert server_docs() == 2
    finally:
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err.decode()
    assert PASSWORD not in err.decode()


def test_verify_postgres_catches_an_edited_document(home: Path, pg_url: str) -> None:
    _ok(run_cli(home, "record", input=MESSAGES.encode()))
    (home / "config.json").write_text(json.dumps({"team": {"postgres": pg_url}}))
    _ok(run_cli(home, "sync"))
    ver = json.loads(_ok(run_cli(home, "verify", "--postgres", "config", "--json")))
    docs = ver["hosts"][0]["documents"]
    assert ver["ok"] and docs["checked"] and docs["ok"] and docs["documents"] == 5
    with psycopg.connect(pg_url) as con:
        con.execute("UPDATE agentlog.documents SET text = 'hello quokka number 9 forged'"
                    " WHERE id = (SELECT min(id) FROM agentlog.documents)")
    bad = run_cli(home, "verify", "--postgres", "config")
    assert bad.returncode == 1 and b"documents DIFFER" in bad.stdout and b"edited: 1" in bad.stdout
    _ok(run_cli(home, "sync", "--rebuild"))  # the host's own replay puts it right
    assert _ok(run_cli(home, "verify", "--postgres", "config"))


def test_verify_postgres_catches_a_forged_bm25_count(home: Path, pg_url: str) -> None:
    # what bm25 reads of a document comes from the writer (FTS5's counts): verify counts
    # them again from the local text, so a writer that inflated its own counts is named
    _ok(run_cli(home, "record", input=MESSAGES.encode()))
    (home / "config.json").write_text(json.dumps({"team": {"postgres": pg_url}}))
    _ok(run_cli(home, "sync"))
    ver = json.loads(_ok(run_cli(home, "verify", "--postgres", "config", "--json")))
    assert ver["hosts"][0]["documents"]["miscounted"] == 0
    with psycopg.connect(pg_url) as con:
        con.execute("UPDATE agentlog.documents SET tfx = '{\"quokka\": 40}'::jsonb"
                    " WHERE id = (SELECT min(id) FROM agentlog.documents)")
        con.execute("UPDATE agentlog.documents SET dl = dl + 7"
                    " WHERE id = (SELECT max(id) FROM agentlog.documents)")
    bad = run_cli(home, "verify", "--postgres", "config", "--json")
    got = json.loads(bad.stdout)["hosts"][0]["documents"]
    assert bad.returncode == 1 and got["miscounted"] == 2 and got["edited"] == 0
    assert "bm25 counts differ: 2" in got["detail"]
    _ok(run_cli(home, "sync", "--rebuild"))  # the host's own replay puts it right
    assert _ok(run_cli(home, "verify", "--postgres", "config"))
