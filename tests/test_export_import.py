"""Export and import of envelopes: round trip, idempotency, dry run, refusals."""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.services import archive_ops as ops
from cli.services.config import Home
from cli.services.errors import AgentlogError
from tests.archive_fixtures import T0, envelope, home_at, import_turns, rich_project, turn
from tests.conftest import ROOT, run_cli, stop_and_continue


def _export(home: Home, project: str, **kw: Any) -> dict[str, Any]:
    buf = io.BytesIO()
    ops.export_to(home, project, buf, **kw)
    data: dict[str, Any] = json.loads(buf.getvalue())
    return data


def _pages(home: Home, project: str) -> list[dict[str, Any]]:
    return ops.history(home, project, {})["turns"]


def _search(home: Home, q: str) -> list[dict[str, Any]]:
    return ops.search(home, q)["hits"]


def test_round_trip_same_pages_search_and_export(tmp_path: Path) -> None:
    a = home_at(tmp_path / "a")
    import_turns(a, "proj-a", rich_project())
    import_turns(a, "proj-b", [turn("b1", 0, T0 + 5, "user", "settings elsewhere")])
    exported = _export(a, "proj-a")
    assert exported["turnCount"] == len(exported["turns"]) == 9
    assert list(exported)[:5] == ["schemaVersion", "projectId", "exportedAt", "turnCount",
                                  "turns"]

    b = home_at(tmp_path / "b")
    res = ops.import_envelope(b, json.dumps(exported).encode(), apply=True)
    assert res["turnsToInsert"] == 9 and res["applied"]
    assert _pages(b, "proj-a") == _pages(a, "proj-a")
    for q in ("settings screen", "数据库", "resume cafe", "migration"):
        hits_a = [h for h in _search(a, q) if h["project"] == "proj-a"]
        assert hits_a, q
        assert _search(b, q) == hits_a
    # and the main search API (MCP, /api/search) answers alike
    from projections.query import search as main_search

    for q in ("settings", "migration files"):
        ha = main_search(a.history_db, q, {"project": "proj-a"}, 50)["hits"]
        hb = main_search(b.history_db, q, {"project": "proj-a"}, 50)["hits"]
        assert ha and hb == ha
    again = _export(b, "proj-a")
    assert again["turns"] == exported["turns"]
    # filters survive the trip too
    assert ops.history(b, "proj-a", {"agent": "@Explore"})["turns"] == \
        ops.history(a, "proj-a", {"agent": "@Explore"})["turns"]


def test_import_twice_skips_every_session_and_writes_nothing(tmp_path: Path) -> None:
    h = home_at(tmp_path / "h")
    data = envelope("p", rich_project())
    first = ops.import_envelope(h, data, apply=True)
    assert first["sessionsToInsert"] == 3
    head = h.log().head()
    second = ops.import_envelope(h, data, apply=True)
    assert second["sessionsToInsert"] == 0 and second["sessionsSkipped"] == 3
    assert "3 session(s) skipped: already present" in second["warning"]
    assert h.log().head() == head
    # a different file with one known and one new session: the known one is skipped whole
    mixed = envelope("p", [turn("s1", 0, T0, "user", "a different first turn"),
                           turn("s9", 0, T0, "user", "brand new")])
    res = ops.import_envelope(h, mixed, apply=True)
    assert [d["action"] for d in res["detail"]] == ["skip", "insert"]
    assert len(_pages(h, "p")) == 10


def test_a_session_imported_into_two_projects_keeps_two_conversations(tmp_path: Path) -> None:
    """QA: get_conversation of a session showed the turns of every imported copy, interleaved."""
    from projections.query import get_conversation
    from projections.query import search as main_search

    h = home_at(tmp_path / "h")
    data = envelope("p", rich_project())
    assert ops.import_envelope(h, data, apply=True)["applied"]
    assert ops.import_envelope(h, data, project="q", apply=True)["applied"]
    convs = {}
    for project in ("p", "q"):
        hits = main_search(h.history_db, "settings screen", {"project": project}, 50)["hits"]
        assert hits
        conv = {hit["conversation"] for hit in hits}
        assert len(conv) == 1
        convs[project] = conv.pop()
        items = get_conversation(h.history_db, convs[project], limit=100)["items"]
        assert {i["project"] for i in items} == {project} and len(items) == 5
    assert convs["p"] != convs["q"]
    # the same conversation ids after a rebuild
    assert run_cli(h.root, "reindex").returncode == 0
    hits = main_search(h.history_db, "settings screen", {"project": "q"}, 50)["hits"]
    assert {hit["conversation"] for hit in hits} == {convs["q"]}


