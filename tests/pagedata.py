"""Claude Code projects for the dashboard page tests: titles, code, reports, no times, Windows.

Our own fixture text (no corpus excerpts). Project `PROJECT`:
- TITLED: a `custom-title` record names it; its answer has a fenced Python block; a Task
  call's result is the subagent's markdown report (heading, bold, a fence);
- PROMPTED: no title, so its name is its first prompt (on one line);
- UNDATED: its lines carry no timestamp (dated by their capture only);
and the Windows project, written once as `WIN_UPPER` and once as `WIN_LOWER` (two sessions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli

PROJECT = "/p/page"
TITLED = "eeeeeeee-0000-4000-8000-000000000001"
PROMPTED = "eeeeeeee-0000-4000-8000-000000000002"
UNDATED = "eeeeeeee-0000-4000-8000-000000000003"
WIN_A = "eeeeeeee-0000-4000-8000-000000000004"
WIN_B = "eeeeeeee-0000-4000-8000-000000000005"
WIN_UPPER = "C:\\Users\\Me\\Proj"
WIN_LOWER = "c:\\users\\me\\proj"
TITLE = "Fix the wombat importer"
PROMPT = "# Refactor\n\nthe parser, please\nand keep the tests"
CODE = "```python\ndef wombat(n):\n    return n + 1  # one more\n```"
REPORT = ("## Report\n\n**Found** three files:\n\n- src/a.py\n- src/b.py\n\n"
          "```python\nimport wombat\n```\n\n<script>window.__pwned = 'report'</script>")


def _line(session: str, n: int, kind: str, content: Any, *, cwd: str = PROJECT,
          day: int | None = 3, **extra: Any) -> dict[str, Any]:
    role = "user" if kind == "user" else "assistant"
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message.update({"id": f"msg_{session[-4:]}_{n}", "type": "message", "model": "claude-x",
                        "stop_reason": "end_turn"})
    line = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.90", "parentUuid": None,
            "uuid": f"{session[:8]}-{n:04d}-4000-8000-{session[-12:]}", "type": kind,
            "message": message, **extra}
    if day is not None:
        line["timestamp"] = f"2026-04-0{day}T10:00:{n:02d}.000Z"
    return line


def _titled() -> list[dict[str, Any]]:
    s = TITLED
    return [
        {"type": "custom-title", "customTitle": TITLE, "sessionId": s},
        _line(s, 0, "user", "make the wombat importer work", day=5),
        _line(s, 1, "assistant", [{"type": "text", "text": f"Here it is:\n\n{CODE}"}], day=5),
        _line(s, 2, "assistant", [{"type": "tool_use", "id": "toolu_p1", "name": "Task",
                                   "input": {"description": "find wombats",
                                             "prompt": "find the wombat files"}}], day=5),
        _line(s, 3, "user", [{"type": "tool_result", "tool_use_id": "toolu_p1",
                              "content": [{"type": "text", "text": REPORT}]}], day=5),
        _line(s, 4, "assistant", [{"type": "tool_use", "id": "toolu_p2", "name": "Bash",
                                   "input": {"command": "ls src"}}], day=5),
        _line(s, 5, "user", [{"type": "tool_result", "tool_use_id": "toolu_p2",
                              "content": "a.py\nb.py"}], day=5),
    ]


def _prompted() -> list[dict[str, Any]]:
    return [_line(PROMPTED, 0, "user", PROMPT, day=4),
            _line(PROMPTED, 1, "assistant", [{"type": "text", "text": "refactored"}], day=4)]


def _undated() -> list[dict[str, Any]]:
    return [_line(UNDATED, 0, "user", "a question from a file without times", day=None),
            _line(UNDATED, 1, "assistant", [{"type": "text", "text": "an undated answer"}],
                  day=None)]


def _windows(session: str, cwd: str, day: int) -> list[dict[str, Any]]:
    return [_line(session, 0, "user", f"windows work in {cwd}", cwd=cwd, day=day),
            _line(session, 1, "assistant", [{"type": "text", "text": "done"}], cwd=cwd,
                  day=day)]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def make_page_history(home: Path, root: Path) -> None:
    claude = root / "claude"
    project = claude / "projects" / "-p-page"
    _write(project / f"{TITLED}.jsonl", _titled())
    _write(project / f"{PROMPTED}.jsonl", _prompted())
    _write(project / f"{UNDATED}.jsonl", _undated())
    _write(claude / "projects" / "C--Users-Me-Proj" / f"{WIN_A}.jsonl",
           _windows(WIN_A, WIN_UPPER, 1))
    _write(claude / "projects" / "c--users-me-proj" / f"{WIN_B}.jsonl",
           _windows(WIN_B, WIN_LOWER, 2))
    empty = root / "empty"
    empty.mkdir()
    proc = run_cli(home, "capture", "--claude-dir", str(claude), "--codex-dir", str(empty),
                   "--opencode-dir", str(empty), "--runs-dir", str(empty))
    assert proc.returncode == 0, proc.stderr.decode()
    from cli.services.config import Home
    from projections.catchup import catch_up

    h = Home(home)
    catch_up(h.history_db, h.log(readonly=True))
