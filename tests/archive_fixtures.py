"""Builders of export envelopes for the history/export/archive tests (our own fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli.services.config import Home

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def iso(ms: int) -> str:
    """The envelope's timestamp form, made independently of the code under test."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def turn(session: str, idx: int, at: int, role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session, "turnIdx": idx, "ts": iso(at), "role": role,
            "content": content, **extra}


def envelope(project: str, turns: list[dict[str, Any]]) -> bytes:
    return json.dumps({"schemaVersion": 1, "projectId": project,
                       "exportedAt": "2026-02-01T00:00:00Z", "turnCount": len(turns),
                       "turns": turns}).encode()


def rich_project(project: str = "proj-a", start: int = T0) -> list[dict[str, Any]]:
    """Three sessions: roles, a tool, a subagent, CJK, markup-looking text."""
    return [
        turn("s1", 0, start, "user", "please fix the settings screen <script>alert(1)</script>"),
        turn("s1", 1, start + 1000, "assistant", "I will look at the settings screen now"),
        turn("s1", 2, start + 2000, "tool_use", "grep -r settings src/", tool="Bash"),
        turn("s1", 3, start + 3000, "tool_result", "src/settings.py: class Settings"),
        turn("s1", 4, start + 4000, "thinking", "the screen is rendered by Settings"),
        turn("s2", 0, start + DAY, "user", "数据库迁移 needs a rollback plan"),
        turn("s2", 1, start + DAY + 500, "assistant", "explored the migration files",
             subagent="agent-1", subagentName="Explore"),
        turn("s2", 2, start + DAY + 900, "system", "context compacted"),
        turn("s3", 0, start + 2 * DAY, "user", "résumé of yesterday's café discussion",
             agent="codex"),
    ]


def home_at(path: Path) -> Home:
    path.mkdir(parents=True, exist_ok=True)
    return Home(path)


def import_turns(home: Home, project: str, turns: list[dict[str, Any]]) -> dict[str, Any]:
    from cli.services import archive_ops

    return archive_ops.import_envelope(home, envelope(project, turns), apply=True)
