"""The embedding projection's files, in one folder beside history.db (`meaning/`):

- `vectors.i8`: one row of `dim` int8 per chunk (the unit vector × 127, rounded; 512 for
  the default model), appended; row k is chunk k; `vectors.b1`: the same rows as sign bits
  (64 bytes for 512), the first pass of a search over many rows (find.py);
- `meaning.db` (SQLite): `chunks(key, doc, id)` — the history.db document (rowid and id) a
  chunk belongs to — and `meta`: the model id, `count` (rows committed) and `done` (the
  highest history.db rowid read), `dim`, and `epoch` (when it was last reset: rows before
  it are not rows after it).

An append writes the rows past `count`, fsyncs them, then commits the chunks and the new
`count` in one SQLite transaction: rows past `count` are a crashed append's and are cut off
when the store is next opened for writing. Readers read `count` and then only rows below
it, so a search never waits for the embedder and never sees half a row. Everything here is
derived: `drop` deletes the folder's files and the next step starts again from rowid 0.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Store", "drop", "writer_lock"]

VECTORS = "vectors.i8"
BITS = "vectors.b1"
DEFAULT_DIM = 512
DB = "meaning.db"
LOCK = "lock"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks(key INTEGER PRIMARY KEY, doc INTEGER NOT NULL, id TEXT NOT NULL);
"""


