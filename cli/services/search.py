"""The search of `agentlog search` (`cli.commands.search`): validate the query, catch
history.db up (an unreadable log only warns), query, and add the capture loop's coverage
fields. Imports stay lazy: this is on the search path.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home
    from projections.cancel import Cancel


def find(home: Home, text: str, options: dict[str, str], limit: str | int | None, *,
         include_archived: bool = True, catch_up: bool = True,
         cancel: Cancel | None = None, latest: bool = False) -> dict[str, Any]:
    """The search of `agentlog search`: validate, catch history.db up, query.

    Raises `QueryError` for a bad parameter, before the log is touched when it is the query.
    `catch_up=False` queries history.db as it is (`agentlog browse` catches up once, not at
    every keystroke). With `cancel` (`projections.cancel.Cancel`) another thread may stop
    the query (not the catch-up): it raises `projections.errors.Interrupted` then (`agentlog
    browse` stops the search a newer keystroke superseded). `latest`: the latest matches,
    unranked (`projections.query.search`'s; browse's first page while every match is ranked).
    """
    from cli.services.catchup import ensure_current, search_engine
    from cli.services.dates import plain_dates
    from projections.errors import QueryError
    from projections.query import search as run_search

    options = plain_dates(options)  # `--since 2026-01-01`: midnight local time
    filters: dict[str, Any] = dict(options)
    if not include_archived:  # archived sessions are searched unless excluded
        filters["include_archived"] = False
    require_words(text)  # validate before touching the log
    if catch_up:
        ensure_current_quietly(home, ensure_current)
    project = options.get("project")
    if project is not None:  # an unknown project is a mistake: name the known ones
        from projections.project_key import project_key
        from projections.sessions import known_projects, unknown_project_hint

        known = known_projects(home.history_db)
        if project_key(str(project).rstrip("/") or "/") not in known:
            raise QueryError("project", f"unknown project {project!r}; "
                             + unknown_project_hint(known))
    result = run_search(home.history_db, text, filters or None, limit,
                        engine=search_engine(home), cancel=cancel,
                        latest=latest)
    from cli.services.capture.status import with_capture  # the capture fields of `coverage`

    return with_capture(home, result)


def keep_lists(home: Home) -> bool:
    """One bounded step (~0.2 s) of making the ranking lists history.db still wants
    (`projections.catchup.make_some_lists`, the capture loop's idle step): a rebuild makes
    only the most common words' lists, and without them a query of a common word ranks
    every match. Whether more may be wanted (False: none, or no history.db)."""
    from projections.catchup import make_some_lists

    return make_some_lists(home.history_db)


def require_words(text: object) -> None:
    """A query with no searchable word is bad input on every front end (the terminal, MCP,
    HTTP): the library answers it with no hits, which would read as "never said"."""
    from projections.errors import QueryError
    from projections.text import query_tokens

    if not query_tokens(text):
        raise QueryError("query", f"{text!r} has no searchable word (search for words or "
                         "numbers; punctuation is ignored)")


def ensure_current_quietly(home: Home, ensure: Any) -> None:
    """Catch up; an unreadable log must not hide what history.db holds (a notice only)."""
    try:
        ensure(home)
    except Exception as exc:
        from eventlog import EventLogError

        if not isinstance(exc, EventLogError):
            raise
        sys.stderr.write(f"agentlog: could not catch up history.db: {exc}\n")
