"""How far the embedding projection is behind history.db, with `sqlite3` alone (no numpy, no
model): what the capture loop asks when idle, and what coverage says."""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["behind", "done"]


def done(folder: Path) -> int:
    """The highest history.db rowid the projection has read (0: none)."""
    path = folder / "meaning.db"
    if not path.is_file():
        return 0
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            row = con.execute("SELECT v FROM meta WHERE k = 'done'").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return 0
    return int(row[0]) if row else 0


def behind(db_path: Path, folder: Path) -> bool:
    """Whether history.db has documents past what the projection read."""
    if not db_path.is_file():
        return False
    try:
        con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=2)
        try:
            row = con.execute("SELECT max(rowid) FROM document_rows").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return bool(row and row[0] and int(row[0]) > done(folder))
