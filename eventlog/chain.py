"""The SHA-256 hash chain.

    h_n = sha256(h_{n-1} || seq_n as 8 bytes big-endian || stored bytes of record n)

with h_0 = 32 zero bytes. The stored bytes are hashed exactly as written, never a
re-encoding, so a verifier needs no knowledge of the event schema.
"""

from __future__ import annotations

import struct

from eventlog.digest import sha256_for

GENESIS = b"\x00" * 32
_SEQ = struct.Struct(">Q")


def seq_key(seq: int) -> bytes:
    """The 8-byte big-endian LMDB key of `seq`."""
    return _SEQ.pack(seq)


def key_seq(key: bytes) -> int:
    """Inverse of `seq_key`."""
    return int(_SEQ.unpack(key)[0])


def link(prev: bytes, seq: int, stored: bytes | memoryview) -> bytes:
    """The chain hash of record `seq` whose stored bytes are `stored`."""
    h = sha256_for(len(stored) + 40)(prev)
    h.update(_SEQ.pack(seq))
    h.update(stored)
    return h.digest()
