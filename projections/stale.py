"""A known drift between history.db and the log, remembered beside the file.

`audit` writes the note when it finds the projection drifted; search, serve and MCP report
it (`stale: true`) until a rebuild replaces the file and clears it. At most 500 characters,
never transcript text (the caller passes a description of the drift).
"""

from __future__ import annotations

from pathlib import Path


def _stale_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".stale")


def stale_note(db_path: Path) -> str | None:
    """What a known drift between `db_path` and the log is (None when none is known)."""
    try:
        return _stale_path(db_path).read_text(encoding="utf-8", errors="replace")[:500]
    except OSError:
        return None


def mark_stale(db_path: Path, detail: str) -> None:
    """Remember that `db_path` drifted from the log (until `clear_stale` after a rebuild)."""
    _stale_path(db_path).write_text(detail[:500], encoding="utf-8")


def clear_stale(db_path: Path) -> None:
    _stale_path(db_path).unlink(missing_ok=True)
