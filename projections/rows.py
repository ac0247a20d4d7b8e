"""The rows of `documents`: the column order, the one insert/update path, shared helpers.

Below every applier (`projections.apply` for broker events, `projections.transcripts`,
`projections.runlogs`, `projections.archive`): they all import from here and nothing here
imports them, so every import arrow runs one way. The query side imports only the
constants (`RUN_CHUNK_ORD`), so the search path never loads the apply machinery.
Promises: `put_document`/`put_row` write one row by `id` with the policies documented
below; `text` is bounded to `MAX_DOC_CHARS`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from readers import registry

if TYPE_CHECKING:
    from eventlog.records import StoredEvent

Applier = Callable[[sqlite3.Connection, "StoredEvent"], None]

MAX_DOC_CHARS = 100_000
ORD_SPAN = 65_536
RUN_CHUNK_ORD = 2  # run conversations: metadata event 0, metadata file 1, log chunks 2 + offset
MESSAGE_KINDS = ("message", "approval", "progress", "report")
AGENTS = registry.search_agents()  # readers/registry.py, then "other"

_COLUMNS = (
    "id", "kind", "agent", "at", "project", "session", "job", "run", "message", "cursor",
    "conversation", "role", "tool", "subagent", "subagent_name", "title", "archived",
    "seq", "ord", "source", "sender", "extra", "text",
)
_INSERT = (
    "INSERT OR IGNORE INTO "
    f"documents({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
)
_KEEP_ON_UPDATE = ("id", "ord", "archived")
_UPDATE_IDX = [i for i, c in enumerate(_COLUMNS) if c not in _KEEP_ON_UPDATE]
_UPDATE = (
    "UPDATE documents SET "
    f"{', '.join(_COLUMNS[i] + ' = ?' for i in _UPDATE_IDX)} WHERE rowid = ?"
)
_SOURCE = _COLUMNS.index("source")
_ARCHIVED = _COLUMNS.index("archived")


def agent_family(name: object) -> str:
    """A registered agent name (readers/registry.py) or "other", from an agent or client
    name ("claude-code" -> "claude"); memoized (asked once per record of a rebuild)."""
    if isinstance(name, str):
        fam = _FAMILIES.get(name)
        if fam is None:
            fam = registry.family(name)
            if len(_FAMILIES) < 1024:
                _FAMILIES[name] = fam
        return fam
    return registry.family(name)


_FAMILIES: dict[str, str] = {}


def put_document(
    con: sqlite3.Connection, doc: Mapping[str, Any], *, policy: str = "replace"
) -> bool:
    """Insert or update one document by `id`; returns True when a row was written.

    `policy`: "replace" overwrites an existing row (its rowid and `ord` are kept, so its
    place in its conversation is stable, and so is its `archived` flag unless `doc` gives
    one); "keep" leaves an existing row alone; "same_source" replaces only a row that came
    from the same source. `text` is bounded to MAX_DOC_CHARS. Other modules (archive,
    import) use this to write documents.
    """
    row = [doc.get(c) for c in _COLUMNS]
    row[_ARCHIVED] = int(row[_ARCHIVED] or 0)
    return put_row(con, row, policy=policy, set_archived="archived" in doc)


def put_row(
    con: sqlite3.Connection, row: list[Any], *, policy: str = "replace",
    set_archived: bool = False,
) -> bool:
    """`put_document` for a row already in `_COLUMNS` order (the appliers' fast path)."""
    text = row[-1]
    if not isinstance(text, str):
        row[-1] = text = "" if text is None else str(text)
    if len(text) > MAX_DOC_CHARS:
        row[-1] = text[:MAX_DOC_CHARS]
    if con.execute(_INSERT, row).rowcount == 1:
        return True  # a new id (the common case: one statement)
    existing = con.execute("SELECT rowid, source FROM documents WHERE id = ?",
                           (row[0],)).fetchone()
    if policy == "keep" or (policy == "same_source" and existing[1] != row[_SOURCE]):
        return False
    con.execute(_UPDATE, [*(row[i] for i in _UPDATE_IDX), existing[0]])
    if set_archived:
        con.execute("UPDATE documents SET archived = ? WHERE rowid = ?",
                    (row[_ARCHIVED], existing[0]))
    return True


def run_basename(run: str) -> str:
    base = run.rstrip("/").rsplit("/", 1)[-1]
    return base if base.endswith(".log") else base + ".log"
