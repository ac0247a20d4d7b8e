"""Record layout and event encoding.

An LMDB value in the `events` database is

    format (1 byte, = 1) || chain hash (32 bytes) || stored bytes

and the stored bytes are the MessagePack encoding of `Envelope`: capture time (UTC ms),
idempotency key, and the event's own MessagePack (whose map carries the tag in "type").
The chain hash covers the stored bytes exactly (see `chain`).

`agentlog forget` leaves two more forms in place of a record (docs/events.md, "Forgotten
records"); both keep the chain hash the record had, and name the forget event that made them:

    0xF0 || chain hash || forget event seq (8 bytes) || idempotency key     forgotten
    0xF1 || chain hash || forget event seq (8 bytes) || new stored bytes    amended
Real annotations, not `from __future__ import annotations`: see `eventlog.events`.
"""

from typing import Any

import msgspec

from eventlog.events import Event, UnknownEvent

FORMAT = 1
FORGOTTEN = 0xF0  # the payload is gone (far from 0x01 in bits: a flip does not make one)
AMENDED = 0xF1  # the payload was rewritten without a forgotten string
HEADER = 33
TOMB_HEADER = HEADER + 8  # ... then the forget event's seq


class Envelope(msgspec.Struct, frozen=True):
    at: int
    key: bytes
    event: msgspec.Raw


class EnvelopeOut(msgspec.Struct, frozen=True):
    """Encodes exactly like `Envelope` (same fields, same order) from a live event."""

    at: int
    key: bytes
    event: Any


class _TagOnly(msgspec.Struct):
    type: str = ""


BLANK_HEADER = bytes([FORMAT]) + bytes(32)  # format byte, then room for the hash
_enc = msgspec.msgpack.Encoder()
encode = _enc.encode  # for hot loops: encode(EnvelopeOut(at, key, event)) = stored bytes
encode_into = _enc.encode_into
_env_dec = msgspec.msgpack.Decoder(Envelope)
_event_dec = msgspec.msgpack.Decoder(Event)
_tag_dec = msgspec.msgpack.Decoder(_TagOnly)


def encode_event(event: Event) -> bytes:
    return _enc.encode(event)


def encode_stored(at: int, key: bytes, event_bytes: bytes) -> bytes:
    """The stored bytes of a record."""
    return _enc.encode(Envelope(at=at, key=key, event=msgspec.Raw(event_bytes)))


def encode_value(at: int, key: bytes, event: Event) -> bytearray:
    """A whole LMDB value with the chain hash still zero: format || 32 zero bytes || stored.

    One encoder call and no copies; the caller writes the hash into bytes [1, 33). The
    stored bytes equal `encode_stored(at, key, encode_event(event))`.
    """
    buf = bytearray(BLANK_HEADER)
    _enc.encode_into(EnvelopeOut(at, key, event), buf, HEADER)
    return buf


def decode_envelope(stored: bytes | memoryview) -> Envelope:
    return _env_dec.decode(stored)


def decode_event(raw: bytes | memoryview) -> Event | UnknownEvent:
    """Decode an event; an unknown tag (or a shape this version rejects) stays opaque."""
    try:
        return _event_dec.decode(raw)
    except msgspec.ValidationError:
        try:
            tag = _tag_dec.decode(raw).type
        except msgspec.DecodeError:
            tag = ""
        return UnknownEvent(tag=tag or "?", raw=bytes(raw))


def pack_value(chain_hash: bytes, stored: bytes) -> bytes:
    return bytes([FORMAT]) + chain_hash + stored


def unpack_value(value: bytes | memoryview) -> tuple[int, bytes, memoryview]:
    """(format, chain hash, stored bytes) of an LMDB value."""
    mv = memoryview(value)
    return mv[0], bytes(mv[1:HEADER]), mv[HEADER:]


def pack_tomb(fmt: int, chain_hash: bytes, forget_seq: int, body: bytes) -> bytes:
    """A forgotten (`body` = idempotency key) or amended (`body` = new stored) value."""
    return bytes([fmt]) + chain_hash + forget_seq.to_bytes(8, "big") + body


def unpack_tomb(value: bytes | memoryview) -> tuple[int, bytes, int, memoryview]:
    """(format, chain hash, forget event seq, body) of a forgotten or amended value."""
    mv = memoryview(value)
    return mv[0], bytes(mv[1:HEADER]), int.from_bytes(mv[HEADER:TOMB_HEADER], "big"), \
        mv[TOMB_HEADER:]
