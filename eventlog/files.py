"""Files written whole or not at all: a temporary file beside the target, fsynced, renamed.

Promises:
- `write_atomic(path, data)` (bytes or pieces) and `open_atomic(path)` (a file to write
  into): a reader of `path` sees its old content or all of the new, never a part: the bytes
  go to a temporary file in the same folder (`.tmp-XXXXXXXX` plus the target's suffix,
  created with `mode`), which is fsynced, renamed over `path` with `os.replace`, and the
  folder fsynced, so the rename survives a crash too (`fsync=False`: neither, for files
  that are rebuilt anyway). On any error the temporary file is removed and `path` is
  untouched;
- `replace_durably(src, dst)`: `os.replace` and the folder fsynced (a file already written
  and fsynced by its writer, e.g. a rebuilt history.db);
- `fsync_file` / `fsync_dir`: one fsync of a file's or folder's entry, by path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO


def fsync_file(path: str | Path) -> None:
    """fsync the file at `path` (its data and metadata)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | Path) -> None:
    """fsync the folder at `path`, so the entries renamed or created in it are durable."""
    fsync_file(path)


def replace_durably(src: str | Path, dst: str | Path) -> None:
    """`os.replace(src, dst)`, then the folder of `dst` fsynced."""
    os.replace(src, dst)
    fsync_dir(Path(dst).parent)


@contextlib.contextmanager
def open_atomic(path: Path, *, mode: int = 0o600, fsync: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content into (see the module promises): `path`
    is replaced when the block ends, untouched when it raises. The folder is created when
    missing."""
    import tempfile  # ~10 ms of imports (random, shutil…): not on the +1 capture's path

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode != 0o600:  # mkstemp's own
                os.fchmod(f.fileno(), mode)
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes | Iterable[bytes], *, mode: int = 0o600,
                 fsync: bool = True) -> int:
    """Write `data` (bytes, or an iterable of byte pieces written as they come) to `path`
    atomically (`open_atomic`); returns the number of bytes written."""
    size = 0
    with open_atomic(path, mode=mode, fsync=fsync) as f:
        for piece in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
            f.write(piece)
            size += len(piece)
    return size
