"""The session browser's reads: a project's sessions and a session's subagents.

Promises:
- `project_sessions` lists at most `MAX_SESSIONS` sessions of one project, the newest last
  real record time first (a record without a time of its own is dated by its capture, which
  is not its time: `projections.row.UNDATED`); sessions none of whose records carries a
  time come last, with `first`, `last` and `at` null; each with its agent, conversation id
  (of the main thread), title (the session's own title when the agent records one), first
  user prompt (at most `PROMPT_CHARS` characters), turn and prompt counts, first/last time
  and how many subagents ran; archived sessions are left out unless asked for;
- `session_subagents` lists the subagent threads of one session, each with its conversation
  id, name, first prompt, turn count and `parent`: the id of the main thread's tool call
  whose `prompt` argument is the subagent's first prompt (each call claimed once), or None;
- `heading` is a session's name wherever one is shown (the page, the browser, the exports):
  its own title when its records carry one, else its first user prompt on one line (a
  prompt's leading markdown marks off, at most `TITLE_CHARS`), else its id;
- `projects_named` lists every project history.db names, for "unknown project" errors;
- read-only; every value is bound, never interpolated into SQL; unknown projects and
  sessions answer empty lists.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from projections.envelope import format_ts
from projections.errors import QueryError
from projections.project_key import project_key
from projections.row import UNDATED

MAX_SESSIONS = 500
PROMPT_CHARS = 300
TITLE_CHARS = 120


def heading(title: str | None, prompt: str | None, fallback: str) -> str:
    """The session's name: `title`, else `prompt`, else `fallback`, on one line."""
    text = title or (prompt or "").lstrip("#> \t\n") or fallback
    line = " ".join(text.split()) or fallback
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"



def _prompt(con: sqlite3.Connection, conversation: str | None) -> str | None:
    """The first user turn of a conversation, whitespace collapsed."""
    if conversation is None:
        return None
    row = con.execute(
        "SELECT text FROM documents WHERE conversation = ? AND role = 'user'"
        " ORDER BY at, ord LIMIT 1", (conversation,)).fetchone()
    return " ".join(str(row[0]).split()) if row is not None else None


def _short(text: str | None) -> str | None:
    if text is None or len(text) <= PROMPT_CHARS:
        return text
    return text[: PROMPT_CHARS - 1] + "…"


def _first_prompt(con: sqlite3.Connection, conversation: str | None) -> str | None:
    return _short(_prompt(con, conversation))


def _call_prompts(con: sqlite3.Connection, agent: str, session: str) -> list[tuple[str, str]]:
    """(document id, prompt) of the main thread's calls that start a subagent."""
    out = []
    for doc_id, text, tool in con.execute(
        "SELECT id, text, tool FROM documents WHERE session = ? AND agent = ?"
        " AND subagent IS NULL AND role = 'tool_use' ORDER BY at, ord", (session, agent)):
        body = str(text)[len(tool or ""):].strip() if tool else str(text)
        try:
            args = json.loads(body)
        except ValueError:
            continue
        if isinstance(args, dict) and isinstance(args.get("prompt"), str):
            out.append((str(doc_id), " ".join(args["prompt"].split())))
    return out


def project_sessions(
    con: sqlite3.Connection, project: str, *, include_archived: bool = False
) -> dict[str, Any]:
    """{"project", "sessions": [...], "capped"}: newest activity first."""
    arch = "" if include_archived else " AND archived = 0"
    real = "CASE WHEN extra IS NOT ? THEN at END"  # NULL: dated by its capture only
    rows = con.execute(
        f"SELECT agent, session, count(*), sum(role = 'user' AND subagent IS NULL), min({real}),"
        f" max({real}) AS last, count(DISTINCT subagent), max(archived),"
        " min(CASE WHEN subagent IS NULL THEN conversation END)"
        " FROM documents WHERE kind = 'transcript' AND project = ? AND session IS NOT NULL"
        f"{arch} GROUP BY agent, session ORDER BY last IS NULL, last DESC, max(at) DESC,"
        " session LIMIT ?",
        (UNDATED, UNDATED, project, MAX_SESSIONS + 1),
    ).fetchall()
    out = []
    for agent, session, turns, prompts, first, last, subagents, archived, conv in rows[
            :MAX_SESSIONS]:
        title = con.execute(
            "SELECT title FROM sessions WHERE agent = ? AND session = ?", (agent, session)
        ).fetchone()
        prompt = _first_prompt(con, conv)
        own = title[0] if title else None
        out.append({
            "agent": agent, "sessionId": session, "conversation": conv,
            "title": own, "heading": heading(own, prompt, session),
            "firstPrompt": prompt,
            "turns": turns, "prompts": prompts or 0, "subagents": subagents,
            "first": None if first is None else format_ts(first),
            "last": None if last is None else format_ts(last), "at": last,
            "archived": bool(archived),
        })
    return {"project": project, "sessions": out, "capped": len(rows) > MAX_SESSIONS}