@contextmanager
def writer_lock(folder: Path) -> Iterator[bool]:
    """The one embedder of a folder: yields False (without waiting) when another holds it."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class Store:
    """One open embedding projection (read-only unless opened by `writable`)."""

    def __init__(self, folder: Path, con: sqlite3.Connection) -> None:
        self.folder = folder
        self._con = con
        self.dim = int(self.meta("dim") or DEFAULT_DIM)

    @classmethod
    def reader(cls, folder: Path) -> Store | None:
        """The projection as it is, or None when there is none yet."""
        if not (folder / DB).is_file():
            return None
        con = sqlite3.connect(f"file:{folder / DB}?mode=ro", uri=True, timeout=10,
                              check_same_thread=False)
        return cls(folder, con)

    @classmethod
    def writable(cls, folder: Path, model: str, dim: int = DEFAULT_DIM) -> Store:
        """Open for appends (hold `writer_lock`): a store of another model is dropped first,
        and rows a crashed append left past `count` are cut off."""
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        con = sqlite3.connect(folder / DB, timeout=10, check_same_thread=False)
        con.executescript(_SCHEMA)
        store = cls(folder, con)
        if store.meta("model") != model or store.dim != dim:
            store.reset(model, dim)
        for name, width in ((VECTORS, store.dim), (BITS, store.bit_bytes)):
            with open(folder / name, "ab") as f:
                if f.tell() != store.count * width:
                    f.truncate(store.count * width)
        return store

    def close(self) -> None:
        self._con.close()

    def meta(self, key: str) -> Any:
        row = self._con.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
        return None if row is None else row[0]

    @property
    def count(self) -> int:
        return int(self.meta("count") or 0)

    @property
    def done(self) -> int:
        return int(self.meta("done") or 0)

    @property
    def model(self) -> str | None:
        value = self.meta("model")
        return None if value is None else str(value)

    def last_chunk(self) -> tuple[int, str] | None:
        """(doc rowid, doc id) of the newest chunk."""
        row = self._con.execute(
            "SELECT doc, id FROM chunks ORDER BY key DESC LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def append(self, chunks: Sequence[tuple[int, str]], vectors: Any, done: int) -> None:
        """Chunks (doc rowid, doc id) with their unit vectors (n × dim float32), and the
        highest history.db rowid now read: the rows first (fsynced), then one commit."""
        import numpy as np

        start = self.count
        if len(chunks):
            rows = np.clip(np.rint(np.asarray(vectors, dtype=np.float32) * 127.0),
                           -127, 127).astype(np.int8)
            for name, width, data in ((VECTORS, self.dim, rows),
                                      (BITS, self.bit_bytes, np.packbits(rows > 0, axis=1))):
                with open(self.folder / name, "r+b") as f:
                    f.seek(start * width)
                    f.write(data.tobytes())
                    f.flush()
                    os.fsync(f.fileno())
        with self._con:
            self._con.executemany(
                "INSERT INTO chunks(key, doc, id) VALUES (?, ?, ?)",
                [(start + i, doc, ident) for i, (doc, ident) in enumerate(chunks)])
            self._con.execute("INSERT OR REPLACE INTO meta VALUES ('count', ?)",
                              (start + len(chunks),))
            self._con.execute("INSERT OR REPLACE INTO meta VALUES ('done', ?)", (done,))

    @property
    def bit_bytes(self) -> int:
        return (self.dim + 7) // 8

    def reset(self, model: str, dim: int) -> None:
        """Everything embedded so far forgotten (another model, or history.db renumbered);
        the projection is `model`'s (rows of `dim`) from now on."""
        with self._con:
            self._con.execute("DELETE FROM chunks")
            self._con.execute("DELETE FROM meta")
            self._con.execute("INSERT INTO meta VALUES ('model', ?)", (model,))
            self._con.execute("INSERT INTO meta VALUES ('dim', ?)", (dim,))
            # rows before a reset are not the rows after it (caches of them: find.py)
            self._con.execute("INSERT INTO meta VALUES ('epoch', ?)", (time.time_ns(),))
        self.dim = dim
        for name in (VECTORS, BITS):
            with open(self.folder / name, "ab") as f:
                f.truncate(0)
                os.fsync(f.fileno())

    def matrix(self) -> Any:
        """The committed rows, memory-mapped (count × dim int8; empty when none)."""
        import numpy as np

        n = self.count
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.int8)
        return np.memmap(self.folder / VECTORS, dtype=np.int8, mode="r", shape=(n, self.dim))

    def rows_at(self, keys: Any) -> Any:
        """The rows `keys` (below `count`) as a len(keys) × dim int8 array, read row by row
        (pread), not through a map: the page cache holds a file in large folios, and a
        fault maps a whole folio, so 2,000 rows spread over a 1M-row file (512 MB) put most
        of it in the process's RSS (issue 28: ≤ 300 MB with the model loaded; read-ahead
        advice does not change it)."""
        import numpy as np

        dim = self.dim
        out = np.empty((len(keys), dim), dtype=np.int8)
        fd = os.open(self.folder / VECTORS, os.O_RDONLY)
        try:
            for i in range(0, len(keys), 2048):  # a bytes object a row, 2,048 at a time
                some = keys[i:i + 2048]
                part = np.frombuffer(b"".join([os.pread(fd, dim, int(k) * dim) for k in some]),
                                     dtype=np.int8)
                if len(part) != len(some) * dim:  # the file cut by a reset
                    raise ValueError("vectors.i8 is shorter than its count")
                out[i:i + len(some)] = part.reshape(-1, dim)
        finally:
            os.close(fd)
        return out

    def bit_blocks(self, rows: int) -> Iterator[Any]:
        """The committed rows' sign bits, `rows` rows at a time, read (not mapped) into one
        buffer: each block is valid until the next is asked for. Read at every search
        rather than kept: 64 MB at 1M rows would be the process's for as long as it lives
        (issue 28: ≤ 300 MB with the model loaded), and reading them costs ~7 ms at 1M."""
        import numpy as np

        width, count = self.bit_bytes, self.count
        buf = np.empty((min(rows, count), width), dtype=np.uint8)
        view = buf.data.cast("B")
        with open(self.folder / BITS, "rb", buffering=0) as f:
            for start in range(0, count, rows):
                n = min(rows, count - start)
                if f.readinto(view[:n * width]) != n * width:  # cut by a reset meanwhile
                    raise ValueError("vectors.b1 is shorter than its count")
                yield buf[:n]

    def docs(self, keys: Sequence[int]) -> dict[int, tuple[int, str]]:
        """key → (doc rowid, doc id)."""
        out: dict[int, tuple[int, str]] = {}
        for i in range(0, len(keys), 500):
            part = [int(k) for k in keys[i:i + 500]]
            marks = ",".join("?" * len(part))
            for key, doc, ident in self._con.execute(
                    f"SELECT key, doc, id FROM chunks WHERE key IN ({marks})", part):
                out[int(key)] = (int(doc), str(ident))
        return out


def drop(folder: Path) -> bool:
    """Delete the projection's files (forget, `embed --again`): made again from history.db
    later. Whether there was anything to delete."""
    gone = False
    for name in (VECTORS, BITS, DB, DB + "-journal", DB + "-wal", DB + "-shm"):
        try:
            (folder / name).unlink()
            gone = True
        except FileNotFoundError:
            pass
    return gone
