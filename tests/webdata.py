"""A small history for the MCP, HTTP and browser tests, recorded through `agentlog record`.

Our own fixture text (no corpus excerpts). The word "quokka" is in every searchable
document; one report carries hostile markup that the page must render inert.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

HOSTILE = (
    'quokka payload <script>window.__pwned = "script"</script> '
    '<img src=x onerror="window.__pwned = \'img\'"> '
    '<a href="javascript:window.__pwned=\'link\'">click me</a> '
    "[md](javascript:window.__pwned='md') javascript:alert(1)"
)

FACTS = [
    {"type": "alias", "alias": "alice", "session": "sess-a", "agent": "claude",
     "at": "2026-03-01T09:00:00Z"},
    {"type": "alias", "alias": "bob", "session": "sess-b", "agent": "codex",
     "at": "2026-03-01T09:00:00Z"},
    {"type": "message", "id": "m1", "from": "alice", "to": ["bob"], "kind": "message",
     "body": "the quokka migration plan uses sqlite", "at": "2026-03-01T10:00:00Z",
     "project": "/p/alpha", "session": "sess-a", "job": "job-a", "thread": "t1"},
    {"type": "message", "id": "m2", "from": "bob", "to": ["alice"], "kind": "report",
     "body": HOSTILE, "at": "2026-03-02T10:00:00Z", "project": "/p/beta",
     "session": "sess-b", "job": "job-b", "thread": "t1"},
    {"type": "message", "id": "m3", "from": "bob", "to": ["alice"], "kind": "progress",
     "body": "quokka progress: halfway through the zebra tables", "at": "2026-03-03T10:00:00Z",
     "project": "/p/beta", "session": "sess-b", "job": "job-b", "thread": "t2"},
    {"type": "decision", "topic": "storage-engine", "revision": 1,
     "body": "quokka stores history in lmdb", "author": "alice",
     "at": "2026-03-04T10:00:00Z"},
    {"type": "decision", "topic": "storage-engine", "revision": 2,
     "body": "quokka keeps lmdb and adds sqlite projections", "author": "bob",
     "at": "2026-03-05T10:00:00Z"},
    {"type": "run", "job": "job-a", "run": "job-a-20260306.log",
     "started_at": "2026-03-06T10:00:00Z", "agent": "codex", "session": "sess-a",
     "metadata": {"note": "quokka nightly"}},
]

# Message thread t1 has enough replies to need more than one conversation page.
THREAD = [
    {"type": "message", "id": f"r{i:02d}", "from": "alice", "to": ["bob"], "kind": "message",
     "body": f"reply {i:02d} about wombat {i}", "at": 1772800000000 + i * 1000,
     "project": "/p/alpha", "thread": "t1"}
    for i in range(25)
]


SESSION = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
_LINE = {"isSidechain": False, "userType": "external", "cwd": "/p/alpha", "sessionId": SESSION,
         "version": "2.1.90", "gitBranch": "main"}
TRANSCRIPT = [
    {**_LINE, "parentUuid": None, "uuid": "c1000000-0000-4000-8000-000000000001",
     "timestamp": "2026-03-07T10:00:00.000Z", "type": "user",
     "message": {"role": "user", "content": "explain the platypus importer "
                 "<script>window.__pwned = 't-script'</script>"}},
    {**_LINE, "parentUuid": "c1000000-0000-4000-8000-000000000001",
     "uuid": "c1000000-0000-4000-8000-000000000002", "timestamp": "2026-03-07T10:00:05.000Z",
     "type": "assistant",
     "message": {"id": "msg_p1", "type": "message", "role": "assistant", "model": "claude-x",
                 "content": [{"type": "text", "text": "platypus answer "
                              "<img src=x onerror=\"window.__pwned = 't-img'\"> "
                              "[docs](javascript:window.__pwned='t-link')"}],
                 "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}},
]


def capture_transcript(home: Path, root: Path) -> None:
    """Write a Claude Code transcript under `root` and capture it into `home`."""
    claude = root / "claude"
    project = claude / "projects" / "-p-alpha"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in TRANSCRIPT), encoding="utf-8")
    empty = root / "empty"
    empty.mkdir()
    proc = run_cli(home, "capture", "--claude-dir", str(claude), "--codex-dir", str(empty),
                   "--opencode-dir", str(empty), "--runs-dir", str(empty))
    assert proc.returncode == 0, proc.stderr.decode()


def record(home: Path, facts: list[dict[str, object]]) -> None:
    data = "\n".join(json.dumps(f) for f in facts).encode()
    proc = run_cli(home, "record", input=data)
    assert proc.returncode == 0, proc.stderr.decode()


def catch_up(home: Path) -> None:
    """Bring history.db up to the log (the `record` hook does it too once it is wired)."""
    from cli.services.config import Home
    from projections.catchup import catch_up as project

    h = Home(home)
    project(h.history_db, h.log(readonly=True))


def make_history(home: Path, transcripts: Path | None = None) -> Path:
    record(home, FACTS + THREAD)
    if transcripts is not None:
        capture_transcript(home, transcripts)
    catch_up(home)
    return home