def session_subagents(con: sqlite3.Connection, agent: str, session: str) -> list[dict[str, Any]]:
    """The subagent threads of one session, oldest first."""
    calls = _call_prompts(con, agent, session)
    rows = con.execute(
        "SELECT subagent, max(subagent_name), conversation, count(*), min(at) FROM documents"
        " WHERE session = ? AND agent = ? AND subagent IS NOT NULL AND kind = 'transcript'"
        " GROUP BY conversation ORDER BY min(at), subagent",
        (session, agent),
    ).fetchall()
    out = []
    for sub, name, conv, turns, first in rows:
        prompt = _prompt(con, conv)
        parent = next((i for i, (_, p) in enumerate(calls) if p == prompt), None)
        out.append({
            "subagent": sub, "name": name, "conversation": conv, "firstPrompt": _short(prompt),
            "turns": turns, "first": format_ts(first),
            "parent": calls.pop(parent)[0] if parent is not None else None,
        })
    return out


def _connection(db_path: Path) -> sqlite3.Connection | None:
    from projections.query import _open

    return _open(Path(db_path))


def sessions_of(db_path: Path, project: str, *, include_archived: bool = False) -> dict[str, Any]:
    """`project_sessions` on history.db as it is (a missing file answers no sessions)."""
    if not isinstance(project, str) or not project:
        raise QueryError("project", "must be a non-empty string")
    project = project_key(project)
    con = _connection(db_path)
    if con is None:
        return {"project": project, "sessions": [], "capped": False}
    return project_sessions(con, project, include_archived=include_archived)


def session_info(db_path: Path, agent: str, session: str) -> dict[str, Any] | None:
    """{"agent", "sessionId", "conversation", "project", "title", "heading", "firstPrompt",
    "subagents"}; None if unknown."""
    con = _connection(db_path)
    if con is None:
        return None
    row = con.execute(
        "SELECT conversation, project FROM documents WHERE session = ? AND agent = ?"
        " AND kind = 'transcript' ORDER BY subagent IS NOT NULL, at, ord LIMIT 1",
        (session, agent)).fetchone()
    if row is None:
        return None
    title = con.execute("SELECT title FROM sessions WHERE agent = ? AND session = ?",
                        (agent, session)).fetchone()
    own = title[0] if title else None
    prompt = _first_prompt(con, row[0])
    return {"agent": agent, "sessionId": session, "conversation": row[0], "project": row[1],
            "title": own, "heading": heading(own, prompt, session), "firstPrompt": prompt,
            "subagents": session_subagents(con, agent, session)}


def projects_named(con: sqlite3.Connection) -> list[str]:
    """Every project named in history.db (sorted; archived sessions included)."""
    return [str(r[0]) for r in con.execute(
        "SELECT DISTINCT project FROM documents WHERE project IS NOT NULL ORDER BY project")]


def known_projects(db_path: Path) -> list[str]:
    """`projects_named` on history.db as it is (none when the file is missing)."""
    con = _connection(db_path)
    return [] if con is None else projects_named(con)


def unknown_project_hint(known: list[str]) -> str:
    """The "how to fix" of an unknown project: the known ones (at most 20 named)."""
    if not known:
        return "no project is indexed yet"
    shown = ", ".join(known[:20]) + (f", … ({len(known)} in all)" if len(known) > 20 else "")
    return f"known projects: {shown}"
