"""Bounded reads of one source file: append-only chunks and whole-file snapshots.

Promises:
- files are opened `O_RDONLY` and only read; nothing is written next to them;
- an append poll reads at most `READ_MAX` (64 KiB) of new bytes; a chunk ends at the last
  newline of what was read, except that a read holding no newline at all continues one
  line longer than a read (the next chunk continues it), and an unterminated final line
  is captured only once the file has been quiet for `settle_ns` (a torn tail waits) --
  then in the same poll as the lines before it, so one pass captures a finished file whole;
- a file that shrank below the cursor, or whose captured head or tail bytes changed,
  starts a new generation from offset 0 (a `SourceRewound` event); an older copy that is
  a byte prefix of the new file (a replaced, grown file) is not a rewrite;
- a snapshot is taken whenever the blake3 of the whole file differs from the last one;
  files above `SNAPSHOT_MAX` (32 MiB; `Options.snapshot_max`, config
  `capture.snapshotMaxMiB`) are not read: marked oversized, named in the run's `skipped`
  and counted (`oversized`) by every capture that polls them, and by audit;
- every function returns new events (data raw, `codec` ""; the engine compresses them
  with `pack` before committing) and a new cursor; the caller commits both in one
  transaction, so a crash loses nothing that was committed and repeats nothing.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
import threading
from typing import Any

from eventlog.events import ChunkCaptured, Event, FileSnapshotted, SourceRewound
from readers.cursor import HASH_SPAN, Cursor, content_hash, event_key, span_hash

READ_MAX = 64 * 1024
SNAPSHOT_MAX = 32 * 1024 * 1024
COMPRESS_MIN = 256
ZSTD_LEVEL = 1

_local = threading.local()
PARALLEL_MIN = 1 << 20  # below this many bytes a batch is compressed on one thread


def _compressor() -> Any:
    comp = getattr(_local, "zstd", None)
    if comp is None:
        import zstandard

        comp = _local.zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return comp


def _choose(data: bytes, packed: bytes) -> tuple[bytes, str]:
    if len(packed) * 10 < len(data) * 9:
        return packed, "zstd"
    return data, ""


def pack(data: bytes) -> tuple[bytes, str]:
    """`data` compressed with zstd when that saves at least a tenth, else raw."""
    if len(data) < COMPRESS_MIN:
        return data, ""
    return _choose(data, _compressor().compress(data))


def pack_many(datas: list[bytes]) -> list[tuple[bytes, str]]:
    """`pack` of every payload; a large batch is compressed by zstd's own threads in one
    call (the GIL is released for all of it)."""
    if sum(len(d) for d in datas) < PARALLEL_MIN or (os.cpu_count() or 1) < 2:
        return [pack(d) for d in datas]
    threads = min(4, os.cpu_count() or 1)
    out = _compressor().multi_compress_to_buffer(datas, threads=threads)
    return [_choose(d, out[i].tobytes()) for i, d in enumerate(datas)]


class Polled:
    """What one poll produced: the new cursor, events, bytes read, whether to poll again."""

    __slots__ = ("busy", "bytes", "cursor", "events", "rewound")

    def __init__(self, cursor: Cursor, *, busy: bool = False) -> None:
        self.cursor = cursor
        self.events: list[tuple[bytes, Event]] = []
        self.bytes = 0
        self.busy = busy
        self.rewound = False


def db_signature(path: str) -> tuple[int, int, int]:
    """(size, mtime_ns, inode) of a SQLite database folded with its -wal: changes on
    every commit, so an unchanged database is recognised without opening it."""
    st = os.stat(path)
    size, mtime, ino = st.st_size, st.st_mtime_ns, st.st_ino
    try:
        w = os.stat(path + "-wal")
        size += w.st_size << 32
        mtime = max(mtime, w.st_mtime_ns)
    except OSError:
        pass
    return size, mtime, ino


def unchanged(c: Cursor, st: os.stat_result) -> bool:
    return c.size == st.st_size and c.mtime_ns == st.st_mtime_ns and c.ino == st.st_ino


def needs_read(c: Cursor, st: os.stat_result, now_ns: int, settle_ns: int, append: bool) -> bool:
    """Whether a poll must open the file (metadata alone decides; nothing is read)."""
    if c.missing:
        return True
    if not unchanged(c, st):
        return True
    if not append:
        return c.oversized  # looked at again by every capture: named, or taken once allowed
    if c.backlog:
        return True
    # an unterminated tail waiting to settle
    return c.offset < st.st_size and now_ns - st.st_mtime_ns >= settle_ns


def _pread_exact(fd: int, n: int, off: int) -> bytes:
    first = os.pread(fd, n, off)
    if len(first) == n or not first:
        return first
    out = bytearray(first)
    while len(out) < n:
        got = os.pread(fd, n - len(out), off + len(out))
        if not got:
            break
        out += got
    return bytes(out)


def _with_stat(c: Cursor, st: os.stat_result, **kw: Any) -> Cursor:
    import msgspec

    return msgspec.structs.replace(
        c, size=st.st_size, mtime_ns=st.st_mtime_ns, ino=st.st_ino, missing=False, **kw
    )


def _intact(fd: int, c: Cursor) -> bool:
    if c.head_len and span_hash(_pread_exact(fd, c.head_len, 0)) != c.head:
        return False
    n = min(c.offset, HASH_SPAN)
    return not n or span_hash(_pread_exact(fd, n, c.offset - n)) == c.tail


def open_ro(path: str) -> int:
    """Open read-only; O_NONBLOCK so that a FIFO in an agent folder cannot hang capture
    (it has no effect on regular files, and anything else is skipped after `fstat`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW  # never leave a root through a link
    try:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "symbolic link, not followed", path) from None
        raise


