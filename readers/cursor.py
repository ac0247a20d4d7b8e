"""Per-source capture cursors, as stored in the log's `state` database.

Promises:
- one compact MessagePack value per source under `cursor_key(source)`; the value carries
  the source id itself so that all cursors can be read back with one prefix scan;
- a cursor is only ever written in the same `EventLog.append` call as the events it
  covers (the capture engine guarantees it);
- idempotency keys are deterministic functions of (source, generation, offset, content
  hash) or (source, previous hash, hash), so two processes capturing the same bytes
  produce the same keys and the log stores them once.

Real annotations, not `from __future__ import annotations`: msgspec reads the structs'
field types at import (their decoders), and a string costs a `typing.ForwardRef` compile
(see `eventlog.events`).
"""

import msgspec

from eventlog.digest import blake2b, sha256

CURSOR_PREFIX = b"cur\0"
ROWS_PREFIX = b"rows\0"
EPOCH_KEY = b"capture\0epoch"
STATCACHE_PREFIX = b"statcache\0"
DIRCACHE_PREFIX = b"dircache\0"
FORGOT_PREFIX = b"forgot\0"  # + kind + digest: what `agentlog forget` took back (no names)
HASH_SPAN = 4096  # bytes hashed at the head and before the cursor to detect rewrites


class Cursor(msgspec.Struct, array_like=True, omit_defaults=False):
    """Where capture of one source stands.

    For append-only files `offset` is the end of the captured bytes of generation `gen`;
    `head`/`tail` hash the first `head_len` bytes and the `min(offset, HASH_SPAN)` bytes
    before `offset`. For snapshots `blake3` is the hash of the newest snapshot. `size`,
    `mtime_ns`, `ino` are the file's metadata at the last poll: equal metadata means
    unchanged, and the file is not read.
    """

    source: str
    layout: str
    gen: int = 0
    offset: int = 0
    size: int = -1
    mtime_ns: int = 0
    ino: int = 0
    head_len: int = 0
    head: bytes = b""
    tail: bytes = b""
    blake3: str = ""
    backlog: bool = False
    missing: bool = False
    oversized: bool = False


class RowCursor(msgspec.Struct, array_like=True):
    """Keyset position of one table of one database source."""

    time_updated: int = -(2**62)
    row_id: str = ""


_enc = msgspec.msgpack.Encoder()
_cursor_dec = msgspec.msgpack.Decoder(Cursor)
_rows_dec = msgspec.msgpack.Decoder(RowCursor)


def _bounded(prefix: bytes, name: str) -> bytes:
    raw = name.encode("utf-8", "surrogateescape")
    if len(prefix) + len(raw) > 400:
        raw = b"#" + sha256(raw).digest()
    return prefix + raw


def cursor_key(source: str) -> bytes:
    return _bounded(CURSOR_PREFIX, source)


def rows_key(source: str, table: str) -> bytes:
    return _bounded(ROWS_PREFIX, f"{table}\0{source}")


StatCache = dict[str, tuple[int, int, int]]
_statcache_dec = msgspec.msgpack.Decoder(StatCache)
NEVER = (-1, -1, -1)  # a cache entry that matches no file: "look at this one"
GONE = (-2, -2, -2)  # a source whose file was missing at the last capture


def statcache_key(root_id: str) -> bytes:
    return STATCACHE_PREFIX + root_id.encode()


def encode_statcache(cache: StatCache) -> bytes:
    return _enc.encode(cache)


def decode_statcache(data: bytes) -> StatCache:
    return _statcache_dec.decode(data)


# folder (relative, "" = the root) -> (mtime_ns, history file names, folder names walked into)
DirCache = dict[str, tuple[int, list[str], list[str]]]
_dircache_dec = msgspec.msgpack.Decoder(tuple[int, DirCache])


def dircache_key(root_id: str) -> bytes:
    return DIRCACHE_PREFIX + root_id.encode()


def encode_dircache(version: int, cache: DirCache) -> bytes:
    return _enc.encode((version, cache))


def decode_dircache(data: bytes) -> tuple[int, DirCache]:
    return _dircache_dec.decode(data)


def encode(obj: Cursor | RowCursor) -> bytes:
    return _enc.encode(obj)


def decode_cursor(data: bytes) -> Cursor:
    return _cursor_dec.decode(data)


def decode_rows(data: bytes) -> RowCursor:
    return _rows_dec.decode(data)


def forgot_key(kind: bytes, ident: str) -> bytes:
    """The state key marking a forgotten source (`kind` b"src", its source id) or session
    (b"ses", its id): a digest, so the mark holds no path or id."""
    return FORGOT_PREFIX + kind + blake2b(ident.encode(), digest_size=16).digest()


def span_hash(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


def content_hash(data: bytes) -> bytes:
    """16 bytes of blake3 over captured bytes (fast on 64 KiB chunks)."""
    import blake3

    digest: bytes = blake3.blake3(data).digest(16)
    return digest


def event_key(kind: bytes, *parts: str | int | bytes) -> bytes:
    """`kind` + ":" + a 20-byte digest of the parts (deterministic, bounded length)."""
    h = blake2b(digest_size=20)
    for p in parts:
        if isinstance(p, bytes):
            b = p
        elif isinstance(p, int):
            b = str(p).encode()
        else:
            b = p.encode("utf-8", "surrogateescape")
        h.update(len(b).to_bytes(4, "big"))
        h.update(b)
    return kind + b":" + h.digest()
