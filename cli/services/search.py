"""The search of `agentlog search` (`cli.commands.search`): validate the query, catch
history.db up (an unreadable log only warns), query, and add the capture loop's coverage
fields. Imports stay lazy: this is on the search path.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home


def find(home: Home, text: str, options: dict[str, str], limit: str | int | None, *,
         include_archived: bool = True) -> dict[str, Any]:
    """The search of `agentlog search`: validate, catch history.db up, query.

    Raises `QueryError` for a bad parameter, before the log is touched when it is the query.
    """
    from cli.services.catchup import ensure_current, search_engine
    from projections.errors import QueryError
    from projections.query import search as run_search
    from projections.text import query_tokens

    filters: dict[str, Any] = dict(options)
    if not include_archived:  # archived sessions are searched unless excluded
        filters["include_archived"] = False
    if not query_tokens(text):  # validate before touching the log
        raise QueryError("query", f"{text!r} has no searchable word (search for words or "
                         "numbers; punctuation is ignored)")
    ensure_current_quietly(home, ensure_current)
    project = options.get("project")
    if project is not None:  # an unknown project is a mistake: name the known ones
        from projections.sessions import known_projects, unknown_project_hint

        known = known_projects(home.history_db)
        if project not in known:
            raise QueryError("project", f"unknown project {project!r}; "
                             + unknown_project_hint(known))
    result = run_search(home.history_db, text, filters or None, limit,
                        engine=search_engine(home))
    from cli.services.capture.loop import with_capture  # the capture fields of `coverage`

    return with_capture(home, result)


def ensure_current_quietly(home: Home, ensure: Any) -> None:
    """Catch up; an unreadable log must not hide what history.db holds (a notice only)."""
    try:
        ensure(home)
    except Exception as exc:
        from eventlog import EventLogError

        if not isinstance(exc, EventLogError):
            raise
        sys.stderr.write(f"agentlog: could not catch up history.db: {exc}\n")