def test_dry_run_leaves_the_log_head_unchanged(tmp_path: Path) -> None:
    h = home_at(tmp_path / "h")
    import_turns(h, "p", rich_project()[:2])
    head = h.log().head()
    res = ops.import_envelope(h, envelope("q", rich_project()), apply=False)
    assert res["dryRun"] and not res["applied"] and res["turnsToInsert"] == 9
    assert h.log().head() == head
    assert _pages(h, "q") == []
    # a dry run into an empty home creates no log at all
    empty = home_at(tmp_path / "empty")
    ops.import_envelope(empty, envelope("q", rich_project()))
    assert not empty.has_log()


BAD: list[tuple[bytes, str]] = [
    (b"not json", "not valid JSON"),
    (b"[]", "not an export envelope"),
    (json.dumps({"schemaVersion": 2, "projectId": "p", "turns": []}).encode(), "schemaVersion"),
    (json.dumps({"schemaVersion": 1, "projectId": "", "turns": []}).encode(), "projectId"),
    (envelope("p", [turn("s", 0, T0, "wizard", "x")]), "turns[0]: role"),
    (envelope("p", [turn("s", 0, T0, "user", "x"), turn("s", 0, T0, "user", "y")]),
     "turns[1]: turnIdx 0 repeats"),
    (envelope("p", [{"sessionId": "s", "turnIdx": 0, "ts": "yesterday", "role": "user",
                     "content": "x"}]), "ts is not ISO-8601"),
    (envelope("p", [{"sessionId": "s", "turnIdx": -1, "role": "user", "content": "x"}]),
     "turnIdx must be"),
    (envelope("p", [{"sessionId": "s", "turnIdx": 0, "role": "user", "content": 5}]),
     "content must be a string"),
    (envelope("p", [turn("s", 0, T0, "user", "x" * (1024 * 1024 + 1))]), "1 MiB"),
    (json.dumps({"schemaVersion": 1, "projectId": "p", "turnCount": 3, "turns": []}).encode(),
     "turnCount says 3"),
]


@pytest.mark.parametrize(("data", "message"), BAD, ids=[m for _, m in BAD])
def test_malformed_envelope_is_refused_and_nothing_written(
    tmp_path: Path, data: bytes, message: str
) -> None:
    h = home_at(tmp_path / "h")
    import_turns(h, "p", rich_project()[:1])
    head = h.log().head()
    with pytest.raises(AgentlogError, match="nothing imported") as err:
        ops.import_envelope(h, data, apply=True)
    assert message in str(err.value)
    assert h.log().head() == head


def test_oversized_envelopes_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from projections import envelope as env_mod

    h = home_at(tmp_path / "h")
    data = envelope("p", rich_project())
    monkeypatch.setattr(env_mod, "MAX_FILE_BYTES", len(data) - 1)
    with pytest.raises(AgentlogError, match="over the limit"):
        ops.import_envelope(h, data, apply=True)
    monkeypatch.setattr(env_mod, "MAX_FILE_BYTES", 1 << 30)
    monkeypatch.setattr(env_mod, "MAX_TURNS", 5)
    with pytest.raises(AgentlogError, match="9 turns, over the limit of 5"):
        ops.import_envelope(h, data, apply=True)
    assert not h.has_log()


def test_large_session_is_split_into_bounded_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projections import importer

    monkeypatch.setattr(importer, "PART_TURNS", 7)
    h = home_at(tmp_path / "h")
    turns = [turn("big", i, T0 + i, "user", f"line {i}") for i in range(30)]
    res = import_turns(h, "p", turns)
    assert res["appended"] == 5 + 1  # ceil(30 / 7) parts + the operation record
    page = ops.history(h, "p", {})["turns"]
    assert [t["content"] for t in page] == [f"line {i}" for i in range(30)]
    assert ops.import_envelope(h, envelope("p", turns), apply=True)["sessionsSkipped"] == 1


