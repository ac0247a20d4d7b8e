"""Per-project history pages, the session list, and the cross-project turn search.

Promises:
- a history page holds at most `PAGE_SIZE` (100) transcript turns of one project, oldest
  first (time, then position in the log), filtered by session, role, tool, thread
  (`main` = the main thread, `all`, `@NAME` = one subagent by name), agent name (`claude`,
  `codex`, … as in search), since/until (inclusive, epoch ms) and words (every word must
  occur, as literal text: never query syntax);
- the cross-project search returns at most `SEARCH_CAP` (200) turns, newest first, each with
  its project, role and a preview of ±`PREVIEW_CHARS` (100) characters around the first
  match in which the match is wrapped in `<mark>…</mark>` and every other character is
  HTML-escaped; an empty query returns an empty page, never a dump;
- archived sessions are skipped unless `include_archived` is set, and then counted: a page
  and the cross-project search say how many archived sessions matched
  (`hiddenArchivedSessions`, looking at most at `SEARCH_CAP` matching turns);
- bad parameters raise `QueryError` naming the parameter. All values are bound, never
  interpolated into SQL.
"""

from __future__ import annotations

import html
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eventlog.store import EventLog
from projections.db import documents_indexed_by, has_fts
from projections.envelope import format_ts
from projections.errors import ProjectionBusy, QueryError
from projections.text import first_match, fold, folded_with_map, fts_phrase, query_tokens
from readers.records import ROLES

PAGE_SIZE = 100
SEARCH_CAP = 200
PREVIEW_CHARS = 100
MAX_PAGE = 100_000
MAX_SESSIONS = 1000
DENSE = 20_000  # matches above which the search walks the time index instead

_COLS = (
    "d.rowid, d.id, d.project, d.session, d.at, d.role, d.text, d.tool, d.agent, d.subagent,"
    " d.subagent_name, d.title, d.archived"
)


@dataclass(frozen=True, slots=True)
class HistoryFilters:
    session: str | None = None
    role: str | None = None
    tool: str | None = None
    agent: str = "all"
    since: int | None = None
    until: int | None = None
    text: str | None = None
    include_archived: bool = False
    agent_name: str | None = None  # the agent that wrote the turn, as search's --agent

    def check(self) -> None:
        if self.role is not None and self.role not in ROLES:
            raise QueryError("role", f"must be one of {', '.join(ROLES)}, got {self.role!r}")
        if not (self.agent in ("main", "all") or (self.agent.startswith("@") and
                                                   len(self.agent) > 1)):
            raise QueryError("thread", f"must be main, all or @NAME, got {self.agent!r}")
        if self.agent_name is not None:
            from readers.registry import search_agents

            if self.agent_name not in search_agents():
                raise QueryError("agent", f"must be one of {', '.join(search_agents())}, got "
                                 f"{self.agent_name!r}")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise QueryError("since", "must not be after until")


def _turn(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    return {
        "id": row[1],
        "project": row[2],
        "sessionId": row[3],
        "ts": format_ts(row[4]),
        "at": row[4],
        "role": row[5],
        "content": row[6],
        "tool": row[7],
        "agent": row[8],
        "subagent": row[9],
        "subagentName": row[10],
        "title": row[11],
        "archived": bool(row[12]),
    }


def _text_clause(
    con: sqlite3.Connection, tokens: list[str], *, probe: bool = False
) -> tuple[str, list[Any]]:
    """SQL (on alias `d`) requiring every token, planned like `projections.search`.

    With `probe`, the main-index condition is a per-row EXISTS (for a scan in time order
    that stops after the first hits) instead of an IN over every match.
    """
    from projections.search import _cjk_expr, _plan

    if not tokens:
        return "", []
    parts: list[str] = []
    params: list[Any] = []
    if has_fts(con):
        main, grams, lits = _plan(tokens)
        if main:
            parts.append(
                "EXISTS (SELECT 1 FROM documents_fts WHERE documents_fts MATCH ?"
                " AND rowid = d.rowid)" if probe else
                "d.rowid IN (SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?)"
            )
            params.append(_main_expr(main))
        if grams:
            parts.append("d.rowid IN (SELECT rowid FROM documents_cjk WHERE documents_cjk MATCH ?)")
            params.append(_cjk_expr(grams))
    else:
        lits = tokens
    for t in lits:
        parts.append("instr(fold(d.text), ?) > 0")
        params.append(fold(t))
    return " AND ".join(parts), params


def _main_expr(main: list[str]) -> str:
    return " AND ".join(fts_phrase(t) for t in main)


def _dense(con: sqlite3.Connection, tokens: list[str]) -> bool:
    """True when the words match more than DENSE documents (then scan newest first)."""
    from projections.search import _plan

    if not has_fts(con):
        return False
    main = _plan(tokens)[0]
    if not main:
        return False
    has_index = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'documents_at'"
    ).fetchone()
    if has_index is None:
        return False
    (n,) = con.execute(
        "SELECT count(*) FROM (SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?"
        " LIMIT ?)", (_main_expr(main), DENSE + 1)).fetchone()
    return bool(n > DENSE)


