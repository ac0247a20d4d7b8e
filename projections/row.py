"""`Row`, one row of history.db's `documents`, and `NULL`, the value that stores as SQL NULL.

No `from __future__ import annotations` here, on purpose: a NamedTuple's string annotations
are each compiled into a `typing.ForwardRef` when the class is made (23 compiles in every
+1 capture process, tests/test_startup_cost.py); evaluated annotations cost nothing.
"""

import math
from typing import NamedTuple

# A column value that binds as SQL NULL without a call: sqlite3 binds a float as it is, and
# SQLite stores a NaN bound to a statement as NULL (sqlite3VdbeMemSetDouble); a None goes
# through sqlite3's adapter registry (~1,200 instructions a value, ~10 a transcript row: 9 %
# of a rebuild's load, docs/history/performance-journal.md). tests/test_rows_null.py holds
# SQLite to it.
# It is `Row`'s default for every column that may be NULL; None binds the same.
NULL = math.nan
Nullable = str | float | None  # a text column's value: a str, or NULL (`NULL` or None)
NullableInt = int | float | None  # an integer column's value: an int, or NULL
# The `extra` of a transcript row whose record carries no time of its own (its `at` is its
# capture's): the session lists' "time unknown" (projections.transcript_rows, sessions).
UNDATED = '{"undated":true}'


class Row(NamedTuple):
    """One row of `documents`, its fields the columns in the table's order (`COLUMNS`).

    A column not given is NULL: its default is `NULL` (the NaN above, which binds as SQL
    NULL without sqlite3's adapter call; None stores the same row); `archived` defaults to
    0 and `text` to "". `source` is the source's id string (stored as its `doc_sources` id),
    `text` the document's text (stored as `body`, `projections.body`). A tuple, so sqlite3
    and psycopg bind it (or a slice of it) as it is: the rebuild's load makes one per
    transcript record and binds millions (`put_rows`)."""

    id: str
    kind: str
    agent: str
    at: int
    project: Nullable = NULL
    session: Nullable = NULL
    job: Nullable = NULL
    run: Nullable = NULL
    message: Nullable = NULL
    cursor: Nullable = NULL
    conversation: Nullable = NULL
    role: Nullable = NULL
    tool: Nullable = NULL
    subagent: Nullable = NULL
    subagent_name: Nullable = NULL
    title: Nullable = NULL
    archived: int = 0
    seq: NullableInt = NULL
    ord: NullableInt = NULL
    source: Nullable = NULL
    sender: Nullable = NULL
    extra: Nullable = NULL
    text: str = ""
