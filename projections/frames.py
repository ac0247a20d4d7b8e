"""Length-prefixed pickle frames over a pipe between agentlog's own processes.

Used by the rebuild's parse process (`projections.pipeline`) and the full-text child
(`projections.fts_bulk`). A frame is an 8-byte big-endian length and that many bytes of
pickle; only our own processes write them, so unpickling trusts the bytes. A stream that
ends inside a frame reads as its end (`None`).
"""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

_LEN = struct.Struct(">Q")


def write(stream: IO[bytes], value: Any) -> None:
    body = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(body)))
    stream.write(body)
    stream.flush()


def read(stream: IO[bytes]) -> Any:
    """The next frame's value, or None at the end of the stream (or a torn frame)."""
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (size,) = _LEN.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def widen(fd: int, nbytes: int) -> None:
    """Give pipe `fd` `nbytes` of capacity where the system allows (Linux F_SETPIPE_SZ;
    else it keeps its own: the same frames cross, in more turns)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, nbytes)
    except (ImportError, AttributeError, OSError):
        pass
