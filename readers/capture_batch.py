"""What the next capture transaction will commit.

Events (their payloads compressed in one call when the batch is committed) and the state
entries (cursors, stat caches) that must commit in the same LMDB transaction as them.
"""

from __future__ import annotations

import msgspec

from eventlog.events import Event
from readers import capture_files as cf


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
