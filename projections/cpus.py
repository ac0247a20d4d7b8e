"""How many CPUs this process may run on (its affinity mask where the OS has one)."""

from __future__ import annotations

import os


def usable() -> int:
    """The CPUs this process may run on, at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
