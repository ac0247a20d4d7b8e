"""Full-text indexing of a catch-up batch in one statement.

In an explicit transaction every statement that fires a trigger opens a savepoint, and
FTS5 flushes its pending terms to a new segment at each one: row-by-row triggers made one
segment per document, then crisis merges. So a batch marks the largest rowid (`defer_fts`),
the FTS triggers skip the rows above it (`fts_live`, registered by `db.register_functions`
on the connection's `fts_after` memo), and `index_deferred` indexes them with one
INSERT … SELECT before the commit: one segment per batch.
"""

from __future__ import annotations

import sqlite3

from projections import db


def defer_fts(con: sqlite3.Connection) -> None:
    """Inside a write transaction: rows inserted from now on (rowid above today's largest)
    are full-text indexed by `index_deferred`, in one statement, before the commit.

    Updates and deletes of those rows skip the triggers too (the final statement indexes
    what they hold then); older rows stay live. A connection without the `fts_after` memo
    (not made by `connect`) is left live."""
    after = getattr(con, "fts_after", None)
    if after is None:
        return
    after[0] = int(con.execute("SELECT coalesce(max(rowid), 0) FROM document_rows"
                               ).fetchone()[0])


def index_deferred(con: sqlite3.Connection) -> None:
    """Index the rows `defer_fts` held back (same transaction), then go live again."""
    after = getattr(con, "fts_after", None)
    if after is None or after[0] < 0:
        return
    low, after[0] = after[0], -1
    if db.has_fts(con):
        for sql in db.FTS_FILL:
            con.execute(sql, (low, 1 << 62))


def undefer_fts(con: sqlite3.Connection) -> None:
    """After a rollback: nothing is held back any more."""
    after = getattr(con, "fts_after", None)
    if after is not None:
        after[0] = -1
