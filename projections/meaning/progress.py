"""How far the embedding projection is behind history.db, with `sqlite3` alone (no numpy, no
model): what the capture loop asks when idle."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from projections.meaning.store import Store

__all__ = ["behind"]


def behind(db_path: Path, folder: Path) -> bool:
    """Whether history.db has documents past what the projection read."""
    if not db_path.is_file():
        return False
    try:
        con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=2)
        try:
            head = con.execute("SELECT max(rowid) FROM document_rows").fetchone()[0]
        finally:
            con.close()
        store = Store.reader(folder)
        done = store.done if store is not None else 0
        if store is not None:
            store.close()
    except sqlite3.Error:
        return False
    return bool(head) and int(head) > done
