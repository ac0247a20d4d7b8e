"""How far the embedding projection is behind history.db, with `sqlite3` alone (no numpy, no
model): what the capture loop asks when idle."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["behind", "done"]


def _value(path: Path, sql: str) -> Any:
    """The first column of the first row of `sql` on the file read-only; None if absent,
    unreadable or empty."""
    if not path.is_file():
        return None
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            row = con.execute(sql).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return None if row is None else row[0]


def done(folder: Path) -> int:
    """The highest history.db rowid the projection has read (0: none)."""
    return int(_value(folder / "meaning.db", "SELECT v FROM meta WHERE k = 'done'") or 0)


def behind(db_path: Path, folder: Path) -> bool:
    """Whether history.db has documents past what the projection read."""
    head = _value(db_path, "SELECT max(rowid) FROM document_rows")
    return bool(head) and int(head) > done(folder)
