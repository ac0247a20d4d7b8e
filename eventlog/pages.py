"""Keep the log's memory map from filling this process's resident set during a long read.

LMDB reads through a shared read-only mapping of `data.mdb`; every page a catch-up touches
stays mapped (and counted in RSS) until the environment closes, so reading a 1 GB log once
would leave 1 GB resident. `release(log_dir)` tells the kernel (MADV_DONTNEED) that the
pages are not needed now: they stay in the page cache and are faulted back on the next
access, with the same contents (the mapping is read-only and file-backed, so nothing can be
lost). Linux only; elsewhere, or on any error, it does nothing.

`releasing(log_dir)` does the same every few milliseconds from a thread while one long call
into LMDB reads the whole map (a copy for `verify` or `backup`), so that call never has more
than a few MB of the log resident either.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MADV_DONTNEED = 4
_libc: Any = None


def release(log_dir: Path) -> int:
    """Drop this process's mappings of `log_dir/data.mdb`; returns the bytes advised."""
    if not sys.platform.startswith("linux"):
        return 0
    global _libc
    target = os.path.realpath(log_dir / "data.mdb")
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            spans = []
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].rstrip("\n") == target and "w" not in parts[1]:
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    spans.append((lo, hi))
        if not spans:
            return 0
        if _libc is None:
            import ctypes  # loaded on the first release (a long read), not by every catch-up

            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        total = 0
        for lo, hi in spans:
            if _libc.madvise(lo, hi - lo, MADV_DONTNEED) == 0:
                total += hi - lo
        return total
    except (OSError, AttributeError, ValueError):
        return 0


@contextlib.contextmanager
def releasing(log_dir: Path, every: float = 0.005) -> Iterator[None]:
    """`release(log_dir)` every `every` seconds until the block ends (and once after)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            release(log_dir)

    thread = threading.Thread(target=loop, name="agentlog-release-pages", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        release(log_dir)
