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
         include_archived: bool = True, catch_up: bool = True, prefix: bool = False,
         group: str | None = None, mode: str | None = None,
         cancel: Cancel | None = None, latest: bool = False) -> dict[str, Any]:
    """The search of `agentlog search`: validate, catch history.db up, query. `prefix`:
    `zebra*` matches the words starting with "zebra" (the terminal's); `group`:
    "conversation" for one hit per conversation; `mode`: words, meaning or hybrid (default:
    `search_mode`); `cancel` and `latest`: `agentlog browse`'s (projections.query.search).

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
    mode = mode or search_mode(home)
    if mode != "words":
        keep_serving(home)
    result = run_search(home.history_db, text, filters or None, limit,
                        engine=search_engine(home), prefix=prefix, group=group, mode=mode,
                        meaning_model=meaning_spec(home) if mode != "words" else None,
                        cancel=cancel, latest=latest)
    from cli.services.capture.status import with_capture  # the capture fields of `coverage`

    return with_capture(home, result)


def search_mode(home: Home) -> str:
    """The terminal's default mode: config.json `search.mode`, else hybrid."""
    value = (home.config.get("search") or {}).get("mode", "hybrid")
    return str(value)


def meaning_spec(home: Home) -> dict[str, Any] | None:
    """config.json `meaning.model`: a local ONNX model for search by meaning
    (`projections.meaning.model`), or None for the default; a wrong one is a failure that
    names the file."""
    conf = home.config.get("meaning") or {}
    spec = conf.get("model") if isinstance(conf, dict) else None
    from projections.meaning.model import spec_problem

    problem = spec_problem(spec)
    if problem is not None:
        from cli.services.errors import Failure

        raise Failure(f"{home.config_path}: meaning.model: {problem}",
                      "fix it, or remove it for the default model (docs/search.md)")
    return dict(spec) if spec is not None else None


def keep_serving(home: Home) -> bool:
    """Start the query server of search by meaning (`agentlog embed --serve`, detached; it
    exits after 15 idle minutes) when the home has embeddings and none answers: this search
    loads the model itself, the next ones ask the server. Whether one was started."""
    folder = home.meaning_dir
    if not (folder / "meaning.db").is_file():
        return False  # nothing embedded: nothing to serve (and nothing more imported)
    from cli.services.capture.embedder import allowed, spawn
    from projections.meaning.client import serving

    if not allowed():  # no background process (the tests)
        return False

    if serving(folder):
        return False
    spawn(home, "--serve")
    return True


def embed(home: Home, *, seconds: float | None = None, again: bool = False,
          progress: Any = None) -> dict[str, Any]:
    """`agentlog embed`: history.db caught up, then the embedding projection
    (`projections.meaning.step`); what it did."""
    import time

    from cli.services.catchup import ensure_current
    from projections import meaning

    ensure_current_quietly(home, ensure_current)
    started = time.monotonic()
    if again:
        meaning.drop(home.meaning_dir)
    spec = meaning_spec(home)
    step = meaning.step(home.history_db, home.meaning_dir, spec=spec, budget_s=seconds,
                        progress=progress, threads=None)
    return {"busy": step.busy, "chunks": step.chunks, "documents": step.documents,
            "total": step.total, "pendingDocuments": step.pending, "reset": step.reset,
            "seconds": round(time.monotonic() - started, 1), "model": meaning.model_id(spec),
            "folder": str(home.meaning_dir)}


def many_searches() -> None:
    """This process will search many times (`agentlog browse`): pay the ranking's array
    import once now, so that an AND of common words scores its deep lists at once
    (`projections.rank.use_arrays`) instead of walking them one entry at a time."""
    from projections import rank

    rank.use_arrays()


_arrays_asked: list[bool] = []  # many_searches_soon was called in this process


def many_searches_soon(home: Home | None = None) -> None:
    """A server will search many times (`agentlog mcp` once a client listed its tools or
    searched, `serve` after its first search): `many_searches` on a thread of its own, once
    a process, after that answer rather than at start (the start-up stays as it was; a
    search made while numpy imports walks, and shares the interpreter with the import).
    Nothing for a `home` that searches the team store (its ranking is PostgreSQL's)."""
    if _arrays_asked or (home is not None and home.postgres is not None):
        return
    _arrays_asked.append(True)
    import threading

    threading.Thread(target=many_searches, name="agentlog-arrays", daemon=True).start()


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
