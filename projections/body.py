"""How a document's text is stored in history.db: the one encoder and the one decoder.

`document_rows.body` holds the text once: as TEXT when compression would not make it
smaller (short texts), else as a BLOB holding a zstd frame of its UTF-8 bytes. The frames are
made with a fixed 8 KiB dictionary (`body.dict` beside this module, trained once by
scripts/body_dict.py from the project's own docs and code, never from transcripts): short
texts need no Huffman/FSE tables of their own, so they compress faster and smaller. Nothing else
reads `body`: readers see the text through the `documents` view, whose `text` column is
`doc_text(body)` (registered on every connection by `projections.db`), and the triggers feed
the full-text indexes through the same function.

Promises: `unpack(pack(t)) == t` for every str SQLite can store; `pack` is deterministic for
a given text, and `pack_many(ts) == [pack(t) for t in ts]` (the same frames, made in one
call); zstandard is imported only when a BLOB is met or written (the search path of a history
without long texts never loads it).

Every stored frame stays decodable: a frame names its dictionary in its header (the low two
bits of the frame header descriptor, byte 4, say whether an id is present), `unpack` decodes
a frame without one (files written before the dictionary) with no dictionary, and one with
`DICT_ID` with `body.dict`, whose bytes are pinned by `DICT_SHA256`. The dictionary is never
changed in place: a new one gets a new id and the old file stays, loadable by its id.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

# Bytes of UTF-8 below which a text stays as it is: compressing shorter texts saves ~1 % of the
# file on the shared corpora, but costs a decompression per row in every scan (bench/size.py).
MIN_PACK = 256
LEVEL = 1  # zstd, with the dictionary: 35-36 % of the packed texts' size on the corpora
# (without it 37-40 %), 15-40 % less CPU (docs/performance.md, "history.db size")

# The dictionary every frame is written with (scripts/body_dict.py at 8269a1a): pinned.
DICT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "body.dict")
DICT_ID = 32790
DICT_SHA256 = "af6a8318cb892f2bd1122c2af761f56ca3a0982ae8fba5c6605557ac7c3a61a1"

_local = threading.local()  # zstd contexts are not thread-safe: one per thread


def _dictionary() -> Any:
    """`body.dict` as a zstd dictionary, checked against its pinned id and digest."""
    import hashlib

    import zstandard

    with open(DICT_PATH, "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != DICT_SHA256:
        raise RuntimeError(f"{DICT_PATH} is not the pinned body dictionary")
    d = zstandard.ZstdCompressionDict(data, dict_type=zstandard.DICT_TYPE_FULLDICT)
    assert d.dict_id() == DICT_ID
    return d


def _compressor() -> Any:
    comp = getattr(_local, "comp", None)
    if comp is None:
        import zstandard

        d = _dictionary()
        d.precompute_compress(level=LEVEL)
        comp = _local.comp = zstandard.ZstdCompressor(level=LEVEL, dict_data=d)
    return comp


def _decompressor(body: bytes) -> Any:
    """The decompressor for `body`'s frame: with the dictionary when its header names one."""
    with_dict = len(body) > 4 and body[4] & 3 != 0
    dec = getattr(_local, "ddec" if with_dict else "dec", None)
    if dec is None:
        import zstandard

        if with_dict:
            dec = _local.ddec = zstandard.ZstdDecompressor(dict_data=_dictionary())
        else:
            dec = _local.dec = zstandard.ZstdDecompressor()
    return dec


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
    """`[pack(t) for t in texts]`, the zstd frames made by one call (`multi_compress_to_buffer`
    writes the same frames as `compress`, without a Python call per text)."""
    out: list[str | bytes] = list(texts)
    where: list[int] = []
    raws: list[bytes] = []
    for i, text in enumerate(texts):
        if len(text) * 4 < MIN_PACK:
            continue
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            continue
        if len(raw) >= MIN_PACK:
            where.append(i)
            raws.append(raw)
    if not raws:
        return out
    comp = _compressor()
    many = getattr(comp, "multi_compress_to_buffer", None)  # the C backend's (not cffi's)
    frames: Any = many(raws) if many is not None and len(raws) > 1 else map(comp.compress, raws)
    for i, raw, frame in zip(where, raws, frames, strict=True):
        if len(frame) < len(raw):
            out[i] = bytes(frame)
    return out


def unpack(body: object) -> str:
    """The text of a stored `body` ("" for NULL, which `document_rows` never holds)."""
    if isinstance(body, str):
        return body
    if isinstance(body, bytes):
        data: bytes = _decompressor(body).decompress(body)
        return data.decode("utf-8")
    return "" if body is None else str(body)
