"""psycopg is the optional `team` extra: without it every team path says how to install it
(one line, exit 1, no traceback) and everything local keeps working, the background
syncer of a home with `team.postgres` included."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli

URL = "postgresql://agentlog_w_x@127.0.0.1:1/team"  # never reached: psycopg is missing first
SAID = "the team server needs psycopg — install it with pip install 'agentlog[team]'"
MESSAGE = json.dumps({"type": "message", "id": "m1", "from": "alice", "to": ["bob"],
                      "kind": "message", "body": "hello quokka", "at": "2026-03-01T10:00:00Z"})


@pytest.fixture
def no_psycopg(tmp_path: Path) -> dict[str, str]:
    """The environment of a child process in which `import psycopg` fails, as on a machine
    where agentlog was installed without the extra."""
    site = tmp_path / "no-psycopg"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.modules['psycopg'] = None  # import psycopg: ImportError\n")
    return {"PYTHONPATH": str(site)}


def _refused(p: subprocess.CompletedProcess[bytes], command: str) -> None:
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert err.strip() == f"agentlog {command}: {SAID}", err
    assert "Traceback" not in err


def test_the_hiding_works(home: Path, no_psycopg: dict[str, str]) -> None:
    import os
    import sys

    env = {**os.environ, **no_psycopg}
    p = subprocess.run([sys.executable, "-c", "import psycopg"], env=env, capture_output=True)
    assert p.returncode == 1 and b"import of psycopg halted" in p.stderr


@pytest.mark.parametrize(("command", "args"), [
    ("sync", ("sync", "--to", URL)),
    ("sync", ("sync",)),  # team.postgres from config.json
    ("team", ("team", "init", URL, "--writer", "laptop")),
    ("search", ("search", "quokka", "--postgres", URL)),
    ("search", ("search", "quokka", "--postgres", URL, "--json")),
    ("verify", ("verify", "--postgres", "config")),
    ("mcp", ("mcp", "--postgres", URL)),
    ("serve", ("serve", "--postgres", URL)),
])
def test_every_team_path_says_how_to_install(home: Path, no_psycopg: dict[str, str],
                                             command: str, args: tuple[str, ...]) -> None:
    (home / "config.json").write_text(json.dumps({"team": {"postgres": URL}}))
    assert run_cli(home, "record", input=MESSAGE.encode(), env=no_psycopg).returncode == 0
    _refused(run_cli(home, *args, input=b"", timeout=60, env=no_psycopg), command)


def test_local_commands_need_no_psycopg(home: Path, no_psycopg: dict[str, str]) -> None:
    # team.postgres set: the background syncer fails quietly in its thread, never the append
    (home / "config.json").write_text(json.dumps({"team": {"postgres": URL}}))
    rec = run_cli(home, "record", input=MESSAGE.encode(), env=no_psycopg)
    assert rec.returncode == 0, rec.stderr.decode()
    found = run_cli(home, "search", "quokka", "--json", env=no_psycopg)
    assert found.returncode == 0, found.stderr.decode()
    assert len(json.loads(found.stdout)["hits"]) == 1
    host = run_cli(home, "team", "host", env=no_psycopg)
    assert host.returncode == 0 and host.stdout.strip()
    audit = run_cli(home, "audit", "--json", env=no_psycopg)
    assert audit.returncode == 0, audit.stderr.decode()
    assert json.loads(audit.stdout)["team"]["server"].endswith("agentlog_w_x@127.0.0.1:1/team")
