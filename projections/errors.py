"""Errors of the projections package. Only `cli` turns them into exit codes.

`QueryError` always names the offending parameter (`str()` starts with it), so every front
end (CLI, MCP, HTTP) can report bad input precisely without parsing messages.
"""

from __future__ import annotations

import sqlite3


class ProjectionError(Exception):
    """Base of every error raised by `projections`."""


class QueryError(ProjectionError):
    """A query parameter is invalid; `param` names it (e.g. "query", "limit", "since")."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param
        self.message = message


class BadId(QueryError):
    """A document or conversation id is malformed (as opposed to unknown)."""

    def __init__(self, value: str, message: str = "malformed id", param: str = "id") -> None:
        shown = value if len(value) <= 80 else value[:77] + "..."
        super().__init__(param, f"{message}: {shown!r}")
        self.value = value


class NotFound(ProjectionError):
    """The named conversation (or document) is not in history.db."""

    def __init__(self, what: str, ident: str) -> None:
        super().__init__(f"{what} not found: {ident!r}")
        self.what = what
        self.ident = ident


class ProjectionBusy(ProjectionError):
    """Another process is rebuilding history.db and did not finish in time."""


class Interrupted(ProjectionError):
    """The caller stopped its own read (`projections.cancel.Cancel`): a newer search
    superseded it. Not a failure: there is nothing to show for it."""


class ProjectionDamaged(ProjectionError, sqlite3.DatabaseError):
    """history.db is not a readable SQLite database (truncated, overwritten, corrupt). It is
    derived data: rebuilding it from the log (`agentlog reindex`) is always the cure. (Also a
    `sqlite3.DatabaseError`, so code that handles that keeps doing so.)"""


# SQLite's failures as `projections` names them, so front ends need not import sqlite3
DatabaseError = sqlite3.DatabaseError


def busy(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's "database is locked/busy" (another writer holds the file)."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc))


# SQLite's "no space left": a file could not grow, or a WAL file's `-shm` could not be made
# or grown (SQLITE_IOERR_SHMSIZE, "disk I/O error": opening a WAL file needs room for it)
_FULL = (sqlite3.SQLITE_FULL, getattr(sqlite3, "SQLITE_IOERR_SHMSIZE", 4874))


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's or the OS's "no space left" (history.db could not grow)."""
    import errno

    if isinstance(exc, sqlite3.OperationalError):
        return getattr(exc, "sqlite_errorcode", None) in _FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


class TeamError(ProjectionError):
    """Base of the team engine's errors (`projections.pg`); messages never hold a password."""
