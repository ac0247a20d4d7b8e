"""Read-only, bounded row snapshots from opencode's SQLite database.

Promises:
- only the agent's tables in the registry (`Agent.tables`) are ever queried, in keyset
  order of their (`updated`, `key`) columns; opencode's credential tables
  (`account`, `control_account`, `credential`, `session_share`) never are;
- the database and its `-wal` are never written, and no file is created next to them: a
  WAL database with live `-wal` and `-shm` files is opened `mode=ro` (WAL-aware, it sees
  the newest rows) — like every SQLite reader it then takes its read lock in the existing
  `-shm` (fcntl locks, and a read mark in the wal-index's checkpoint-info block, bytes
  96..135: measured, tests/test_capture_sqlite.py), the one thing a capture touches; a
  private copy instead would cost a copy of the whole database at every poll of a live
  one; a database without a `-wal` is opened `immutable=1` (no lock or shm files are
  created); a `-wal` without a `-shm` is copied with the database into a private temporary
  folder and read there;
- a database another process holds locked is waited for `LOCK_WAIT_S` (0.25 s), then
  `RowsError.locked`: the capture says so once and leaves it for its next run;
- each call returns at most `limit` rows of one table, in (updated, key) order after
  a keyset position, so capture resumes exactly where it stopped;
- a row's data is the JSON object of its columns (undecodable text is replaced, blobs are
  given as {"$base64": …}).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote

from readers import registry
from readers.capture_files import db_signature
from readers.errors import ReaderError
from readers.registry import Table

TABLES = ("session", "message", "part", "project")  # opencode's (see the registry)
FORBIDDEN = frozenset({"account", "control_account", "credential", "session_share"})
PAGE = 100
SESSION_PAGE = 32  # session rows are discovery: 32 a tick (seed)


__all__ = ["TABLES", "Row", "RowsError", "db_signature", "fetch_page", "open_readonly"]


LOCK_WAIT_S = 0.25  # how long a read waits for another process's lock (it was 2 s a call)


class RowsError(ReaderError):
    """The database could not be read (locked, corrupt, being replaced); `locked` when
    another process holds it (SQLITE_BUSY / SQLITE_LOCKED): a later capture will read it."""

    @property
    def locked(self) -> bool:
        cause = self.__cause__
        code = getattr(cause, "sqlite_errorcode", None)
        return code in (5, 6) or "database is locked" in str(self)


@dataclass(frozen=True, slots=True)
class Row:
    table: str
    row_id: str
    time_updated: int
    data: bytes


def _is_wal(path: str) -> bool:
    with open(path, "rb") as f:
        header = f.read(20)
    return len(header) == 20 and header[18] == 2


@contextmanager
def open_readonly(path: str) -> Iterator[sqlite3.Connection]:
    tmp: str | None = None
    try:
        wal, shm = os.path.exists(path + "-wal"), os.path.exists(path + "-shm")
        target, flags = path, "mode=ro"
        if _is_wal(path):
            if not wal:
                flags = "immutable=1"
            elif not shm:
                tmp = tempfile.mkdtemp(prefix="agentlog-db-")
                target = os.path.join(tmp, "opencode.db")
                shutil.copyfile(path, target)
                shutil.copyfile(path + "-wal", target + "-wal")
        uri = f"file:{quote(os.path.abspath(target))}?{flags}"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT_S, check_same_thread=False)
        except sqlite3.Error as exc:
            raise RowsError(f"cannot open {path} read-only: {exc}") from exc
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        try:
            yield conn
        finally:
            conn.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _decltypes(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    return {r[1]: str(r[2] or "").upper() for r in conn.execute(f'PRAGMA table_info("{table}")')}


def _keyset(decl: dict[str, str], upd: str, key: str, after_id: str) -> tuple[str, object]:
    """The SQL expression of the `updated` column (an integer) and the typed bound of the key.

    An INTEGER `updated` column is compared as stored (its index is used); a text timestamp
    (Goose's `TIMESTAMP DEFAULT CURRENT_TIMESTAMP`) as its Unix seconds. An INTEGER key is
    bound as an integer: SQLite orders every integer before every text, so a text bound
    would skip rows that share an `updated` value with the last row read."""
    if "INT" in decl.get(upd, ""):
        expr = f'"{upd}"'
    else:
        expr = (f"(CASE WHEN typeof(\"{upd}\") IN ('integer', 'real') THEN CAST(\"{upd}\" AS"
                f" INTEGER) ELSE CAST(strftime('%s', \"{upd}\") AS INTEGER) END)")
    bound: object = after_id
    if "INT" in decl.get(key, ""):
        try:
            bound = int(after_id)
        except ValueError:
            bound = -(2**63)
    return expr, bound


def _jsonable(v: object) -> object:
    if isinstance(v, bytes | bytearray | memoryview):
        return {"$base64": base64.b64encode(bytes(v)).decode()}
    return v


def _spec(agent: str, table: str) -> Table:
    for t in registry.get(agent).tables:
        if t.name == table and table not in FORBIDDEN:
            return t
    raise RowsError(f"table {table!r} is not captured")


def fetch_page(
    conn: sqlite3.Connection, table: str, after_time: int, after_id: str, limit: int,
    agent: str = "opencode",
) -> list[Row]:
    """At most `limit` rows of `table` after the keyset position (updated, key) of the
    agent's registry `Table` (opencode: time_updated, id), compared as stored (so an
    index on them is used); a row whose `updated` is NULL is never read."""
    spec = _spec(agent, table)
    upd, key = spec.updated, spec.key
    try:
        decl = _decltypes(conn, table)
        cols = list(decl)
        if not cols or key not in cols or upd not in cols:
            return []
        expr, bound = _keyset(decl, upd, key, after_id)
        sel = ", ".join(f'"{c}"' for c in cols)
        rows = conn.execute(
            f'SELECT {sel}, {expr} FROM "{table}" WHERE {expr} > ? OR '
            f'({expr} = ? AND "{key}" > ?) ORDER BY {expr}, "{key}" LIMIT ?',
            (after_time, after_time, bound, limit),
        ).fetchall()
    except sqlite3.Error as exc:
        raise RowsError(f"cannot read table {table}: {exc}") from exc
    out: list[Row] = []
    ii = cols.index(key)
    for r in rows:
        obj = {c: _jsonable(v) for c, v in zip(cols, r[:-1], strict=True)}
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(Row(table, str(r[ii]), int(r[-1] or 0), data))
    return out


def lookback(agent: str, table: str) -> int:
    """Seconds of `updated` the registry says to read again at the start of a round."""
    for t in registry.get(agent).tables:
        if t.name == table:
            return t.lookback
    return 0


def tables_present(conn: sqlite3.Connection, agent: str = "opencode") -> list[str]:
    """The agent's registry tables that exist in this database, in registry order."""
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        raise RowsError(f"cannot list tables: {exc}") from exc
    return [t.name for t in registry.get(agent).tables
            if t.name in names and t.name not in FORBIDDEN]
