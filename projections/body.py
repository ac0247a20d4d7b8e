"""How a document's text is stored in history.db: the one encoder and the one decoder.

`document_rows.body` holds the text once: as TEXT when compression would not make it
smaller (short texts), else as a BLOB holding a zstd frame of its UTF-8 bytes. Nothing else
reads `body`: readers see the text through the `documents` view, whose `text` column is
`doc_text(body)` (registered on every connection by `projections.db`), and the triggers feed
the full-text indexes through the same function.

Promises: `unpack(pack(t)) == t` for every str SQLite can store; `pack` is deterministic for
a given text, and `pack_many(ts) == [pack(t) for t in ts]` (the same frames, made on the
thread's one compression context); frames are decoded by `eventlog.zstd` (the thread's one
decompression context); zstandard is imported only when a BLOB is met or written (the
search path of a history without long texts never loads it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from eventlog.zstd import decompress

# Bytes of UTF-8 below which a text stays as it is: compressing shorter texts saves ~1 % of the
# file on the shared corpora, but costs a decompression per row in every scan (bench/size.py).
MIN_PACK = 256
# zstd level 3: 4 % fewer bytes than level 1 on the bench homes' texts (30.3 -> 29.0 % of
# them on the 1 GB home, 32.4 -> 31.0 % on `cold.py quick`'s) at 0.9-1.05x its speed;
# issue 32's disk goal (docs/performance.md, "Disk")
LEVEL = 3

_local = threading.local()  # zstd contexts are not thread-safe: one per thread


def _compressor() -> Any:
    comp = getattr(_local, "comp", None)
    if comp is None:
        import zstandard

        comp = _local.comp = zstandard.ZstdCompressor(level=LEVEL)
    return comp


def pack(text: str) -> str | bytes:
    """The stored form of `text`: itself, or its zstd frame when that is smaller."""
    if len(text) * 4 < MIN_PACK:  # cheap test first: at most 4 UTF-8 bytes a character
        return text
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: stored as SQLite stores it, unpacked
        return text
    if len(raw) < MIN_PACK:
        return text
    packed: bytes = _compressor().compress(raw)
    return packed if len(packed) < len(raw) else text


def pack_many(texts: Sequence[str]) -> list[str | bytes]:
    """`[pack(t) for t in texts]`, the thread's compressor looked up once. One `compress`
    per text on that reused context: `multi_compress_to_buffer` makes a new context per call
    (~10 us: its allocation, and a CPUID, which a VM traps), more than the Python call per
    text it saves at the ~60 texts of a typical call (docs/history/performance-journal.md,
    "Body packing, session 24")."""
    out: list[str | bytes] = list(texts)
    compress = _compressor().compress
    for i, text in enumerate(texts):
        if len(text) * 4 < MIN_PACK:
            continue
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            continue
        if len(raw) >= MIN_PACK:
            frame: bytes = compress(raw)
            if len(frame) < len(raw):
                out[i] = frame
    return out


def unpack(body: object) -> str:
    """The text of a stored `body` ("" for NULL, which `document_rows` never holds)."""
    if isinstance(body, str):
        return body
    if isinstance(body, bytes):
        return decompress(body).decode("utf-8")
    return "" if body is None else str(body)
