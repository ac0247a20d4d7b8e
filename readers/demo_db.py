"""A small opencode-shaped SQLite database for `agentlog demo` and tests.

Writes only the file it is given (never a real agent source), with the columns of the
tables capture reads (formats.md §3.3): project, session, message, part.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT, time_created INTEGER,
                      time_updated INTEGER);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT,
                      directory TEXT, title TEXT, version TEXT, time_created INTEGER,
                      time_updated INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
                      time_updated INTEGER, data TEXT);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
                   time_created INTEGER, time_updated INTEGER, data TEXT);
"""


def write_opencode_db(
    path: Path,
    *,
    project: tuple[str, str],
    session: tuple[str, str, str],
    message: tuple[str, dict[str, Any]],
    part: tuple[str, dict[str, Any]],
    at: int,
) -> None:
    """Create `path` (replacing it) with one project, session, message and part row.

    project = (id, worktree); session = (id, directory, title); message/part = (id, data).
    """
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    try:
        db.executescript(_SCHEMA)
        db.execute("INSERT INTO project VALUES (?,?,?,?)", (*project, at, at))
        db.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?)",
                   (session[0], project[0], None, "demo", session[1], session[2], "1.17.3",
                    at, at))
        db.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                   (message[0], session[0], at, at, json.dumps(message[1])))
        db.execute("INSERT INTO part VALUES (?,?,?,?,?,?)",
                   (part[0], message[0], session[0], at, at, json.dumps(part[1])))
        db.commit()
    finally:
        db.close()
