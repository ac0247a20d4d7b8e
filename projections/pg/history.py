"""Per-project history and the cross-project turn search, answered by the team server.

The same shapes and limits as `projections.history` (docs/archive.md): projects with
transcript turns; one project's turns, `PAGE_SIZE` a page, oldest first, with its session
list; every project's turns matching every word, newest first, at most `SEARCH_CAP`, with an
HTML-escaped preview. Each turn and hit also carries `host`, and each function takes an
optional `host` to keep to one machine. Words are matched like `pg.query` (tsvector of
folded words; CJK and mixed parts as ILIKE substrings served by the partial trigram index).
"""

from __future__ import annotations

from typing import Any

from projections.envelope import format_ts
from projections.errors import QueryError
from projections.history import (
    MAX_PAGE,
    MAX_SESSIONS,
    PAGE_SIZE,
    SEARCH_CAP,
    HistoryFilters,
    filter_conditions,
)
from projections.history import preview as make_preview
from projections.pg.query import _like, _plan, _run
from projections.pg.schema import CJK_PREDICATE
from projections.text import query_tokens
from readers.records import ROLES

_COLS = ("rid", "id", "project", "session", "at", "role", "text", "tool", "agent", "subagent",
         "subagent_name", "title", "archived", "host")


def _turn(r: tuple[Any, ...]) -> dict[str, Any]:
    return {"id": r[1], "project": r[2], "sessionId": r[3], "ts": format_ts(r[4]), "at": r[4],
            "role": r[5], "content": r[6], "tool": r[7], "agent": r[8], "subagent": r[9],
            "subagentName": r[10], "title": r[11], "archived": bool(r[12]), "host": r[13]}


def _text(tokens: list[str]) -> tuple[list[str], list[Any]]:
    words, subs, _grams = _plan(tokens)  # no bigram condition: exact without it
    conds: list[str] = []
    params: list[Any] = []
    if words:
        conds.append("d.tsv @@ plainto_tsquery('simple', %s)")
        params.append(" ".join(words))
    if subs:
        conds.append(f"d.{CJK_PREDICATE}")
    for s in subs:
        conds.append("d.text ILIKE %s")
        params.append(_like(s))
    return conds, params


def _hidden(con: Any, where: list[str], params: list[Any]) -> int:
    """Archived sessions with a turn matching `where`, among the newest SEARCH_CAP + 1
    matching archived turns (as `projections.history`)."""
    row = con.execute(
        "SELECT count(DISTINCT (host, session)) FROM (SELECT d.host, d.session"
        f" FROM agentlog.documents d WHERE {' AND '.join([*where, 'd.archived = 1'])}"
        " ORDER BY d.at DESC, coalesce(d.ord, 0) DESC, d.rid DESC LIMIT %s) t",
        [*params, SEARCH_CAP + 1]).fetchone()
    return int(row[0])


def archived_sessions(url: str) -> int:
    """How many sessions with transcript turns are archived, over every host."""
    row = _run(url, lambda con: con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT host, project, session FROM agentlog.documents"
        " WHERE kind = 'transcript' AND archived = 1 AND project IS NOT NULL) t").fetchone())
    return int(row[0])


def projects(url: str, host: str | None = None, *,
             include_archived: bool = False) -> list[dict[str, Any]]:
    """Projects that have (hot, unless `include_archived`) transcript turns, most recently
    active first (all hosts)."""
    sql = ("SELECT project, count(*), max(at), array_agg(DISTINCT host ORDER BY host)"
           " FROM agentlog.documents WHERE kind = 'transcript' AND project IS NOT NULL"
           + ("" if include_archived else " AND archived = 0")
           + (" AND host = %s" if host else "")
           + " GROUP BY project ORDER BY max(at) DESC")
    rows = _run(url, lambda con: con.execute(sql, [host] if host else []).fetchall())
    return [{"project": r[0], "turns": r[1], "last": format_ts(r[2]), "hosts": list(r[3])}
            for r in rows]


