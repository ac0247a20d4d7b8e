"""zstd frames: the one decoder of captured payloads and of history.db's packed bodies.

A captured chunk, snapshot or row keeps its bytes raw (`codec` "") or as one zstd frame
(`codec` "zstd", `eventlog.events`); history.db keeps a long text as a zstd frame of its
UTF-8 bytes (`projections.body`). Both are decoded here.

Promises:
- one decompression context per thread (zstd contexts are not thread-safe), made at its
  first use and reused for every frame after (a new context costs an allocation and a CPUID,
  which a VM traps); zstandard is imported only then, so a path that meets no frame never
  loads it;
- `payload(codec, data, size)` is the exact captured bytes; an unknown codec raises
  `UnknownCodec` (a `ValueError` too), a bad frame zstandard's own error.
"""

from __future__ import annotations

import threading
from typing import Any

from eventlog.errors import EventLogError

_local = threading.local()


class UnknownCodec(EventLogError, ValueError):
    """A payload names a codec this version cannot decode."""

    def __init__(self, codec: str) -> None:
        super().__init__(f"unknown codec {codec!r}")
        self.codec = codec


def decompressor() -> Any:
    """This thread's `zstandard.ZstdDecompressor`."""
    dec = getattr(_local, "dec", None)
    if dec is None:
        import zstandard

        dec = _local.dec = zstandard.ZstdDecompressor()
    return dec


def decompress(frame: bytes) -> bytes:
    """The bytes of a zstd frame that carries its content size (every frame `compress`
    writes does)."""
    out: bytes = decompressor().decompress(frame)
    return out


def payload(codec: str, data: bytes, size: int | None = None) -> bytes:
    """The captured bytes of an event's `data`. `size`: the captured size when the event
    says it (it bounds the output of a frame that carries no content size); None decodes
    the frame as a stream, whatever its header says."""
    if not codec:
        return data
    if codec != "zstd":
        raise UnknownCodec(codec)
    dec = decompressor()
    if size is None:
        out: bytes = dec.decompressobj().decompress(data)
        return out
    out = dec.decompress(data, max_output_size=max(size, 1))
    return out
