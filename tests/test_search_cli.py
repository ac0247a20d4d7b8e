"""`agentlog search | show | conversation | reindex` as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog import EventLog
from tests.conftest import ROOT, run_cli
from tests.test_projections_support import append, mixed_events


@pytest.fixture
def filled(home: Path) -> Path:
    log = EventLog(home / "log")
    append(log, mixed_events())
    log.close()
    return home


def _json(out: subprocess.CompletedProcess[bytes]) -> object:
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


def test_search_catches_up_and_prints_json(filled: Path) -> None:
    assert not (filled / "history.db").exists()
    res = _json(run_cli(filled, "search", "café", "--json"))
    assert isinstance(res, dict) and res["engine"] == "fts5"
    assert {h["id"] for h in res["hits"]} == {"message:m1", "transcript:claude:u2"}
    res = _json(run_cli(filled, "search", "migration", "--kind", "approval", "--json"))
    assert isinstance(res, dict) and [h["id"] for h in res["hits"]] == ["message:m3"]
    text = run_cli(filled, "search", "café")
    assert text.returncode == 0 and b"message:m1" in text.stdout and b"[caf" in text.stdout


def test_new_events_are_visible_to_the_next_search(filled: Path) -> None:
    run_cli(filled, "search", "café", "--json")
    line = {"type": "message", "id": "n1", "from": "a", "to": [], "kind": "message",
            "body": "freshly recorded ocelot", "at": 5}
    assert run_cli(filled, "record", input=json.dumps(line).encode() + b"\n").returncode == 0
    res = _json(run_cli(filled, "search", "ocelot", "--json"))
    assert isinstance(res, dict) and res["hits"][0]["id"] == "message:n1"


@pytest.mark.parametrize(("args", "name"), [
    (["--limit", "0"], "--limit"), (["--limit", "x"], "--limit"),
    (["--since", "yesterday"], "--since"), (["--agent", "gpt"], "--agent"),
    (["--kind", "mail"], "--kind"), (["--since", "9", "--until", "1"], "--since"),
])
def test_bad_input_exits_2_naming_the_parameter(filled: Path, args: list[str], name: str) -> None:
    for mode in ((), ("--json",)):  # validation comes before any output
        out = run_cli(filled, "search", "café", *args, *mode)
        assert out.returncode == 2 and name in out.stderr.decode() and not out.stdout, mode


def test_bad_query_exits_2(filled: Path) -> None:
    out = run_cli(filled, "search", *[f"w{i}" for i in range(33)])
    assert out.returncode == 2 and "QUERY" in out.stderr.decode()


def test_show(filled: Path) -> None:
    doc = _json(run_cli(filled, "show", "message:m1", "--json"))
    assert isinstance(doc, dict) and doc["body"] == "Hello wörld, the café opens"
    assert run_cli(filled, "show", "message:none").returncode == 1
    assert run_cli(filled, "show", "garbage").returncode == 2
    out = run_cli(filled, "show", "message:m1")
    assert out.returncode == 0 and "café opens" in out.stdout.decode()


def test_conversation(filled: Path) -> None:
    page = _json(run_cli(filled, "conversation", "claude:s1", "--limit", "2", "--json"))
    assert isinstance(page, dict) and len(page["items"]) == 2 and page["next"]
    rest = _json(run_cli(filled, "conversation", "claude:s1", "--after", page["next"], "--json"))
    assert isinstance(rest, dict) and rest["next"] is None
    assert run_cli(filled, "conversation", "claude:none").returncode == 1
    assert run_cli(filled, "conversation", "claude:s1", "--after", "zz").returncode == 2
    out = run_cli(filled, "conversation", "s1")
    assert out.returncode == 0 and "zebra" in out.stdout.decode()


def test_reindex_and_verify(filled: Path) -> None:
    out = _json(run_cli(filled, "reindex", "--json"))
    assert isinstance(out, dict) and out["documents"] > 10
    ver = _json(run_cli(filled, "verify", "--json"))
    assert isinstance(ver, dict) and ver["ok"]
    assert any(c["name"] == "history.db" and c["ok"] for c in ver["checks"])


def test_verify_names_the_cure_for_a_drifted_history_db(filled: Path) -> None:
    """QA: a drifted history.db (e.g. derived by an older version) said only "DRIFT"."""
    import sqlite3

    _json(run_cli(filled, "reindex", "--json"))
    con = sqlite3.connect(filled / "history.db")
    with con:
        con.execute("UPDATE document_rows SET at = at + 1 WHERE id = 'message:m1'")
    con.close()
    out = run_cli(filled, "verify")
    assert out.returncode == 1 and "DRIFT" in out.stdout.decode()
    assert "agentlog reindex" in out.stdout.decode()
    _json(run_cli(filled, "reindex", "--json"))
    assert run_cli(filled, "verify").returncode == 0


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_history_db_is_rebuilt_not_a_traceback(filled: Path, damage: str) -> None:
    """QA: a truncated or overwritten history.db made every search die with a traceback."""
    _json(run_cli(filled, "reindex", "--json"))
    db = filled / "history.db"
    if damage == "garbage":
        db.write_bytes(b"this is not a database\n" * 100)
    else:
        db.write_bytes(db.read_bytes()[:20000])
    out = run_cli(filled, "search", "café", "--json")
    assert out.returncode == 0, out.stderr.decode()
    assert b"Traceback" not in out.stderr and b"rebuilding it from the log" in out.stderr
    assert {h["id"] for h in json.loads(out.stdout)["hits"]} == {"message:m1",
                                                                 "transcript:claude:u2"}
    assert run_cli(filled, "verify").returncode == 0


def test_config_forces_the_plain_engine(filled: Path) -> None:
    (filled / "config.json").write_text(json.dumps({"search": {"engine": "plain"}}))
    res = _json(run_cli(filled, "search", "café", "--json"))
    assert isinstance(res, dict) and res["engine"] == "plain"
    assert {h["id"] for h in res["hits"]} == {"message:m1", "transcript:claude:u2"}


def test_search_path_imports_stay_light(filled: Path) -> None:
    run_cli(filled, "search", "café", "--json")
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cli.main", "--home", str(filled), "search",
         "café", "--json"], cwd=ROOT, capture_output=True, timeout=60)
    assert out.returncode == 0
    names = {line.split("|")[-1].strip()
             for line in out.stderr.decode().splitlines() if line.startswith("import time:")}
    imported = {n.split(".")[0] for n in names}
    assert not imported & {"pydantic", "rich", "mcp", "starlette", "uvicorn", "httpx"}
    # a current history.db: no event types, no apply machinery, no msgspec
    assert "projections.query" in names and "eventlog.peek" in names
    assert "msgspec" not in imported
    assert not names & {"projections.apply", "eventlog.events", "eventlog.store"}


def test_links_quote_like_urllib() -> None:
    """A hit's `link` quotes its values without importing urllib (`projections.query.q`),
    exactly as `urllib.parse.quote(value, safe="")` does."""
    from urllib.parse import quote

    from hypothesis import given
    from hypothesis import strategies as st

    from projections.query import q

    @given(st.text(st.characters(blacklist_categories=("Cs",))))
    def same(text: str) -> None:
        assert q(text) == quote(text, safe="")

    same()
    for value in ("", "a b/c?d#e&f=g", "café", "中文", "~._-", "%41", 42, "\x00\n"):
        assert q(value) == quote(str(value), safe="")
