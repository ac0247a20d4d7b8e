"""The project folders history.db names, for the capture of agents that write into projects.

Read on every `agentlog capture` (Aider's and Crush's roots include the folders captured
sessions ran in), so this module imports nothing but `sqlite3`: no SQL functions, no
schema module, no search machinery. A skip-scan over the project index: the cost grows
with the number of projects, not of documents. It only reads (the connection is
`query_only`; opened read-write without creating the file, like `projections.db.connect`,
so a hot journal left by a killed writer is rolled back rather than failing the read).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

# the documents' table: `document_rows` since schema 9 (`documents` is a view of it), a table
# named `documents` before (a file of an older schema is rebuilt by the next catch-up)
_TABLES = ("document_rows", "documents")
_SKIP_SCAN = ("WITH RECURSIVE p(v) AS (SELECT min(project) FROM {t}"
              " UNION ALL SELECT (SELECT min(project) FROM {t} WHERE project > p.v)"
              " FROM p WHERE p.v IS NOT NULL) SELECT v FROM p WHERE v IS NOT NULL LIMIT ?")


def project_dirs(db_path: Path, limit: int = 256, timeout: float = 10.0) -> list[str]:
    """Distinct `project` values of indexed documents (at most `limit`). [] when history.db
    cannot be read (absent, or being rebuilt: the next capture sees the folders)."""
    if not os.path.exists(db_path):
        return []
    uri = "file:" + str(Path(db_path).absolute()).replace("?", "%3f").replace("#", "%23")
    try:
        try:
            con = sqlite3.connect(uri + "?mode=rw", uri=True, timeout=timeout,
                                  isolation_level=None)
        except sqlite3.OperationalError:  # no write permission: a plain read-only open
            con = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=timeout,
                                  isolation_level=None)
        try:
            con.execute("PRAGMA query_only = 1")
            for table in _TABLES:
                try:
                    rows = con.execute(_SKIP_SCAN.format(t=table), (limit,)).fetchall()
                except sqlite3.OperationalError as exc:
                    if "no such table" in str(exc):
                        continue
                    raise
                return [str(r[0]) for r in rows]
            return []
        finally:
            con.close()
    except sqlite3.Error:
        return []
