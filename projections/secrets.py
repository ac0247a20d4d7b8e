"""The secrets history.db noted while redacting (`projections.redact`), and what reads them.

Promises:
- `secrets` holds one row per (document, kind): the agent, session and time of the document
  and how many secrets of that kind its text held. Never a value: the values stay in the
  raw log alone (docs/secrets.md). Rows are written by the appliers in event order, in the
  transaction of the rows they describe, so catch-up and rebuild write the same ones;
- `redact_document` is the one hook of the documents the transcript parsers do not make
  (broker messages, decisions, run logs and metadata, imported turns): their text and title
  redacted, what was found noted;
- `found(db_path)` lists them per kind, agent and session for `agentlog secrets`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projections import redact

_NOTE = ("INSERT INTO secrets(doc, kind, agent, session, at, count) VALUES (?,?,?,?,?,?)"
         " ON CONFLICT(doc, kind) DO UPDATE SET agent = excluded.agent,"
         " session = excluded.session, at = excluded.at, count = excluded.count")


def note(con: sqlite3.Connection, doc: str, found: Mapping[str, int], agent: str | None,
         session: str | None, at: int | None) -> None:
    """Note the kinds found in document `doc` (a document written again is noted again)."""
    for kind, n in sorted(found.items()):
        con.execute(_NOTE, (doc, kind, agent, session, at, n))


def redact_document(con: sqlite3.Connection, doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """`doc` (a `rows.put_document` mapping) with its text and title redacted, what was
    found noted under its id."""
    found: dict[str, int] = {}
    out: dict[str, Any] | None = None
    for field in ("text", "title"):
        value = doc.get(field)
        if isinstance(value, str):
            clean, kinds = redact.redact(value)
            if kinds is not None:
                out = dict(doc) if out is None else out
                out[field] = clean
                for kind, n in kinds.items():
                    found[kind] = found.get(kind, 0) + n
    if out is None:
        return doc
    note(con, str(doc.get("id")), found, doc.get("agent"), doc.get("session"), doc.get("at"))
    return out


def found(db_path: Path) -> list[dict[str, Any]]:
    """What was redacted, per kind, agent and session: how many secrets in how many
    documents, first and last seen (ms), newest first. Never a value."""
    from projections import db

    con = db.connect(db_path, readonly=True)
    try:
        rows = con.execute(
            "SELECT kind, agent, session, sum(count), count(*), min(at), max(at)"
            " FROM secrets GROUP BY kind, agent, session"
            " ORDER BY max(at) DESC, kind, agent, session").fetchall()
    finally:
        con.close()
    return [{"kind": r[0], "agent": r[1], "session": r[2], "count": int(r[3]),
             "documents": int(r[4]), "first": r[5], "last": r[6]} for r in rows]