def history_page(url: str, project: str, filters: HistoryFilters, page: int = 1,
                 host: str | None = None) -> dict[str, Any]:
    """One page of a project's turns (every host, or `host`) plus its sessions."""
    filters.check()
    if not 1 <= page <= MAX_PAGE:
        raise QueryError("page", f"must be 1..{MAX_PAGE}, got {page}")
    where = ["d.kind = 'transcript'", "d.project = %s"]
    params: list[Any] = [project]
    if host is not None:
        where.append("d.host = %s")
        params.append(host)
    more, more_params = filter_conditions(filters, "%s")
    where += more
    params += more_params
    if filters.text is not None and filters.text.strip():
        conds, extra = _text(query_tokens(filters.text))
        where += conds
        params += extra
    where.append("true" if filters.include_archived else "d.archived = 0")  # always last
    sql = (f"SELECT {', '.join('d.' + c for c in _COLS)} FROM agentlog.documents d"
           f" WHERE {' AND '.join(where)} ORDER BY d.at, coalesce(d.ord, 0), d.rid"
           " LIMIT %s OFFSET %s")
    arch = "" if filters.include_archived else " AND archived = 0"
    hcond = " AND host = %s" if host is not None else ""
    ssql = ("SELECT session, count(*), min(at), max(at), max(title), max(archived)"
            " FROM agentlog.documents WHERE kind = 'transcript' AND project = %s"
            f" AND session IS NOT NULL{arch}{hcond} GROUP BY session"
            " ORDER BY max(at) DESC, session LIMIT %s")

    def fetch(con: Any) -> tuple[list[Any], list[Any], int]:
        hidden = 0 if filters.include_archived else _hidden(con, where[:-1], params)
        rows = con.execute(sql, [*params, PAGE_SIZE + 1, (page - 1) * PAGE_SIZE]).fetchall()
        srows = con.execute(ssql, [project, *([host] if host else []), MAX_SESSIONS]).fetchall()
        return rows, srows, hidden

    rows, srows, hidden = _run(url, fetch)
    return {
        "project": project, "page": page, "pageSize": PAGE_SIZE,
        "turns": [_turn(r) for r in rows[:PAGE_SIZE]],
        "next": page + 1 if len(rows) > PAGE_SIZE else None,
        "hiddenArchivedSessions": hidden,
        "sessions": [{"sessionId": r[0], "turns": r[1], "first": format_ts(r[2]),
                      "last": format_ts(r[3]), "title": r[4], "archived": bool(r[5])}
                     for r in srows],
    }


def search(url: str, query: str, *, role: str | None = None, include_archived: bool = False,
           host: str | None = None) -> dict[str, Any]:
    """Turns of every project (and host) matching every word, newest first, capped."""
    if role is not None and role not in ROLES:
        raise QueryError("role", f"must be one of {', '.join(ROLES)}, got {role!r}")
    if not isinstance(query, str) or not query.strip():
        return {"query": "", "hits": [], "capped": False, "hiddenArchivedSessions": 0}
    tokens = query_tokens(query)
    if not tokens:
        return {"query": query.strip(), "hits": [], "capped": False,
                "hiddenArchivedSessions": 0}
    where, params = _text(tokens)
    where.append("d.kind = 'transcript'")
    if role is not None:
        where.append("d.role = %s")
        params.append(role)
    if host is not None:
        where.append("d.host = %s")
        params.append(host)
    hot = [*where, "true" if include_archived else "d.archived = 0"]
    sql = (f"SELECT {', '.join('d.' + c for c in _COLS)} FROM agentlog.documents d"
           f" WHERE {' AND '.join(hot)} ORDER BY d.at DESC, coalesce(d.ord, 0) DESC,"
           " d.rid DESC LIMIT %s")

    def fetch(con: Any) -> tuple[list[Any], int]:
        hidden = 0 if include_archived else _hidden(con, where, params)
        return con.execute(sql, [*params, SEARCH_CAP + 1]).fetchall(), hidden

    rows, hidden = _run(url, fetch)
    hits = [{"id": r[1], "project": r[2], "sessionId": r[3], "ts": format_ts(r[4]),
             "at": r[4], "role": r[5], "tool": r[7], "agent": r[8], "subagentName": r[10],
             "archived": bool(r[12]), "preview": make_preview(r[6], tokens), "host": r[13]}
            for r in rows[:SEARCH_CAP]]
    return {"query": query.strip(), "hits": hits, "capped": len(rows) > SEARCH_CAP,
            "hiddenArchivedSessions": hidden}
