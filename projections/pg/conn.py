"""Connections to the team server, and the one way a connection string is shown.

Promises: a connection attempt gives up after `CONNECT_TIMEOUT` seconds (a server that is
down never stalls a caller for long); `redact` removes the password from a URL or keyword
conninfo, and every message this package raises about a server goes through it, so
passwords never reach logs, `audit` output or error text. psycopg is an optional extra
(`agentlog[team]`): `driver()` is the one way this package loads it, and its absence is a
`DriverMissing` that says how to install it, never a bare ImportError.
"""

from __future__ import annotations

import re
from typing import Any

from projections.errors import TeamError as TeamError  # its home; re-exported for the engine

CONNECT_TIMEOUT = 5
APP_NAME = "agentlog"

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
    return psycopg


def redact(text: str) -> str:
    """`text` with every password of a connection string replaced by `***`."""
    return _KW_PW.sub(r"\1***", _URL_PW.sub(r"\1***@", str(text)))


def connect(url: str, *, autocommit: bool = False, timeout: int = CONNECT_TIMEOUT) -> Any:
    """A psycopg connection; `ServerUnavailable` (redacted) when it cannot be opened."""
    psycopg = driver()

    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=timeout,
                               application_name=APP_NAME)
    except psycopg.Error as exc:
        raise ServerUnavailable(redact(f"cannot connect to {url}: {exc}")) from None
    except Exception as exc:  # a malformed conninfo string
        raise ServerUnavailable(redact(f"bad connection string {url}: {exc}")) from None


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