Connection = sqlite3.Connection


def open_current(db_path: Path, log: EventLog) -> Connection:
    """history.db caught up to the log head, opened read-only.

    When another process is rebuilding it, the live file answers (possibly a little
    behind); with no file at all, `ProjectionBusy` propagates.
    """
    from projections import db
    from projections.catchup import catch_up

    try:
        catch_up(db_path, log)
    except ProjectionBusy:
        if not db_path.exists():
            raise
    return db.connect(db_path, readonly=True)


def filter_conditions(filters: HistoryFilters, ph: str) -> tuple[list[str], list[Any]]:
    """WHERE conditions (on documents `d`) and parameters for every history filter but the
    text, with `ph` as the placeholder ("?" for SQLite, "%s" for PostgreSQL)."""
    where: list[str] = []
    params: list[Any] = []
    for col, value in (("session", filters.session), ("role", filters.role),
                       ("tool", filters.tool), ("agent", filters.agent_name)):
        if value is not None:
            where.append(f"d.{col} = {ph}")
            params.append(value)
    if filters.agent == "main":
        where.append("d.subagent IS NULL")
    elif filters.agent.startswith("@"):
        where.append(f"d.subagent_name = {ph}")
        params.append(filters.agent[1:])
    if filters.since is not None:
        where.append(f"d.at >= {ph}")
        params.append(filters.since)
    if filters.until is not None:
        where.append(f"d.at <= {ph}")
        params.append(filters.until)
    return where, params


def history_page(
    con: sqlite3.Connection, project: str, filters: HistoryFilters, page: int = 1
) -> dict[str, Any]:
    """One page of a project's turns, oldest first: {project, page, pageSize, turns, next}."""
    filters.check()
    if not 1 <= page <= MAX_PAGE:
        raise QueryError("page", f"must be 1..{MAX_PAGE}, got {page}")
    where = ["d.kind = 'transcript'", "d.project = ?"]
    params: list[Any] = [project]
    more, more_params = filter_conditions(filters, "?")
    where += more
    params += more_params
    if filters.text is not None and filters.text.strip():
        clause, extra = _text_clause(con, query_tokens(filters.text))
        if clause:
            where.append(clause)
            params.extend(extra)
    hidden = 0 if filters.include_archived else _hidden_sessions(con, where, params)
    if not filters.include_archived:
        where.append("d.archived = 0")
    sql = (
        f"SELECT {_COLS} FROM documents d WHERE {' AND '.join(where)}"
        " ORDER BY d.at, d.ord, d.rowid LIMIT ? OFFSET ?"
    )
    rows = con.execute(sql, [*params, PAGE_SIZE + 1, (page - 1) * PAGE_SIZE]).fetchall()
    turns = [_turn(r) for r in rows[:PAGE_SIZE]]
    return {
        "project": project,
        "page": page,
        "pageSize": PAGE_SIZE,
        "turns": turns,
        "next": page + 1 if len(rows) > PAGE_SIZE else None,
        "hiddenArchivedSessions": hidden,
    }


def _hidden_sessions(con: sqlite3.Connection, where: list[str], params: list[Any],
                     source: str = "documents") -> int:
    """Archived sessions with a turn matching `where` (what include_archived would add),
    among the newest SEARCH_CAP + 1 matching archived turns (the same for every plan)."""
    row = con.execute(
        f"SELECT count(DISTINCT session) FROM (SELECT d.session FROM {source} d"
        f" WHERE {' AND '.join([*where, 'd.archived = 1'])}"
        " ORDER BY d.at DESC, d.ord DESC, d.rowid DESC LIMIT ?)",
        [*params, SEARCH_CAP + 1],
    ).fetchone()
    return int(row[0])


def archived_sessions(con: sqlite3.Connection) -> int:
    """How many sessions with transcript turns are archived (hidden from the project list)."""
    row = con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT project, session FROM documents"
        " WHERE kind = 'transcript' AND archived = 1 AND project IS NOT NULL)"
    ).fetchone()
    return int(row[0])


