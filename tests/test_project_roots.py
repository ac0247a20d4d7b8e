"""Discovery of agents that write into project folders (Aider, Crush): the home scanned to a
bounded depth, `project_roots`, and the project folders captured sessions name as their cwd."""

from __future__ import annotations

import json
from pathlib import Path

from eventlog import EventLog
from readers.discovery import walk
from readers.restore import restore
from readers.roots import resolve_roots
from tests.capture_helpers import capture, write
from tests.conftest import run_cli

CHAT = (b"\n# aider chat started at 2026-01-02 03:04:05\n\n"
        b"#### refactor the zeppelin module\n\nDone.\n")


def _found(root: Path, agent: str) -> set[str]:
    return {e.rel for e in walk(agent, str(root)) if e.layout is not None}


def test_home_scan_is_bounded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for rel in ("p/.aider.chat.history.md", "a/b/c/.aider.chat.history.md",
                "a/b/c/d/.aider.chat.history.md", "node_modules/x/.aider.chat.history.md",
                ".cache/x/.aider.chat.history.md", "a/build/.aider.input.history",
                "a/b/c/.crush/crush.db", "a/b/c/d/.crush/crush.db", "q/.crush/crush.db",
                ".crush/crush.db", "a/.venv/.crush/crush.db"):
        write(home / rel, b"x\n")
    roots = resolve_roots(flags={}, config={}, env={}, user_home=home, agents=["aider", "crush"])
    assert [(r.agent, r.path, r.origin) for r in roots] == [
        ("aider", home, "default"), ("crush", home, "default")]
    assert _found(home, "aider") == {"p/.aider.chat.history.md", "a/b/c/.aider.chat.history.md"}
    assert _found(home, "crush") == {"a/b/c/.crush/crush.db", "q/.crush/crush.db",
                                     ".crush/crush.db"}


def test_project_roots_and_cwds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "work" / "p").mkdir(parents=True)
    extra = tmp_path / "srv"
    extra.mkdir()
    deep = tmp_path / "x" / "y"
    deep.mkdir(parents=True)
    deep_in_home = home / "a" / "b" / "c" / "d"
    deep_in_home.mkdir(parents=True)
    roots = resolve_roots(
        flags={}, config={"project_roots": [str(extra)]}, env={}, user_home=home,
        agents=["aider", "claude"],
        project_dirs=[str(home / "work" / "p"), str(deep), str(deep), "/", str(tmp_path),
                      str(deep_in_home), str(tmp_path / "gone"), "relative/path"],
    )
    got = [(r.agent, r.path, r.origin) for r in roots if r.agent == "aider"]
    assert got == [("aider", home, "default"), ("aider", extra, "project_roots"),
                   ("aider", deep, "cwd"), ("aider", deep_in_home, "cwd")]
    assert [r.origin for r in roots if r.agent == "claude"] == ["default"]  # not a project agent
    flag = resolve_roots(flags={"project_roots": str(deep)}, config={"project_roots": str(extra)},
                         env={}, user_home=home, agents=["crush"])
    assert [(r.path, r.origin) for r in flag] == [(home, "default"), (deep, "project_roots")]


def test_a_cwd_named_by_a_session_is_captured(tmp_path: Path, home: Path) -> None:
    user = Path.home()  # the isolated fake home of conftest
    project = tmp_path / "elsewhere" / "a" / "b" / "c" / "d" / "proj"
    write(project / ".aider.chat.history.md", CHAT)
    line = {"type": "user", "uuid": "5f37e4fa-a305-40e6-be60-308f3c167be5",
            "sessionId": "007b47df-320d-4b57-b061-59f2918a3897", "cwd": str(project),
            "timestamp": "2026-01-02T03:04:05.000Z",
            "message": {"role": "user", "content": "where do zeppelins dock"}}
    write(user / ".claude" / "projects" / "-p" / f"{line['sessionId']}.jsonl",
          json.dumps(line).encode() + b"\n")
    first = run_cli(home, "capture", "--json")
    assert first.returncode == 0, first.stderr
    assert not any(r["agent"] == "aider" and r["origin"] == "cwd"
                   for r in json.loads(first.stdout)["roots"])
    second = run_cli(home, "capture", "--json")
    assert second.returncode == 0, second.stderr
    assert {"agent": "aider", "path": str(project), "origin": "cwd"}.items() <= next(
        r for r in json.loads(second.stdout)["roots"] if r["origin"] == "cwd").items()
    found = run_cli(home, "search", "zeppelin", "--agent", "aider", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert [(h["agent"], h["project"]) for h in hits] == [("aider", str(project))]


def test_crush_in_a_project_root(tmp_path: Path) -> None:
    """The capture engine reads a project's crush.db found by the home scan (rows mode)."""
    import sqlite3

    home = tmp_path / "home"
    db = home / "code" / "game" / ".crush" / "crush.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT,"
        " updated_at INTEGER, created_at INTEGER);"
        "CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, parts TEXT,"
        " created_at INTEGER, updated_at INTEGER);"
        "CREATE TABLE files (id TEXT PRIMARY KEY, content TEXT);"
        "INSERT INTO sessions VALUES ('s1', NULL, 'board', 1754457380, 1754457380);"
        "INSERT INTO files VALUES ('f1', 'never read');")
    parts = json.dumps([{"type": "text", "data": {"text": "drop a piece"}}])
    con.executemany("INSERT INTO messages VALUES (?, 's1', 'user', ?, 1754457380, 1754457380)",
                    [(f"m{i:03d}", parts) for i in range(150)])  # more than a page, one second
    con.commit()
    con.close()
    roots = resolve_roots(flags={}, config={}, env={}, user_home=home, agents=["crush"])
    log = EventLog(tmp_path / "log")
    try:
        stats = capture(log, roots)
        assert stats.errors == [] and stats.files == 1
        assert stats.rows == 151  # every message although all share one updated_at second
        # Crush rewrites a message within the same second: its key sorts before the last
        # row read, and `updated_at` (seconds) did not move; the round's lookback finds it
        con = sqlite3.connect(db)
        new = json.dumps([{"type": "text", "data": {"text": "drop it in column four"}}])
        con.execute("UPDATE messages SET parts = ? WHERE id = 'm000'", (new,))
        con.commit()
        con.close()
        again = capture(log, roots)
        assert again.errors == [] and again.appended == 1
        assert capture(log, roots).appended == 0
        restore(log, tmp_path / "out")
    finally:
        log.close()
    rows = (tmp_path / "out" / "crush" / "code" / "game" / ".crush" / "crush.db.rows" /
            "messages.jsonl").read_bytes().splitlines()
    assert len(rows) == 150
    assert json.loads(next(r for r in rows if b'"m000"' in r))["parts"] == new
