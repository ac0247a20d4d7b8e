"""What the next capture transaction will commit.

Events (their payloads compressed in one call when the batch is committed) and the state
entries (cursors, stat caches) that must commit in the same LMDB transaction as them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from eventlog.events import Event
from readers import capture_files as cf
from readers import cursor as cur

if TYPE_CHECKING:
    from readers.sqlite_rows import Row


class Batch:
    def __init__(self) -> None:
        self.events: list[tuple[bytes, Event]] = []
        self.state: dict[bytes, bytes | None] = {}
        self.bytes = 0  # captured payload bytes, before compression
        self._to_pack: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.events or self.state)

    def add(self, key: bytes, ev: Event, nbytes: int = 0) -> None:
        """Queue an event; a large payload is compressed when the batch is packed."""
        data = getattr(ev, "data", None)
        if isinstance(data, bytes) and len(data) >= cf.COMPRESS_MIN:
            self._to_pack.append(len(self.events))
        self.events.append((key, ev))
        self.bytes += nbytes

    def add_rows(self, source: str, table: str, rows: Sequence[Row], at: int) -> int:
        """Queue one `RowSnapshotted` per row (keyed by its content); returns the bytes."""
        from eventlog.events import RowSnapshotted

        total = 0
        for row in rows:
            ev = RowSnapshotted(source=source, table=table, row_id=row.row_id,
                                time_updated=row.time_updated, data=row.data, at=at)
            key = cur.event_key(b"row", source, table, row.row_id, row.time_updated,
                                cur.span_hash(row.data))
            self.add(key, ev, len(row.data))
            total += len(row.data)
        return total

    def full(self, max_bytes: int, max_events: int) -> bool:
        return self.bytes >= max_bytes or len(self.events) >= max_events

    def pack(self) -> None:
        """Compress the queued payloads in one call (zstd's own threads, GIL released)."""
        if not self._to_pack:
            return
        datas = [getattr(self.events[i][1], "data", b"") for i in self._to_pack]
        for i, (packed, codec) in zip(self._to_pack, cf.pack_many(datas), strict=True):
            if codec:
                key, ev = self.events[i]
                self.events[i] = (key, msgspec.structs.replace(ev, data=packed, codec=codec))
        self._to_pack = []
