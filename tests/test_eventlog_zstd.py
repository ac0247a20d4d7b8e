"""`eventlog.zstd`, the one decoder of captured payloads and packed bodies: the exact bytes
for each codec and frame kind, an unknown codec refused by name, one context per thread
reused for every frame (and a thread's own, never another's)."""

from __future__ import annotations

import threading

import pytest
import zstandard

from eventlog import zstd
from projections import body
from readers.restore import RestoreError, payload

DATA = b"a captured line of some agent's transcript\n" * 40


def test_payload_is_the_captured_bytes_for_every_codec_and_frame() -> None:
    framed = zstandard.ZstdCompressor(level=1).compress(DATA)
    bare = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    assert zstd.payload("", DATA, len(DATA)) == DATA
    assert zstd.payload("zstd", framed, len(DATA)) == DATA
    assert zstd.payload("zstd", framed) == DATA
    assert zstd.payload("zstd", bare) == DATA  # a stream: no content size needed
    assert zstd.payload("zstd", bare, len(DATA)) == DATA  # bounded by the known size
    with pytest.raises(zstandard.ZstdError):
        zstd.payload("zstd", bare, 10)  # more than the size the event says
    assert zstd.decompress(framed) == DATA
    assert payload("zstd", framed) == DATA  # readers.restore's, the same decoder


def test_an_unknown_codec_is_named() -> None:
    with pytest.raises(zstd.UnknownCodec, match="'lz4'") as err:
        zstd.payload("lz4", DATA)
    assert isinstance(err.value, ValueError)
    with pytest.raises(RestoreError, match="unknown codec 'lz4'"):
        payload("lz4", DATA)


def test_one_context_per_thread_reused() -> None:
    mine = zstd.decompressor()
    assert zstd.decompressor() is mine
    theirs: list[object] = []
    t = threading.Thread(target=lambda: theirs.append(zstd.decompressor()))
    t.start()
    t.join()
    assert theirs[0] is not mine and isinstance(theirs[0], zstandard.ZstdDecompressor)
    text = "a long text " * 100
    packed = body.pack(text)
    assert isinstance(packed, bytes) and body.unpack(packed) == text
    assert zstd.decompressor() is mine
