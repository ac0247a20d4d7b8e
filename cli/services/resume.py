"""The command that reopens a session in its agent: the one source for every front end.

Promises:
- `resume(agent, session)` is `{"argv", "command"}` from the agent registry's template
  (`readers.registry.resume_command`; `command` is `argv` shell-quoted), or None when the
  agent has no resume command or the session is unknown. The terminal (`search`,
  `conversation`, `browse`), MCP's `get_conversation`, the HTTP API and the page all show
  this value, so they never disagree;
- `of_items(items)` is the resume of the session a conversation page belongs to (its first
  item that names an agent and a session), with `cwd`: the session's project folder (where
  the command must run: the first project the page's items of that session name; None when
  they name none);
- `shell_line(resume, cwd)` is the one line to paste: `cd <project> && <command>`.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from typing import Any


def resume(agent: str | None, session: str | None) -> dict[str, Any] | None:
    """{"argv", "command"} that resumes `session` in `agent`, or None."""
    from readers.registry import resume_command

    if not agent or not session:
        return None
    argv = resume_command(agent, session)
    if not argv:
        return None
    return {"argv": argv, "command": shlex.join(argv)}


def of_items(items: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The resume of the session the items belong to, with its `cwd` (the first project
    the session's items name), or None."""
    found: dict[str, Any] | None = None
    key: tuple[str, str] | None = None
    for item in items:
        agent, session, project = item.get("agent"), item.get("session"), item.get("project")
        if key is None and isinstance(agent, str) and isinstance(session, str) and session:
            key = (agent, session)
            found = resume(agent, session)
            if found is None:
                return None
            found["cwd"] = None
        if found is not None and (item.get("agent"), item.get("session")) == key and (
                isinstance(project, str) and project):
            found["cwd"] = project
            return found
    return found


def shell_line(found: Mapping[str, Any], cwd: str | None = None) -> str:
    """`cd <cwd> && <command>` (just the command when the folder is unknown)."""
    command = str(found["command"])
    where = cwd if cwd is not None else found.get("cwd")
    return f"cd {shlex.quote(str(where))} && {command}" if where else command
