"""What `agentlog forget --session/--project` takes, read from history.db (the cli's
`cli.services.forget` plans with it; the log scan and the forms are `eventlog.forget`'s).

- `session_id`: a session by id, alias, or a unique prefix of 6+ (None when none; raises
  `QueryError` when a prefix is ambiguous);
- `sessions_of_project`, `project_known`;
- `sources_of`: the sources the sessions' rows came from, split into those no other
  session's rows came from (owned: the whole file goes) and shared ones.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from projections.db import ROWS_AND_THREADS as _ROWS  # (not the view: its text needs doc_text)
from projections.errors import QueryError


def _connect(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def session_id(db: Path, given: str) -> str | None:
    """`given` as a session id: exact, an alias, or a unique prefix of at least 6."""
    con = _connect(db)
    try:
        if con.execute(f"SELECT 1 FROM {_ROWS} WHERE t.session = ? LIMIT 1",
                       (given,)).fetchone():
            return given
        rows = con.execute("SELECT DISTINCT session FROM aliases WHERE alias = ?",
                           (given,)).fetchall()
        if len(rows) == 1:
            return str(rows[0][0])
        if len(given) >= 6:
            rows = con.execute(
                f"SELECT DISTINCT t.session FROM {_ROWS} WHERE t.session >= ?"
                " AND t.session < ? LIMIT 2", (given, given + "\uffff")).fetchall()
            if len(rows) == 1:
                return str(rows[0][0])
            if len(rows) > 1:
                raise QueryError("session", f"{given!r} is ambiguous: give more of its id")
    finally:
        con.close()
    return None


def sessions_of_project(db: Path, project: str) -> list[str]:
    con = _connect(db)
    try:
        rows = con.execute(
            f"SELECT t.session FROM {_ROWS} WHERE r.project = ? AND t.session IS NOT NULL"
            " UNION SELECT session FROM sessions WHERE project = ?", (project, project))
        return sorted(str(r[0]) for r in rows)
    finally:
        con.close()


def project_known(db: Path, project: str) -> bool:
    con = _connect(db)
    try:
        return con.execute("SELECT 1 FROM document_rows WHERE project = ? LIMIT 1",
                           (project,)).fetchone() is not None
    finally:
        con.close()


def sources_of(db: Path, sessions: list[str]) -> tuple[dict[str, str], set[str]]:
    """(owned sources -> their path on disk, shared sources) of `sessions`' rows."""
    owned: dict[str, str] = {}
    shared: set[str] = set()
    if not sessions:
        return owned, shared
    con = _connect(db)
    try:
        con.execute("CREATE TEMP TABLE gone(session TEXT PRIMARY KEY)")
        con.executemany("INSERT OR IGNORE INTO gone VALUES (?)", [(s,) for s in sessions])
        rows = con.execute(
            "SELECT s.id, s.source FROM doc_sources s WHERE s.id IN (SELECT DISTINCT"
            f" r.source_id FROM {_ROWS} WHERE t.session IN (SELECT session FROM gone))").fetchall()
        for sid, source in rows:
            other = con.execute(
                f"SELECT 1 FROM {_ROWS} WHERE r.source_id = ? AND t.session IS NOT NULL AND"
                " t.session NOT IN (SELECT session FROM gone) LIMIT 1", (sid,)).fetchone()
            if other is None:
                got = con.execute("SELECT root, path FROM sources WHERE source = ?",
                                  (source,)).fetchone()
                owned[str(source)] = os.path.join(got[0], got[1]) if got else ""
            else:
                shared.add(str(source))
    finally:
        con.close()
    return owned, shared
