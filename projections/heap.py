"""Give the heap memory a bulk build has freed back to the operating system between phases.

A rebuild runs in phases (load the rows, sort the query indexes, fill the full-text index)
that each allocate a large, short-lived working set inside SQLite (the page cache, the
sorter's buffers, FTS5's term hash). glibc keeps freed memory in the process heap (its mmap
threshold also adapts upwards after large frees), so without a trim the next phase's
working set is added to the last one's in the resident set instead of replacing it.
`trim()` calls glibc's `malloc_trim(0)`: only free pages are returned, nothing live is
touched, so it changes no result. With another C library, or on any error, it does nothing.
"""

from __future__ import annotations

import sys
from typing import Any

ENABLED = True
_libc: list[Any] = []


def trim() -> bool:
    """Return free heap pages to the OS; True when glibc did so."""
    if not ENABLED or not sys.platform.startswith("linux"):
        return False
    try:
        if not _libc:
            import ctypes  # here: the search path imports projections.db, never this

            try:  # glibc's soname: find_library would run `ldconfig -p` in a child
                libc = ctypes.CDLL("libc.so.6")
            except OSError:
                import ctypes.util  # ~1.5 ms of imports (tempfile, random): only then

                libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
            libc.malloc_trim.argtypes = (ctypes.c_size_t,)
            libc.malloc_trim.restype = ctypes.c_int
            _libc.append(libc)
        return bool(_libc[0].malloc_trim(0))
    except (OSError, AttributeError):
        return False