def test_cli_round_trip_and_errors(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    src = tmp_path / "in.json"
    src.write_bytes(envelope("proj", rich_project()))
    r = run_cli(a, "import", str(src), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["dryRun"] is True
    assert run_cli(a, "import", str(src), "--apply").returncode == 0
    out = tmp_path / "out.json"
    r = run_cli(a, "export", "--project", "proj", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["turns"] == 9
    r = run_cli(b, "import", str(out), "--apply", "--json")
    assert json.loads(r.stdout)["turnsToInsert"] == 9
    r = run_cli(b, "import", str(out), "--apply")
    assert r.returncode == 0 and b"3 session(s) skipped" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"schemaVersion":1,"projectId":"p","turns":[{"sessionId":"s"}]}')
    r = run_cli(b, "import", str(bad), "--apply")
    assert r.returncode == 2 and b"turns[0]" in r.stderr and b"nothing imported" in r.stderr
    r = run_cli(tmp_path / "none", "export", "--project", "x")
    assert r.returncode == 2 and b"does not exist" in r.stderr


def test_log_export_import_reproduces_head_and_search(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    src = tmp_path / "in.json"
    src.write_bytes(envelope("proj", rich_project()))
    assert run_cli(a, "import", str(src), "--apply").returncode == 0
    assert run_cli(a, "archive", "--now", "2026-06-01T00:00:00Z").returncode == 0
    dump = tmp_path / "log.jsonl"
    r = run_cli(a, "export", "--log", str(dump), "--json")
    assert r.returncode == 0, r.stderr
    head = json.loads(r.stdout)["head"]
    r = run_cli(b, "import", "--log", str(dump), "--json")
    assert json.loads(r.stdout)["dryRun"] is True and not (b / "log").exists()
    r = run_cli(b, "import", "--log", str(dump), "--apply", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["head"] == head
    # QA: applying the same copy again appends nothing and says so (it said "imported N")
    r = run_cli(b, "import", "--log", str(dump), "--apply")
    assert r.returncode == 0 and b"imported 0 records (" in r.stdout
    assert b"already present" in r.stdout
    ha, hb = Home(a), Home(b)
    assert hb.log().head() == ha.log().head()
    from projections.query import search as main_search

    for q in ("settings", "数据库"):
        assert ops.search(hb, q, include_archived=True) == ops.search(ha, q,
                                                                     include_archived=True)
        flt = {"include_archived": True}
        assert main_search(hb.history_db, q, flt, 50)["hits"] == \
            main_search(ha.history_db, q, flt, 50)["hits"]
    assert ops.search(hb, "settings")["hits"] == []  # archived in a, archived in b
    # a home that already has other events refuses the copy
    assert run_cli(c, "import", str(src), "--apply").returncode == 0
    r = run_cli(c, "import", "--log", str(dump), "--apply")
    assert r.returncode == 2 and b"not empty" in r.stderr


@pytest.mark.corpus
def test_round_trip_of_a_captured_claude_session(corpus: Path, tmp_path: Path) -> None:
    """A real captured transcript (with a subagent): export, import elsewhere, same answers."""
    from projections.query import search as main_search

    src = corpus / "claude-code" / "4thehalibit-omarchy-backup" / "session-with-subagent"
    assert src.is_dir(), f"corpus session-with-subagent is absent: {src}"
    root = tmp_path / "claude"
    (root / "projects").mkdir(parents=True)
    for child in src.iterdir():  # copies in a temp dir (capture never follows links)
        if child.is_dir():
            shutil.copytree(child, root / "projects" / child.name)
        else:
            shutil.copyfile(child, root / "projects" / child.name)
    a, b = tmp_path / "a", tmp_path / "b"
    r = run_cli(a, "capture", "--claude-dir", str(root), "--codex-dir", str(tmp_path / "none"),
                "--opencode-dir", str(tmp_path / "none"), "--json")
    assert r.returncode == 0, r.stderr
    ha, hb = Home(a), Home(b)
    (project,) = [p["project"] for p in ops.projects(ha)]
    data = io.BytesIO()
    ops.export_to(ha, project, data)
    res = ops.import_envelope(hb, data.getvalue(), apply=True)
    assert res["turnsToInsert"] > 20
    assert ops.history(hb, project, {}) == ops.history(ha, project, {})
    assert ops.history(hb, project, {"agent": "main"}) == ops.history(ha, project,
                                                                      {"agent": "main"})
    for q in ("history", "conversation history", "agent"):
        assert ops.search(hb, q) == ops.search(ha, q)
        hits = main_search(ha.history_db, q, None, 50)["hits"]
        assert hits, q  # the captured session talks about each of these words
        assert main_search(hb.history_db, q, None, 50)["hits"] == hits


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX job control only")
def test_export_to_a_pipe_while_stopped_and_continued_loses_no_byte(tmp_path: Path) -> None:
    # PYTHONUNBUFFERED makes sys.stdout.buffer the raw file: a write(2) to a full pipe that
    # the process is stopped in returns short, and the envelope must still come out whole
    h = home_at(tmp_path / "h")
    rnd = random.Random(5)
    words = [f"w{i}" for i in range(500)]
    import_turns(h, "p", [turn(f"s{i % 3}", i, T0 + i, "user",
                               " ".join(rnd.choice(words) for _ in range(3000)))
                          for i in range(60)])
    out = tmp_path / "out.json"
    assert run_cli(h.root, "export", "--project", "p", "-o", str(out)).returncode == 0
    want = out.read_bytes()
    assert len(want) > 500_000
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "--home", str(h.root), "export",
                             "--project", "p"], stdout=subprocess.PIPE, cwd=ROOT, env=env)
    assert proc.stdout is not None
    got = bytearray()
    with stop_and_continue(proc.pid) as stops:
        while chunk := proc.stdout.read(8192):
            got += chunk
            time.sleep(0.0005)  # a slow reader: the pipe stays full, the writer blocks in it
    assert proc.wait(60) == 0
    assert stops[0] > 10
    whole, exported = json.loads(bytes(got)), json.loads(want)
    assert whole.pop("exportedAt") and exported.pop("exportedAt")  # the only difference
    assert whole == exported
    assert len(got) == len(want)