def sessions(
    con: sqlite3.Connection, project: str, *, include_archived: bool = False
) -> list[dict[str, Any]]:
    """The project's sessions for the dropdown, newest first (at most MAX_SESSIONS)."""
    arch = "" if include_archived else " AND archived = 0"
    # the session's own title (opencode's session row) when known: the documents' titles are
    # per turn (tool titles, file names), so max() of them is an arbitrary one
    rows = con.execute(
        "SELECT session, count(*), min(at), max(at), coalesce((SELECT s.title FROM sessions s"
        " WHERE s.session = documents.session AND s.title IS NOT NULL ORDER BY s.agent LIMIT 1),"
        " max(title)), max(archived)"
        " FROM documents WHERE kind = 'transcript' AND project = ? AND session IS NOT NULL"
        f"{arch} GROUP BY session ORDER BY max(at) DESC, session LIMIT ?",
        (project, MAX_SESSIONS),
    ).fetchall()
    return [
        {"sessionId": r[0], "turns": r[1], "first": format_ts(r[2]), "last": format_ts(r[3]),
         "title": r[4], "archived": bool(r[5])}
        for r in rows
    ]


def projects(con: sqlite3.Connection, *, include_archived: bool = False) -> list[dict[str, Any]]:
    """Projects that have (hot, unless `include_archived`) transcript turns, the newest last
    real record time first (`last`; null, and listed last, when no record of the project
    carries a time of its own: see `projections.row.UNDATED`)."""
    from projections.row import UNDATED

    arch = "" if include_archived else " AND archived = 0"
    rows = con.execute(
        "SELECT project, count(*), max(CASE WHEN extra IS NOT ? THEN at END) AS last"
        f" FROM documents WHERE kind = 'transcript' AND project IS NOT NULL{arch}"
        " GROUP BY project ORDER BY last IS NULL, last DESC, max(at) DESC", (UNDATED,)
    ).fetchall()
    return [{"project": r[0], "turns": r[1], "last": None if r[2] is None else format_ts(r[2])}
            for r in rows]


def session_present(con: sqlite3.Connection, project: str, session: str) -> bool:
    """True when the project holds a hot (not archived) turn of this session."""
    row = con.execute(
        "SELECT 1 FROM documents WHERE session = ? AND project = ? AND kind = 'transcript'"
        " AND archived = 0 LIMIT 1",
        (session, project),
    ).fetchone()
    return row is not None


def search(
    con: sqlite3.Connection,
    query: str,
    *,
    role: str | None = None,
    include_archived: bool = False,
) -> dict[str, Any]:
    """Turns of every project matching every word, newest first, at most SEARCH_CAP."""
    if role is not None and role not in ROLES:
        raise QueryError("role", f"must be one of {', '.join(ROLES)}, got {role!r}")
    if not isinstance(query, str) or not query.strip():
        return {"query": "", "hits": [], "capped": False, "hiddenArchivedSessions": 0}
    tokens = query_tokens(query)
    if not tokens:
        return {"query": query.strip(), "hits": [], "capped": False,
                "hiddenArchivedSessions": 0}
    # A rare word: collect its matches, sort them by time. A very common word: walk the
    # time index newest first and test each document, stopping after the cap.
    dense = _dense(con, tokens)
    clause, params = _text_clause(con, tokens, probe=dense)
    where = ["d.kind = 'transcript'", clause]
    if role is not None:
        where.append("d.role = ?")
        params.append(role)
    source = documents_indexed_by("documents_at") if dense else "documents"
    hidden = 0 if include_archived else _hidden_sessions(con, where, params, source)
    if not include_archived:
        where.append("d.archived = 0")
    rows = con.execute(
        f"SELECT {_COLS} FROM {source} d WHERE {' AND '.join(where)}"
        " ORDER BY d.at DESC, d.ord DESC, d.rowid DESC LIMIT ?",
        [*params, SEARCH_CAP + 1],
    ).fetchall()
    hits = []
    for r in rows[:SEARCH_CAP]:
        hits.append({
            "id": r[1], "project": r[2], "sessionId": r[3], "ts": format_ts(r[4]), "at": r[4],
            "role": r[5], "tool": r[7], "agent": r[8], "subagentName": r[10],
            "subagent": r[9], "archived": bool(r[12]), "preview": preview(r[6], tokens),
        })
    return {"query": query.strip(), "hits": hits, "capped": len(rows) > SEARCH_CAP,
            "hiddenArchivedSessions": hidden}


def preview(text: str, tokens: list[str], width: int = PREVIEW_CHARS) -> str:
    """±`width` characters around the first match, HTML-escaped, the match in <mark>."""
    window = text[:200_000]
    folded, idx = folded_with_map(window)
    best, best_len = first_match(folded, tokens)
    if best < 0 or best >= len(idx):
        return html.escape(window[: 2 * width])
    start = idx[best]
    end_f = min(best + best_len, len(idx)) - 1
    end = idx[end_f] + 1
    lo, hi = max(0, start - width), min(len(window), end + width)
    return (
        ("…" if lo > 0 else "")
        + html.escape(window[lo:start])
        + "<mark>"
        + html.escape(window[start:end])
        + "</mark>"
        + html.escape(window[end:hi])
        + ("…" if hi < len(window) else "")
    )
