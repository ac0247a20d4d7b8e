"""The values the store hands out: heads, append results, raw and decoded records.

`decode_record` is the one place a stored LMDB value becomes an event: format byte, chain
hash, then the MessagePack envelope (see `codec`). An unknown tag decodes as `UnknownEvent`.
"""

from __future__ import annotations

from dataclasses import dataclass

from eventlog import codec
from eventlog.errors import CorruptRecord
from eventlog.events import Event, UnknownEvent


@dataclass(frozen=True, slots=True)
class Head:
    seq: int
    hash: bytes

    @property
    def hex(self) -> str:
        return self.hash.hex()


@dataclass(frozen=True, slots=True)
class AppendResult:
    appended: int
    duplicates: int
    head: int
    seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    at: int
    key: bytes
    hash: bytes
    size: int
    event: Event | UnknownEvent


@dataclass(frozen=True, slots=True)
class RawRecord:
    seq: int
    value: bytes


def decode_record(raw: RawRecord) -> StoredEvent:
    fmt, h, stored = codec.unpack_value(raw.value)
    if fmt != codec.FORMAT:
        raise CorruptRecord(raw.seq, f"unknown record format {fmt}")
    env = codec.decode_envelope(stored)
    return StoredEvent(
        seq=raw.seq,
        at=env.at,
        key=env.key,
        hash=h,
        size=len(stored),
        event=codec.decode_event(env.event),
    )
