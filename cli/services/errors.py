"""The application's one error tree, and its one style: `agentlog COMMAND: what is wrong — how
to fix`.

Every error a front end shows is an `AgentlogError` (or is turned into one by `from_exception`,
the one place the library's errors — eventlog, projections, OSError — are translated). Each
class says once what it is on every front end:

| class | exit code | HTTP status | MCP |
|---|---|---|---|
| `BadInput` (an option, value or name the user gave is wrong) | 2 | 400 | tool error |
| `NotFound` (an id, topic or run names nothing) | 2 | 404 | tool error |
| `Failure` (the operation itself failed) | 1 | 500 | tool error |
| `Busy` (another process holds what is needed; try again shortly) | 1 | 503 | tool error |
| `Damaged` (history.db must be rebuilt from the log) | 1 | 503 | tool error |
| `Unavailable` (an optional part is missing or not set up) | 1 | 503 | tool error |

Click-free: the terminal's group (`cli.group`) prints `styled()` and exits with `exit_code`;
the HTTP API answers `{"error": message}` with `http_status`; the MCP server returns a tool
error with the message.
"""

from __future__ import annotations

DASH = " — "


def line(command: str, message: str, hint: str | None = None) -> str:
    """`agentlog COMMAND: message — hint` (the hint is left out when None or empty)."""
    message = " ".join(str(message).split()) or "failed"
    return f"{command}: {message}{DASH}{hint}" if hint else f"{command}: {message}"


class AgentlogError(Exception):
    """The base of every error the front ends show: a message, a hint, the command."""

    exit_code: int = 1
    http_status: int = 500

    def __init__(self, message: str, hint: str | None = None, *, command: str | None = None
                 ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.command = command

    def styled(self) -> str:
        return line(self.command or "agentlog", self.message, self.hint)

    def detail(self) -> str:
        """The message and its hint, without the command (HTTP and MCP answers)."""
        return f"{self.message}{DASH}{self.hint}" if self.hint else self.message


class BadInput(AgentlogError):
    """Something the user gave is wrong."""

    exit_code = 2
    http_status = 400


class NotFound(BadInput):
    """The id, topic, project or run names nothing."""

    http_status = 404


class Failure(AgentlogError):
    """The operation failed."""


class Busy(Failure):
    """Another process holds what this needs (the log's writer lock, a rebuild); try again."""

    http_status = 503


class Damaged(Failure):
    """history.db is not a readable database: it must be rebuilt from the log."""

    http_status = 503


class Unavailable(Failure):
    """An optional part (a provider, the team server, a library) is missing or not set up."""

    http_status = 503


def no_log(root: object) -> Failure:
    """The error of a command that needs the log when the home holds none."""
    return Failure(f"no event log in {root} (nothing captured yet)",
                   "run `agentlog capture` (or `agentlog import`) first")


def from_exception(exc: BaseException) -> AgentlogError:
    """Any exception as the one error a front end shows (the translation table of the
    library's errors; an unknown exception is an internal error naming its type)."""
    import errno

    if isinstance(exc, AgentlogError):
        return exc
    from eventlog.errors import CorruptRecord, EventLogError, LogFull, WriterBusy
    from projections.errors import NotFound as NoSuchThing
    from projections.errors import (
        ProjectionBusy,
        ProjectionDamaged,
        ProjectionError,
        QueryError,
        TeamError,
    )
    from readers.errors import ReaderError

    if isinstance(exc, CorruptRecord):  # DamagedPage too: LMDB refused a page of the log
        from eventlog.records import DAMAGE_HINT

        return Failure(f"{exc}: {DAMAGE_HINT}")
    if isinstance(exc, LogFull):
        return Failure(str(exc))
    if isinstance(exc, WriterBusy):
        return Busy(str(exc))
    if isinstance(exc, ProjectionBusy):
        return Busy(f"history.db is busy: {exc}")
    if isinstance(exc, QueryError):
        return BadInput(str(exc))
    if isinstance(exc, ProjectionDamaged):
        return Damaged(f"{exc}: `agentlog reindex` rebuilds it from the log")
    if isinstance(exc, NoSuchThing):
        return NotFound(str(exc))
    if isinstance(exc, TeamError):
        return Unavailable(str(exc))
    if isinstance(exc, (EventLogError, ProjectionError, ReaderError)):
        return Failure(str(exc))
    from projections.errors import disk_full

    if disk_full(exc) and not isinstance(exc, OSError):
        return Failure("disk full: history.db could not be written; free space and run it again")
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return Failure(f"disk full: {exc.strerror} ({exc.filename or 'a file in the home'})")
    if isinstance(exc, OSError):
        return Failure(f"{exc.strerror or type(exc).__name__}: {exc.filename or ''}"
                       .rstrip(": "))
    if isinstance(exc, RecursionError):
        return Failure("input nested too deeply")
    return Failure(f"internal error ({type(exc).__name__}); run with AGENTLOG_DEBUG=1 for the "
                   "traceback and please report it")
