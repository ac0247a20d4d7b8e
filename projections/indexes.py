"""The secondary indexes of `document_rows` (projections/db.py's schema), in one place.

Every history.db has them all. `SCRIPT` makes each one missing (`IF NOT EXISTS`: a rebuild's
load made some already, see below); `INDEX_SQL` makes one by name (`rows.need_index`);
`LOAD_INDEXES` are the ones a rebuild's load keeps up from its start.
"""

from __future__ import annotations

# The secondary indexes of `document_rows` (every file has them all; a 1-column partial one
# holds the rows where its column is not NULL). A rebuild's bulk load makes them after the load,
# beside the full-text indexer (`finish_bulk`), but each that an applier asks for first
# (`rows.need_index`, before a lookup by its columns) is made then and kept up from there on
# (docs/history/performance-journal.md, session 22); `IF NOT EXISTS`: the script skips those.
# A row's conversation and session are its thread's (`threads`, with indexes of its own): a
# lookup by either reads `threads`, then `documents_conv` by thread.
INDEX_SQL = {name: f"CREATE INDEX IF NOT EXISTS {name} ON document_rows({cols})"
             + (f" WHERE {cols} IS NOT NULL" if partial else "")
             for name, cols, partial in (
                 ("documents_run", "run", 1),
                 ("documents_subagent", "subagent", 1), ("documents_sender", "sender", 1),
                 ("documents_at", "at", 0), ("documents_conv", "thread, at, ord", 0),
                 ("documents_project", "project", 0), ("documents_job", "job", 1))}
SCRIPT = "".join(f"{sql};\n" for sql in INDEX_SQL.values())
# Up during a load all the same: partial indexes of columns transcript rows leave NULL (next to
# free to keep up; each made after the load would scan the whole table)
LOAD_INDEXES = ("documents_run", "documents_subagent", "documents_sender")