def poll_append(
    path: str, c: Cursor, *, now_ns: int, settle_ns: int, at: int, read_max: int = READ_MAX,
    final: bool = False,
) -> Polled:
    """Capture the next bounded chunk of an append-only file. With `final` (the agent said
    the file is finished), a chunk that reaches the end of a file whose last byte is not a
    newline is marked `final`, or, when those bytes were captured already, an empty final
    chunk says so (once: its key is fixed)."""
    source = c.source
    fd = open_ro(path)
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return Polled(_with_stat(c, st))
        out = Polled(c)
        if c.offset and (c.offset > st.st_size or (not unchanged(c, st) and not _intact(fd, c))):
            gen = c.gen + 1
            reason = "shrank" if c.offset > st.st_size else "changed"
            out.events.append(
                (
                    event_key(b"rewound", source, gen, c.offset),
                    SourceRewound(
                        source=source, generation=gen, reason=reason, old_size=c.offset,
                        new_size=st.st_size, at=at,
                    ),
                )
            )
            out.rewound = True
            c = Cursor(source=source, layout=c.layout, gen=gen)
        avail = st.st_size - c.offset
        if avail <= 0:
            if final and avail == 0 and c.offset and _pread_exact(fd, 1, c.offset - 1) != b"\n":
                out.events.append((
                    event_key(b"final", source, c.gen, c.offset),
                    ChunkCaptured(source=source, generation=c.gen, offset=c.offset, size=0,
                                  data=b"", at=at, final=True),
                ))
            out.cursor = _with_stat(c, st, backlog=False)
            return out
        n = min(avail, read_max)
        data = _pread_exact(fd, n, c.offset)
        nl = data.rfind(b"\n")
        settled = now_ns - st.st_mtime_ns >= settle_ns
        if settled and n == avail:
            take = len(data)  # the file is quiet and this read reaches its end: all of it
        elif nl >= 0:
            take = nl + 1
        elif len(data) == read_max:
            take = len(data)  # a line longer than a read (the next chunk continues it)
        else:
            take = 0  # a torn tail waits for the rest of its line
        if take:
            chunk = data[:take]
            new_off = c.offset + take
            ends = final and new_off == st.st_size and not chunk.endswith(b"\n")
            out.events.append(
                (
                    event_key(b"chunk", source, c.gen, c.offset, content_hash(chunk)),
                    ChunkCaptured(
                        source=source, generation=c.gen, offset=c.offset, size=take,
                        data=chunk, at=at, final=ends,
                    ),
                )
            )
            head_len, head = c.head_len, c.head
            if head_len < HASH_SPAN:
                head_len = min(HASH_SPAN, new_off)
                head_bytes = chunk[:head_len] if c.offset == 0 else _pread_exact(fd, head_len, 0)
                head = span_hash(head_bytes)
            tl = min(HASH_SPAN, new_off)
            tail_bytes = chunk[-tl:] if take >= tl else _pread_exact(fd, tl, new_off - tl)
            out.bytes = take
            c = Cursor(
                source=source, layout=c.layout, gen=c.gen, offset=new_off, head_len=head_len,
                head=head, tail=span_hash(tail_bytes),
            )
        # more to read now: a full read, or a settled unterminated tail after the last newline
        backlog = take > 0 and c.offset < st.st_size and (
            n == read_max or now_ns - st.st_mtime_ns >= settle_ns)
        out.cursor = _with_stat(c, st, backlog=backlog)
        out.busy = backlog
        return out
    finally:
        os.close(fd)


def poll_snapshot(path: str, c: Cursor, *, at: int, max_size: int = SNAPSHOT_MAX) -> Polled:
    """Snapshot a rewritten file when its content hash changed; a file over `max_size`
    is not read (its cursor says `oversized`: the engine names and counts it)."""
    fd = open_ro(path)
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return Polled(_with_stat(c, st))
        if st.st_size > max_size:
            return Polled(_with_stat(c, st, oversized=True))
        data = _pread_exact(fd, st.st_size, 0)
        extra = os.pread(fd, 1, len(data))
        st2 = os.fstat(fd)
    finally:
        os.close(fd)
    if extra or st2.st_size != len(data) or st2.st_mtime_ns != st.st_mtime_ns:
        return Polled(c, busy=True)  # being rewritten right now: try again later
    import blake3

    digest = blake3.blake3(data).hexdigest()
    if digest == c.blake3:
        return Polled(_with_stat(c, st, oversized=False))
    ev = FileSnapshotted(
        source=c.source, blake3=digest, size=len(data), data=data,
        mtime_ms=st.st_mtime_ns // 1_000_000, at=at,
    )
    out = Polled(_with_stat(c, st, blake3=digest, offset=len(data), oversized=False))
    out.events.append((event_key(b"snapshot", c.source, c.blake3, digest), ev))
    out.bytes = len(data)
    return out
