"""A Claude Code project for the session-browser tests: markdown, tools, a subagent, hostility.

Our own fixture text (no corpus excerpts). Session READ (newest) has markdown with hostile
parts, a Bash call, thinking, an Agent call whose subagent ran in a subagents/ file, enough
filler turns that a late hit must be scrolled to, and the words `zqxhostile` and
`import_router`. Session OLD is an older, short session of the same project.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli

PROJECT = "/p/reader"
READ = "dddddddd-0000-4000-8000-000000000001"
OLD = "dddddddd-0000-4000-8000-000000000002"
SUB = "a5ub0000000000001"
SUB_PROMPT = "find the wombat files in src"
HOSTILE_MD = (
    "## Steps\n\n- first step\n- second step\n\n| col | val |\n|---|---|\n| a | 1 |\n\n"
    "```python\nimport_router = build()\n```\n\n"
    "<script>window.__pwned = 'md-script'</script>\n\n"
    "<img src=x onerror=\"window.__pwned = 'md-img'\"> "
    "[bad](javascript:window.__pwned='md-link') "
    "<a href=\"javascript:window.__pwned='raw-a'\" onclick=\"window.__pwned='click'\">raw</a> "
    "<b onmouseover=\"window.__pwned='hover'\">bold</b> "
    "[good](https://example.org/docs) x marks the spot near zqxhostile"
)


def _line(session: str, n: int, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    role = "user" if kind == "user" else "assistant"
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message.update({"id": f"msg_{session[-4:]}_{n}", "type": "message", "model": "claude-x",
                        "stop_reason": "end_turn"})
    return {"isSidechain": False, "userType": "external", "cwd": PROJECT, "sessionId": session,
            "version": "2.1.90", "parentUuid": None, "uuid": f"{session[:8]}-{n:04d}-4000-8000-"
            f"{session[-12:]}", "timestamp": f"2026-04-0{2 if session == READ else 1}T10:"
            f"{n // 60:02d}:{n % 60:02d}.000Z", "type": kind, "message": message, **extra}


def _read_session() -> list[dict[str, Any]]:
    s = READ
    lines = [
        _line(s, 0, "user", "# Plan\n\nexplain import_router and zqxhostile please"),
        _line(s, 1, "assistant", [{"type": "text", "text": HOSTILE_MD}]),
        _line(s, 2, "assistant", [
            {"type": "thinking", "thinking": "the user wants a listing first", "signature": "s"},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash",
             "input": {"command": "ls -la /srv/app", "description": "list the app"}}]),
        _line(s, 3, "user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                              "content": "total 0\nimport_router.py"}]),
        _line(s, 4, "assistant", [{"type": "tool_use", "id": "toolu_2", "name": "Agent",
                                   "input": {"description": "wombat hunt",
                                             "subagent_type": "Explore",
                                             "prompt": SUB_PROMPT}}]),
        _line(s, 5, "user", [{"type": "tool_result", "tool_use_id": "toolu_2",
                              "content": f"agentId: {SUB} found them"}]),
    ]
    for n in range(6, 86):
        kind = "user" if n % 2 == 0 else "assistant"
        text = f"filler turn {n} about nothing much"
        lines.append(_line(s, n, kind, text if kind == "user" else [{"type": "text",
                                                                       "text": text}]))
    lines.append(_line(s, 86, "assistant", [{"type": "text",
                                             "text": "the needle answer is **here**"}]))
    for n in range(87, 120):
        kind = "user" if n % 2 == 0 else "assistant"
        text = f"later filler {n}"
        lines.append(_line(s, n, kind, text if kind == "user" else [{"type": "text",
                                                                       "text": text}]))
    return lines


def _subagent() -> list[dict[str, Any]]:
    first = _line(READ, 200, "user", SUB_PROMPT, isSidechain=True, agentId=SUB)
    reply = _line(READ, 201, "assistant", [{"type": "text", "text": "wombat lives in src/w.py"}],
                  isSidechain=True, agentId=SUB)
    return [first, reply]


def _old_session() -> list[dict[str, Any]]:
    return [_line(OLD, 0, "user", "an older question about ferrets"),
            _line(OLD, 1, "assistant", [{"type": "text", "text": "ferrets answer"}])]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def make_reader_history(home: Path, root: Path) -> None:
    claude = root / "claude"
    project = claude / "projects" / "-p-reader"
    _write(project / f"{READ}.jsonl", _read_session())
    _write(project / READ / "subagents" / f"agent-{SUB}.jsonl", _subagent())
    (project / READ / "subagents" / f"agent-{SUB}.meta.json").write_text(
        json.dumps({"agentType": "Explore", "description": "wombat hunt"}), encoding="utf-8")
    _write(project / f"{OLD}.jsonl", _old_session())
    empty = root / "empty"
    empty.mkdir()
    proc = run_cli(home, "capture", "--claude-dir", str(claude), "--codex-dir", str(empty),
                   "--opencode-dir", str(empty), "--runs-dir", str(empty))
    assert proc.returncode == 0, proc.stderr.decode()
    from cli.services.config import Home
    from projections.catchup import catch_up

    h = Home(home)
    catch_up(h.history_db, h.log(readonly=True))
