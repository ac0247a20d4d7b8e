"""The log's head sequence number, read without loading the event types.

The search path asks one question of the log before it answers: "is history.db at the
head?". This answers it with py-lmdb alone (no msgspec, no codec): a read-only environment
opened, the last key of `events` read, the environment closed again (py-lmdb refuses a
second open of one environment in a process, so nothing is kept open here).
Promise: the same number as `EventLog(path, readonly=True).head().seq`; 0 for an empty log;
`None` when there is no log at `path` or it cannot be opened (the caller then takes the
ordinary path, which reports the error properly).
"""

from __future__ import annotations

import struct
from pathlib import Path

import lmdb


def head_seq(path: Path) -> int | None:
    if not (path / "data.mdb").exists():
        return None
    try:
        size = (path / "data.mdb").stat().st_size
        env = lmdb.open(str(path), readonly=True, max_dbs=8, max_readers=1024,
                        map_size=max(size, 1 << 20), max_spare_txns=0, create=False)
    except OSError:
        return None
    except lmdb.Error:
        return None
    try:
        try:
            events = env.open_db(b"events", create=False)
        except lmdb.NotFoundError:
            return 0
        with env.begin() as txn:
            cur = txn.cursor(db=events)
            if not cur.last():
                return 0
            return int(struct.unpack(">Q", cur.key())[0])
    except lmdb.Error:
        return None
    finally:
        env.close()
