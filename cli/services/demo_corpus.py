"""A small synthetic multi-agent history for `agentlog demo` (and for trying agentlog on a
machine with no agent history). Written by agentlog itself: no real transcript is copied.

`write_demo(base)` creates four roots under `base` — `claude/`, `codex/`, `opencode/`,
`runs/` — in the on-disk layouts of the real tools (see docs/capture.md), and returns them.
Every session holds a distinctive phrase (`PHRASES`) so a search finds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from readers.demo_db import write_opencode_db

PHRASES = {
    "claude": "flamingo deployment checklist",
    "claude-subagent": "marmalade cache invalidation",
    "codex": "tangerine migration rollback",
    "opencode": "periwinkle websocket reconnect",
    "opencode-db": "saffron rate limiter",
    "runs": "cobalt nightly benchmark",
}
PROJECT = "/home/demo/webapp"
CLAUDE_SESSION = "7d1e2c4a-5b6f-4a8e-9c0d-1e2f3a4b5c6d"
CODEX_SESSION = "019a1b2c-3d4e-7f50-8a9b-0c1d2e3f4a5b"


def _jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for r in records))


def _claude(root: Path) -> None:
    enc = PROJECT.replace("/", "-")
    base = {"isSidechain": False, "userType": "external", "cwd": PROJECT,
            "sessionId": CLAUDE_SESSION, "version": "2.1.90", "gitBranch": "main"}
    turns: list[dict[str, Any]] = [
        {**base, "type": "user", "uuid": "c0000001-0000-4000-8000-000000000001",
         "parentUuid": None, "timestamp": "2026-03-02T09:15:00.000Z",
         "message": {"role": "user",
                     "content": f"Write the {PHRASES['claude']} for the staging release."}},
        {**base, "type": "assistant", "uuid": "c0000001-0000-4000-8000-000000000002",
         "parentUuid": "c0000001-0000-4000-8000-000000000001",
         "timestamp": "2026-03-02T09:15:04.000Z", "requestId": "req_demo1",
         "message": {"id": "msg_demo1", "type": "message", "role": "assistant",
                     "model": "claude-sonnet-4-6", "content": [
                         {"type": "text", "text": "Here is the checklist: run migrations, "
                          "warm the cache, flip the feature flag, watch the error rate."},
                         {"type": "tool_use", "id": "toolu_demo1", "name": "Read",
                          "input": {"file_path": f"{PROJECT}/deploy.md"}}]}},
        {**base, "type": "user", "uuid": "c0000001-0000-4000-8000-000000000003",
         "parentUuid": "c0000001-0000-4000-8000-000000000002",
         "timestamp": "2026-03-02T09:15:05.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_demo1",
              "content": "# Deploy\n1. migrate\n2. smoke test"}]}},
        {"type": "ai-title", "sessionId": CLAUDE_SESSION, "aiTitle": "Staging deployment plan"},
    ]
    _jsonl(root / "projects" / enc / f"{CLAUDE_SESSION}.jsonl", turns)
    sub = root / "projects" / enc / CLAUDE_SESSION / "subagents"
    _jsonl(sub / "agent-a1b2c3d4e5f6a7b8c.jsonl", [
        {**base, "isSidechain": True, "agentId": "a1b2c3d4e5f6a7b8c", "type": "user",
         "uuid": "c0000002-0000-4000-8000-000000000001", "parentUuid": None,
         "timestamp": "2026-03-02T09:16:00.000Z",
         "message": {"role": "user", "content": f"Explore the {PHRASES['claude-subagent']} code"}},
    ])
    (sub / "agent-a1b2c3d4e5f6a7b8c.meta.json").write_text(
        '{"agentType":"Explore","description":"Find cache code"}')
    results = root / "projects" / enc / CLAUDE_SESSION / "tool-results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "toolu_demo1.txt").write_text("# Deploy\n1. migrate\n2. smoke test\n")
    _jsonl(root / "history.jsonl", [
        {"display": f"Write the {PHRASES['claude']}", "pastedContents": {},
         "timestamp": 1772442900000, "project": PROJECT}])


def _codex(root: Path) -> None:
    day = root / "sessions" / "2026" / "03" / "03"
    _jsonl(day / f"rollout-2026-03-03T10-00-00-{CODEX_SESSION}.jsonl", [
        {"timestamp": "2026-03-03T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": CODEX_SESSION, "timestamp": "2026-03-03T10:00:00.000Z",
                     "cwd": PROJECT, "originator": "codex_cli_rs", "cli_version": "0.118.0"}},
        {"timestamp": "2026-03-03T10:00:01.000Z", "type": "turn_context",
         "payload": {"cwd": PROJECT, "model": "gpt-5-codex", "approval_policy": "on-request"}},
        {"timestamp": "2026-03-03T10:00:02.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "kind": "plain",
                     "message": f"Plan the {PHRASES['codex']} for the orders table"}},
        {"timestamp": "2026-03-03T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [
             {"type": "input_text",
              "text": f"Plan the {PHRASES['codex']} for the orders table"}]}},
        {"timestamp": "2026-03-03T10:00:09.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "call_id": "call_demo1",
                     "arguments": json.dumps({"command": ["ls", "migrations"]})}},
        {"timestamp": "2026-03-03T10:00:10.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_demo1",
                     "output": "0001_orders.sql\n0002_orders_index.sql"}},
        {"timestamp": "2026-03-03T10:00:15.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [
             {"type": "output_text", "text": "Roll back 0002 first, then 0001; keep a "
              "backup of the orders table before you start."}]}},
    ])
    _jsonl(root / "history.jsonl", [
        {"session_id": CODEX_SESSION, "ts": 1772532002,
         "text": f"Plan the {PHRASES['codex']}"}])


def _opencode(root: Path) -> None:
    st = root / "storage"
    ses, msg, prt = "ses_3f00aa11bffeDemoSession01", "msg_c100aa11b001DemoMessage1", (
        "prt_c100aa11b002DemoPart0001")
    files = {
        st / "project" / "demoproject.json": {"id": "demoproject", "worktree": PROJECT},
        st / "session" / "demoproject" / f"{ses}.json": {
            "id": ses, "slug": "demo-session", "version": "1.1.44", "projectID": "demoproject",
            "directory": PROJECT, "title": "Websocket reconnect logic",
            "time": {"created": 1772618400000, "updated": 1772618460000}},
        st / "message" / ses / f"{msg}.json": {
            "id": msg, "sessionID": ses, "role": "user", "time": {"created": 1772618400000},
            "agent": "build", "model": {"providerID": "opencode", "modelID": "big-pickle"}},
        st / "part" / msg / f"{prt}.json": {
            "id": prt, "sessionID": ses, "messageID": msg, "type": "text",
            "text": f"Add {PHRASES['opencode']} with exponential backoff"},
    }
    for path, obj in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(obj, indent=2))
    s2, m2, p2 = "ses_3e00bb22bffeDemoSession02", "msg_c200bb22b001DemoMessage2", (
        "prt_c200bb22b002DemoPart0002")
    t = 1772704800000
    write_opencode_db(
        root / "opencode.db",
        project=("demoproject", PROJECT),
        session=(s2, PROJECT, "Rate limiting"),
        message=(m2, {"role": "user", "time": {"created": t}, "agent": "build"}),
        part=(p2, {"type": "text", "text": f"Design a {PHRASES['opencode-db']} per API key"}),
        at=t,
    )


def _runs(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    name = "bench-nightly-2026-03-05T02-00-00Z"
    (root / f"{name}.log").write_text(
        f"starting {PHRASES['runs']}\nrun 1: 412 ms\nrun 2: 398 ms\ndone\n")
    (root / f"{name}.json").write_text(json.dumps(
        {"job": "bench-nightly", "agent": "codex", "jobStartedAt": "2026-03-05T02:00:00Z",
         "status": "completed"}))


def write_demo(base: Path) -> dict[str, Path]:
    """Write the demo roots under `base` (replacing earlier demo files) and return them."""
    roots = {agent: base / agent for agent in ("claude", "codex", "opencode", "runs")}
    _claude(roots["claude"])
    _codex(roots["codex"])
    _opencode(roots["opencode"])
    _runs(roots["runs"])
    return roots
