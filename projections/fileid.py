"""Which file a path names now: (inode, device).

A read-only connection remembers the file it opened (`projections.db.connect`: the same
identity before and after the open), so a thread that opens the path again
(`projections.rank.split`) can tell whether it reads that very file: a rebuild swaps a new
file in with `os.replace` while earlier connections keep reading the old one.
"""

from __future__ import annotations

import os
from pathlib import Path

FileId = tuple[int, int]


def file_id(path: Path | str) -> FileId | None:
    """(inode, device) of the file at `path` now, None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_ino, st.st_dev
