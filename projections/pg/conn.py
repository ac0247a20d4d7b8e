"""Connections to the team server, and the one way a connection string is shown.

Promises:
- a connection attempt gives up after `CONNECT_TIMEOUT` seconds (a server that is down
  never stalls a caller for long);
- every connection has server-side timeouts (statement, lock, idle in transaction) and TCP
  keepalives by default (`DEFAULTS`, `timeouts_for`); a DBA overrides any of them in the
  URL (its `options` come after ours, its keepalive keywords replace ours);
- every statement, commit and COPY has a client-side deadline too (`Deadline`): a server
  that stops answering (frozen, a half-open connection) has its socket shut down when the
  deadline passes, so the caller gets `ServerUnavailable` within seconds, not when the
  operating system gives up;
- plaintext to a server that is not on this machine is refused unless the URL says
  `sslmode=disable` (or another sslmode) itself: without one, `sslmode=require` is used;
- `redact` removes the password from a URL or keyword conninfo, and every message this
  package raises about a server goes through it, so passwords never reach logs, `audit`
  output or error text; `explain` turns a psycopg error into one line that says what to do;
- psycopg is an optional extra (`agentlog[team]`): `driver()` is the one way this package
  loads it, and its absence is a `DriverMissing` that says how to install it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from projections.errors import TeamError as TeamError  # its home; re-exported for the engine

CONNECT_TIMEOUT = 5
APP_NAME = "agentlog"
# (statement timeout, client deadline) in seconds: a search answers or fails fast; a sync's
# batches and the projector's may take longer
QUERY_TIMEOUTS = (8, 10)
WRITE_TIMEOUTS = (50, 60)
DEFAULTS = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5",
            "keepalives_count": "3"}
LOCAL_HOSTS = frozenset(("localhost", "127.0.0.1", "::1", ""))

_URL_PW = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@")
_KW_PW = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


class ServerUnavailable(TeamError):
    """The server could not be reached (down, refused, timed out, wrong credentials)."""


class DriverMissing(TeamError):
    """psycopg, the `team` extra, is not installed (or cannot load its libpq)."""


INSTALL = "install it with pip install 'agentlog[team]'"


def driver() -> Any:
    """The psycopg module; `DriverMissing` when the `team` extra is not installed."""
    try:
        import psycopg
    except ImportError as exc:
        why = "" if exc.name == "psycopg" else f" ({exc})"  # installed, but libpq is missing
        raise DriverMissing(f"the team server needs psycopg{why} — {INSTALL}") from None
    import logging

    # psycopg warns on stderr about what it ignored while closing after an error ("pipeline
    # aborted"); the error itself reaches the user once, through `explain`
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    return psycopg


def redact(text: str) -> str:
    """`text` with every password of a connection string replaced by `***`."""
    return _KW_PW.sub(r"\1***", _URL_PW.sub(r"\1***@", str(text)))


def connect(url: str, *, autocommit: bool = False, timeout: int = CONNECT_TIMEOUT,
            timeouts: tuple[int, int] = WRITE_TIMEOUTS) -> Any:
    """A psycopg connection with the module's timeouts, keepalives and TLS rule (see the
    module promises); `ServerUnavailable` (redacted) when it cannot be opened. `timeouts`:
    (server statement timeout, client deadline) in seconds."""
    psycopg = driver()

    try:
        extra = _settings(url, timeouts[0])
    except Exception as exc:  # a malformed conninfo string
        raise ServerUnavailable(redact(f"bad connection string {url}: {exc}")) from None
    try:
        con = _connection_class().connect(url, autocommit=autocommit, connect_timeout=timeout,
                                          application_name=APP_NAME,
                                          cursor_factory=_cursor_class(), **extra)
    except psycopg.Error as exc:
        raise ServerUnavailable(redact(f"cannot connect to {url}: {explain(exc)}")) from None
    except Exception as exc:  # a malformed conninfo string
        raise ServerUnavailable(redact(f"bad connection string {url}: {exc}")) from None
    con.agentlog_deadline = float(timeouts[1])
    return con


def _settings(url: str, statement_s: int) -> dict[str, str]:
    """What `connect` adds to `url`: keepalives and sslmode unless the URL sets them, and
    the timeouts before the URL's own `options` (so a DBA's win)."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    out = {k: v for k, v in DEFAULTS.items() if k not in given}
    ours = (f"-c statement_timeout={statement_s * 1000} -c lock_timeout=5000"
            " -c idle_in_transaction_session_timeout=60000")
    out["options"] = f"{ours} {given['options']}" if given.get("options") else ours
    if "sslmode" not in given and not is_local(url):
        out["sslmode"] = "require"
    return out


def is_local(url: str) -> bool:
    """Whether every host of `url` is this machine (loopback or a Unix socket folder)."""
    from psycopg.conninfo import conninfo_to_dict

    hosts = str(conninfo_to_dict(url).get("host") or "").split(",")
    return all(h in LOCAL_HOSTS or h.startswith("/") for h in hosts)


