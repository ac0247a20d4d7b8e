"""Length-prefixed pickle frames over a pipe between agentlog's own processes.

Used by the rebuild's parse process (`projections.pipeline`) and the full-text child
(`projections.fts_bulk`). A frame is an 8-byte big-endian length and that many bytes of
pickle; only our own processes write them, so unpickling trusts the bytes. A stream that
ends inside a frame reads as its end (`None`).

Both ends go to the stream's file descriptor themselves, looping until every byte is across:
a write(2) or read(2) on a pipe may move fewer bytes than asked when the process is stopped
and continued meanwhile (Ctrl-Z and `fg`, a debugger, a profiler attaching). With
PYTHONUNBUFFERED set (common in containers) `sys.stdout.buffer` is the raw file, whose
`write` returns after such a short write; writing a frame through it and ignoring the count
tore the stream (a cold capture stopped and continued every 60 ms failed; tests/test_frames.py
runs both ways). Nothing else may read or write the same stream.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import IO, Any

_LEN = struct.Struct(">Q")


def write(stream: IO[bytes], value: Any) -> None:
    body = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    stream.flush()  # anything written to it before (nothing, in agentlog) goes first
    fd = stream.fileno()
    head = _LEN.pack(len(body))
    sent = os.writev(fd, [head, body])  # one call for the whole frame, as a rule
    if sent < len(head):  # (a pipe takes 8 bytes whole: never, in practice)
        rest = memoryview(head + body)[sent:]
    else:
        rest = memoryview(body)[sent - len(head):]
    while rest:
        rest = rest[os.write(fd, rest):]


def read(stream: IO[bytes]) -> Any:
    """The next frame's value, or None at the end of the stream (or a torn frame)."""
    fd = stream.fileno()
    head = _exactly(fd, _LEN.size)
    if head is None:
        return None
    (size,) = _LEN.unpack(head)
    body = _exactly(fd, size)
    if body is None:
        return None
    return pickle.loads(body)


def _exactly(fd: int, size: int) -> bytearray | None:
    """`size` bytes from `fd`, or None when it ends before."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            return None
        got += n
    return buf


def widen(fd: int, nbytes: int) -> None:
    """Give pipe `fd` `nbytes` of capacity where the system allows (Linux F_SETPIPE_SZ;
    else it keeps its own: the same frames cross, in more turns)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, nbytes)
    except (ImportError, AttributeError, OSError):
        pass
