"""A damaged or drifted history.db is named and rebuilt, never served as truth; odd ranges."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cli.services import calls
from cli.services.config import Home
from cli.web.app import create_app
from cli.web.guard import loopback_hosts
from projections import query
from tests.conftest import run_cli
from tests.webdata import FACTS

PORT = 8125
TOKEN = "t" * 43
HUGE = str(2**64)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("hist") / "home"
    data = "".join(json.dumps(f) + "\n" for f in FACTS).encode()
    assert run_cli(home, "record", input=data).returncode == 0
    assert run_cli(home, "search", "quokka").returncode == 0
    return home


def _copy(built: Path, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(built, home)
    return home


def _damage_header(home: Path) -> None:
    """The file opens, the full-text table fails: FTS5's structure record is garbage, and
    byte 20 (reserved bytes per page) is off. (The header byte alone fails a query only
    when the pages it reads hold cells in their last bytes: a small index written in one
    segment per catch-up batch may not.)"""
    p = home / "history.db"
    con = sqlite3.connect(p)
    con.execute("UPDATE documents_fts_data SET block = x'0102030405' WHERE id = 10")
    con.commit()
    con.close()
    b = bytearray(p.read_bytes())
    b[20] = (b[20] + 7) % 256
    p.write_bytes(bytes(b))


def test_cli_search_rebuilds_a_damaged_history_db(built: Path, tmp_path: Path) -> None:
    home = _copy(built, tmp_path)
    _damage_header(home)
    out = run_cli(home, "search", "quokka", "--json")
    assert out.returncode == 0, out.stderr
    assert b"Traceback" not in out.stderr and b"rebuilding it from the log" in out.stderr
    assert json.loads(out.stdout)["hits"]
    again = run_cli(home, "search", "quokka")
    assert again.returncode == 0 and again.stderr == b""


def test_http_and_mcp_answer_503_until_rebuilt(built: Path, tmp_path: Path) -> None:
    home = _copy(built, tmp_path)
    _damage_header(home)
    query.close_connections()
    with pytest.raises(calls.Damaged) as caught:  # what the MCP tool reports
        calls.search(Home(home), "quokka")
    assert "agentlog reindex" in str(caught.value)
    app = create_app(Home(home), token=TOKEN, session="s" * 43, port=PORT,
                     allowed_hosts=loopback_hosts(PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", raise_server_exceptions=False)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    deadline = time.monotonic() + 60
    codes = []
    while time.monotonic() < deadline:
        resp = c.get("/api/search?q=quokka")
        codes.append(resp.status_code)
        if resp.status_code == 200:
            break
        assert resp.status_code == 503, resp.text
        assert "agentlog reindex" in resp.json()["error"]
        time.sleep(0.1)
    assert codes[-1] == 200 and resp.json()["hits"], codes  # rebuilt in the background
    query.close_connections()


def test_verify_names_damage_without_text_and_marks_stale(built: Path, tmp_path: Path) -> None:
    home = _copy(built, tmp_path)
    _damage_header(home)
    out = run_cli(home, "verify")
    err = (out.stdout + out.stderr).decode()
    assert out.returncode == 1 and "Traceback" not in err and "quokka" not in err
    assert "DRIFT" in err and "agentlog reindex" in err
    cov = json.loads(run_cli(home, "search", "quokka", "--json").stdout)["coverage"]
    assert cov["stale"] is False  # the damage was rebuilt by this search: nothing stale


def test_known_drift_is_flagged_until_reindex(built: Path, tmp_path: Path) -> None:
    from projections import db

    home = _copy(built, tmp_path)
    con = db.connect(home / "history.db")  # with the SQL functions its triggers call
    con.execute("DELETE FROM document_rows WHERE id = (SELECT min(id) FROM documents)")
    con.close()
    out = run_cli(home, "verify")
    assert out.returncode == 1 and b"DRIFT" in out.stdout
    res = run_cli(home, "search", "quokka", "--json")
    assert json.loads(res.stdout)["coverage"]["stale"] is True
    text = run_cli(home, "search", "quokka")
    assert b"differs from the log" in text.stderr
    assert run_cli(home, "reindex").returncode == 0
    res = run_cli(home, "search", "quokka", "--json")
    assert json.loads(res.stdout)["coverage"]["stale"] is False


@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_times_beyond_range_are_bad_input(built: Path, flag: str) -> None:
    for value in (HUGE, "9" * 400, "99999-01-01T00:00:00Z"):
        out = run_cli(built, "search", "quokka", flag, value)
        assert out.returncode == 2, out.stderr
        assert b"Traceback" not in out.stderr and flag[2:].encode() in out.stderr
    app = create_app(Home(built), token=TOKEN, session="s" * 43, port=PORT,
                     allowed_hosts=loopback_hosts(PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", raise_server_exceptions=False)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    resp = c.get(f"/api/search?q=quokka&{flag[2:]}={HUGE}")
    assert resp.status_code == 400, resp.text
    with pytest.raises(calls.BadInput):
        calls.search(Home(built), "quokka", {flag[2:]: int(HUGE)})
    query.close_connections()