class Deadline:
    """Shut `con`'s socket down if the block inside takes longer than its deadline (the
    waiting psycopg call then fails with OperationalError, which callers report as the
    server not answering). Reentrant: only the outermost block sets the timer."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.timer: Any = None

    def __enter__(self) -> Deadline:
        import threading

        seconds = getattr(self.con, "agentlog_deadline", None)
        if seconds and not getattr(self.con, "agentlog_watched", False):
            self.con.agentlog_watched = True
            self.timer = threading.Timer(seconds, self._expire)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.con.agentlog_watched = False

    def _expire(self) -> None:
        import os
        import socket

        self.con.agentlog_expired = True
        try:
            with socket.socket(fileno=os.dup(self.con.pgconn.socket)) as s:
                s.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError, Exception):
            pass


@contextlib.contextmanager
def writing(url: str, during: str = "") -> Iterator[Any]:
    """A write connection (`WRITE_TIMEOUTS`) whose psycopg errors leave as one line: a lost
    or silent server is `ServerUnavailable` ("the next sync resumes"), anything the server
    refused is `TeamError`. `during`: what was going on, for the message ("while
    projecting"). Closed at the end."""
    psycopg = driver()
    where = f" {during}" if during else ""
    con = connect(url)
    try:
        yield con
    except psycopg.OperationalError as exc:
        if expired(con):
            raise ServerUnavailable(f"the team server did not answer within "
                                    f"{WRITE_TIMEOUTS[1]} s{where}: the next sync resumes"
                                    ) from None
        raise ServerUnavailable(redact(f"team server{where}: {explain(exc)} (the next sync "
                                       "resumes)")) from None
    except psycopg.Error as exc:  # refused by a policy or a privilege, bad schema
        raise TeamError(redact(f"team server refused{where}: {explain(exc)}")) from None
    finally:
        con.close()


def expired(con: Any) -> bool:
    """Whether `con` was cut off by its deadline."""
    return bool(getattr(con, "agentlog_expired", False))


_classes: dict[str, Any] = {}


def _connection_class() -> Any:
    if "con" not in _classes:
        import psycopg

        class _Connection(psycopg.Connection[Any]):
            agentlog_deadline: float | None = None
            agentlog_watched = False
            agentlog_expired = False

            def commit(self) -> None:
                with Deadline(self):
                    super().commit()

            def rollback(self) -> None:
                with Deadline(self):
                    super().rollback()

        _classes["con"] = _Connection
    return _classes["con"]


def _cursor_class() -> Any:
    if "cur" not in _classes:
        import contextlib

        import psycopg

        class _Cursor(psycopg.Cursor[Any]):
            def execute(self, *args: Any, **kwargs: Any) -> Any:
                with Deadline(self.connection):
                    return super().execute(*args, **kwargs)

            def executemany(self, *args: Any, **kwargs: Any) -> Any:
                with Deadline(self.connection):
                    return super().executemany(*args, **kwargs)

            @contextlib.contextmanager
            def copy(self, *args: Any, **kwargs: Any) -> Any:
                with Deadline(self.connection), super().copy(*args, **kwargs) as cp:
                    yield cp

        _classes["cur"] = _Cursor
    return _classes["cur"]


def explain(exc: BaseException) -> str:
    """One line for a psycopg error, saying what to do where there is something to do."""
    name = type(exc).__name__
    first = (str(exc).strip().splitlines() or [name])[0]
    hints = {
        "UndefinedTable": "the server has no agentlog schema yet: run `agentlog team init "
                          "URL` as the database's owner (or `agentlog sync` as a writer)",
        "InvalidSchemaName": "the server has no agentlog schema yet: run `agentlog team init "
                             "URL` as the database's owner",
        "InsufficientPrivilege": "this role may not do that: check the URL's user (writers "
                                 "sync, readers search; `agentlog team init` needs the "
                                 "database owner with CREATEROLE, docs/team.md)",
        "DiskFull": "the team server's disk is full: free space there, then sync again",
        "QueryCanceled": "the team server took too long (a statement or lock timeout): "
                         "try again; a DBA can raise it with options in the URL",
        "LockNotAvailable": "another session holds a lock the team server needed: try again",
        "AdminShutdown": "the team server shut down: sync again when it is back",
    }
    hint = hints.get(name)
    return f"{first} — {hint}" if hint else f"{first} ({name})"


def describe(url: str) -> str:
    """A short, password-free name of the server: user@host:port/db."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        d = conninfo_to_dict(url)
    except Exception:
        return redact(url)
    host = str(d.get("host") or "localhost")
    port = str(d.get("port") or "5432")
    user = str(d.get("user") or "")
    db = str(d.get("dbname") or user)
    return f"{user + '@' if user else ''}{host}:{port}/{db}"
