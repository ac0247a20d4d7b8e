"""`agentlog [--home DIR] search ... --json` without click (start-up time is the product).

Importing click costs more than the whole search (bench/startup.py measures it). This module
parses exactly the shapes the click command `cli.cmd_search.search` accepts for a JSON
search — the option names below (a test holds them equal to the click command's) as
`--name VALUE` or `--name=VALUE`, the flags, query words anywhere, `--` — and runs the same
`find` as that command. Anything else (`--help`, `--version`, an unknown or short option,
`--answer`, `--postgres`/`--host` (the team server), a missing value, a bad value that `find`
rejects, human output) returns False before any output, and `cli.main.main` hands the
arguments to click, which parses and reports as usual. No click, no event types, no apply
machinery are imported on this path while history.db is current.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.config import Home

# the click command's value options and flags (dest names with "_" for "-")
SEARCH_VALUES = ("project", "session", "job", "agent", "kind", "since", "until", "limit")
SEARCH_FLAGS = ("include-archived", "exclude-archived", "json")  # the last archive flag wins


def parse(args: list[str]) -> tuple[str | None, dict[str, str], set[str], list[str]] | None:
    """(home option, value options, flags, query words) of a JSON search, else None."""
    home: str | None = None
    i = 0
    while i < len(args) and args[i] != "search":
        arg = args[i]
        if arg == "--home" and i + 1 < len(args):
            home, i = args[i + 1], i + 2
        elif arg.startswith("--home="):
            home, i = arg[len("--home="):], i + 1
        else:
            return None
    if i >= len(args):
        return None
    values: dict[str, str] = {}
    flags: set[str] = set()
    words: list[str] = []
    rest = args[i + 1:]
    j = 0
    while j < len(rest):
        arg = rest[j]
        j += 1
        if arg == "--":
            words += rest[j:]
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        name, eq, value = arg[2:].partition("=")
        if not arg.startswith("--"):
            return None
        if name in SEARCH_FLAGS and not eq:
            flags.add(name)
            if name.endswith("-archived"):
                flags.discard("exclude-archived" if name == "include-archived"
                              else "include-archived")
        elif name in SEARCH_VALUES:
            if not eq:
                if j >= len(rest):
                    return None
                value, j = rest[j], j + 1
            values[name] = value  # click keeps the last of a repeated option
        else:
            return None
    if "json" not in flags or not words:
        return None
    return home, values, flags, words


def search_json(args: list[str]) -> bool:
    """Answer a JSON search without click; False (nothing printed) when click must do it."""
    parsed = parse(args)
    if parsed is None:
        return False
    home_opt, values, flags, words = parsed
    from cli.config import resolve_home
    from projections.errors import QueryError

    try:
        home = resolve_home(home_opt)
    except Exception:
        return False
    if not home.root.is_dir():
        return False  # click reports a home that does not exist
    home.command = "agentlog search"
    opts = {k: v for k, v in values.items() if k != "limit"}
    try:
        result = find(home, " ".join(words), opts, values.get("limit"),
                      include_archived="exclude-archived" not in flags)
    except QueryError:
        return False  # click reports the parameter (validation comes before any output)
    except Exception as exc:
        if type(exc).__module__.split(".")[0] == "click":  # e.g. a broken config.json
            return False
        raise
    from cli.output import emit_json

    emit_json(result)
    sys.stdout.flush()
    return True


def find(home: Home, text: str, options: dict[str, str], limit: str | int | None, *,
         include_archived: bool = True) -> dict[str, Any]:
    """The search of `agentlog search`: validate, catch history.db up, query.

    Raises `QueryError` for a bad parameter, before the log is touched when it is the query.
    """
    from cli.catchup import ensure_current, search_engine
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
    from cli.background import with_capture  # the capture fields of `coverage`

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
