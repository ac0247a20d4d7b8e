"""Export a project's (or one session's) turns as the envelope, streamed in constant memory.

Promises:
- the envelope is written incrementally: the header (`turnCount` from a count query), then
  one turn at a time from a cursor read in batches of `FETCH` rows, so memory does not grow
  with the number of turns (`bench/export.py` measures peak RSS against size);
- count and rows come from one read transaction, so `turnCount` always equals the number of
  turns written, even while capture appends; the transaction lasts as long as the export,
  so front ends that stream to slow clients spool to a temporary file first;
- turns are ordered by session id, then oldest first; `turnIdx` numbers each session's turns
  from 0 in that order; archived turns are included only when asked for;
- every turn written is a valid envelope turn (see `projections.envelope`), so an export
  always imports.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from projections.envelope import SCHEMA_VERSION, TURN_COLUMNS, iter_json_chunks, turn_of_row

FETCH = 500

_SELECT = (
    f"SELECT {', '.join(TURN_COLUMNS)}"
    " FROM documents WHERE kind = 'transcript' AND project = ? AND session IS NOT NULL"
)


@dataclass(frozen=True, slots=True)
class ExportResult:
    project: str
    session: str | None
    turns: int
    bytes: int
    sha256: str
    exported_at: str


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _where(session: str | None, include_archived: bool) -> tuple[str, list[Any]]:
    sql, params = "", []
    if session is not None:
        sql += " AND session = ?"
        params.append(session)
    if not include_archived:
        sql += " AND archived = 0"
    return sql, params


def export_chunks(
    con: sqlite3.Connection,
    project: str,
    *,
    session: str | None = None,
    include_archived: bool = False,
    exported_at: str | None = None,
    stats: dict[str, int] | None = None,
) -> Iterator[bytes]:
    """The envelope's bytes, in pieces of about 256 KiB (one read transaction throughout).

    `stats`, when given, receives "turns" once the last piece has been produced.
    """
    extra, params = _where(session, include_archived)
    con.execute("BEGIN")
    try:
        (count,) = con.execute(
            "SELECT count(*) FROM documents WHERE kind = 'transcript' AND project = ?"
            f" AND session IS NOT NULL{extra}",
            [project, *params],
        ).fetchone()
        header = {
            "schemaVersion": SCHEMA_VERSION,
            "projectId": project,
            "exportedAt": exported_at or now_iso(),
            "turnCount": count,
        }
        cur = con.execute(f"{_SELECT}{extra} ORDER BY session, at, ord, rowid",
                          [project, *params])
        written = 0

        def turns() -> Iterator[dict[str, Any]]:
            nonlocal written
            last, idx = None, 0
            while True:
                rows = cur.fetchmany(FETCH)
                if not rows:
                    return
                for row in rows:
                    if written >= count:
                        return
                    idx = idx + 1 if row[0] == last else 0
                    last = row[0]
                    written += 1
                    yield turn_of_row(row, idx)

        yield from iter_json_chunks(header, turns())
        if written != count:  # impossible inside one transaction; never emit a lie silently
            raise RuntimeError(f"export wrote {written} turns but counted {count}")
        if stats is not None:
            stats["turns"] = written
    finally:
        con.execute("COMMIT")


def write_export(
    con: sqlite3.Connection,
    project: str,
    out: IO[bytes],
    *,
    session: str | None = None,
    include_archived: bool = False,
    exported_at: str | None = None,
) -> ExportResult:
    """Write the envelope to `out`; returns counts and the SHA-256 of the bytes written."""
    h = hashlib.sha256()
    size = 0
    stats: dict[str, int] = {}
    at = exported_at or now_iso()
    for piece in export_chunks(con, project, session=session,
                               include_archived=include_archived, exported_at=at, stats=stats):
        out.write(piece)
        h.update(piece)
        size += len(piece)
    return ExportResult(project, session, stats.get("turns", 0), size, h.hexdigest(), at)
