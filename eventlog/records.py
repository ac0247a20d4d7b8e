"""The values the store hands out: heads, append results, raw and decoded records.

`decode_record` is the one place a stored LMDB value becomes an event: format byte, chain
hash, then the MessagePack envelope (see `codec`). An unknown tag decodes as `UnknownEvent`;
bytes that are not MessagePack raise `CorruptRecord` (never a decoder's own error).

A forgotten record (`agentlog forget`) decodes as `Forgotten` (its place, no content); an
amended one as the event of its new stored bytes. Their chain hash is taken as stored:
`verify` proves it through the forget event's attestation (`eventlog.forget`).

`ChainCheck` is how every reader that produces output (restore, catch-up and rebuild,
audit, export) trusts a record: it recomputes the record's chain hash from the previous
one (one SHA-256 per record) and refuses a gap, an unknown format or a mismatch with
`CorruptRecord(seq, reason)` before the record is used. Lenient mode (restore
`--skip-damaged`) lists the damaged seqs instead and goes on from the next record's own
stored link.

Real annotations, not `from __future__ import annotations`: its named tuples (and msgspec
structs) read their field types when the class is made, and a string costs a
`typing.ForwardRef` compile each (docs/history/performance-journal.md, "Annotations").
"""

from collections.abc import Callable
from typing import NamedTuple

import msgspec

from eventlog import chain, codec
from eventlog.errors import CorruptRecord
from eventlog.events import Event, Forgotten, UnknownEvent


# Named tuples, not dataclasses: `dataclasses` (and building its classes) costs the hook
# and search start-up several milliseconds. Immutable and compared by value, as before.
class Head(NamedTuple):
    seq: int
    hash: bytes

    @property
    def hex(self) -> str:
        return self.hash.hex()


class AppendResult(NamedTuple):
    appended: int
    duplicates: int
    head: int
    seqs: tuple[int, ...]


class StoredEvent(NamedTuple):
    seq: int
    at: int
    key: bytes
    hash: bytes
    size: int
    event: Event | UnknownEvent | Forgotten


class RawRecord(NamedTuple):
    seq: int
    value: bytes


def decode_record(raw: RawRecord) -> StoredEvent:
    if len(raw.value) < codec.HEADER:
        raise CorruptRecord(raw.seq, f"record of {len(raw.value)} bytes is shorter than its header")
    fmt, h, stored = codec.unpack_value(raw.value)
    if fmt != codec.FORMAT:
        if fmt not in (codec.FORGOTTEN, codec.AMENDED) or len(raw.value) < codec.TOMB_HEADER:
            raise CorruptRecord(raw.seq, f"unknown record format {fmt}")
        _, h, forget_seq, stored = codec.unpack_tomb(raw.value)
        if fmt == codec.FORGOTTEN:
            return StoredEvent(seq=raw.seq, at=0, key=bytes(stored), hash=h, size=0,
                               event=Forgotten(forget_seq))
    try:
        env = codec.decode_envelope(stored)
        event = codec.decode_event(env.event)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CorruptRecord(raw.seq, f"does not decode ({str(exc)[:80]})") from None
    return StoredEvent(seq=raw.seq, at=env.at, key=env.key, hash=h, size=len(stored),
                       event=event)


DAMAGE_HINT = ("the log is damaged: `agentlog verify` names every bad record; restore the "
               "log from a backup (`agentlog backup` writes them to <home>/backups/)")


class ChainCheck:
    """Checks records in seq order against the chain (see the module docstring).

    `prev` is the chain hash of record `next_seq - 1` (`chain.GENESIS` before seq 1). With
    `damaged` set to a list, a bad record is appended to it instead of raising."""

    __slots__ = ("_unknown_prev", "damaged", "next_seq", "prev")

    def __init__(self, prev: bytes = chain.GENESIS, next_seq: int = 1,
                 damaged: list[int] | None = None) -> None:
        self.prev = prev
        self.next_seq = next_seq
        self.damaged = damaged
        self._unknown_prev = False

    def __repr__(self) -> str:
        return (f"ChainCheck(prev={self.prev!r}, next_seq={self.next_seq!r}, "
                f"damaged={self.damaged!r})")

    def ok(self, raw: RawRecord) -> bool:
        """True when `raw` is the next record and matches its chain hash."""
        why: str | None = None
        seq = raw.seq
        if seq != self.next_seq:
            if self.damaged is None:
                raise CorruptRecord(self.next_seq, f"missing (the next record is {seq})")
            self.damaged.extend(range(self.next_seq, min(seq, self.next_seq + 1000)))
            self._unknown_prev = True
        if len(raw.value) < codec.HEADER:
            why = "shorter than its header"
            h = b""
        else:
            fmt, h, stored = codec.unpack_value(raw.value)
            if fmt == codec.FORMAT:
                if self._unknown_prev or chain.link(self.prev, seq, stored) != h:
                    why = "checksum mismatch"
            elif fmt not in (codec.FORGOTTEN, codec.AMENDED):
                why = f"unknown record format {fmt}"
            elif len(raw.value) < codec.TOMB_HEADER or not seq < codec.unpack_tomb(
                    raw.value)[2]:
                why = "a forgotten record that names no later forget event"
            # else: forgotten or amended; its hash is proven by `verify` (the forget event)
        self.next_seq = seq + 1
        self.prev = h
        self._unknown_prev = len(h) != 32
        if why is None:
            return True
        if self.damaged is None:
            raise CorruptRecord(seq, why)
        self.damaged.append(seq)
        return False

    def all(self, records: list[RawRecord]) -> bytes:
        """Check a batch (strict); returns the chain hash of its last record."""
        for r in records:
            self.ok(r)
        return self.prev


ReadRaw = Callable[[int, int], list[RawRecord]]


def checker_at(read_raw: ReadRaw, from_seq: int, damaged: list[int] | None = None) -> ChainCheck:
    """A `ChainCheck` positioned before `from_seq`: the stored hash of the record before it
    is the starting link."""
    if from_seq <= 1:
        return ChainCheck(chain.GENESIS, 1, damaged)
    got = read_raw(from_seq - 1, 1)
    if not got or got[0].seq != from_seq - 1 or len(got[0].value) < codec.HEADER:
        raise CorruptRecord(from_seq - 1, "missing or truncated")
    return ChainCheck(codec.unpack_value(got[0].value)[1], from_seq, damaged)


def checked_get(read_raw: ReadRaw, seq: int) -> StoredEvent | None:
    """Record `seq` (None when absent), checked against the stored link before it."""
    if seq < 1:
        return None
    got = read_raw(seq, 1)
    if not got or got[0].seq != seq:
        return None
    checker_at(read_raw, seq).ok(got[0])
    return decode_record(got[0])
