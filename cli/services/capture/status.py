"""What readers of a home see of its capture loop (cli/services/capture/loop.py).

Promises:
- `coverage_fields` reads one small file (the note the capturing process publishes in its
  lease file) and never waits; `caughtUp` only after the holder's own first complete pass,
  with no file unread and no event unindexed.
- `first_pass` is the one wait: while the first capture pass of a home that no loop ever
  caught up runs (this process's loop, or the holder's note says so), a search waits for
  it up to `FIRST_PASS_WAIT_S`, then gets one line saying how far it got.
- Imports nothing of the capture machinery (the search path imports this module).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from cli.services.config import Home

LEASE_FILE = "capture.lock"
FIRST_PASS_WAIT_S = 3.0  # how long a search waits for a home's first capture pass
LOOPS: dict[str, Any] = {}  # this process's running CaptureLoop of each home (`key`)


def key(home: Home) -> str:
    return str(home.log_dir)


def lease(home: Home) -> Any:
    from eventlog.lock import Lease

    return Lease(home.log_dir / LEASE_FILE)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _reading(home: Home) -> str | None:
    """The line saying the home's first capture pass is still running, or None (no pass
    runs, or the home was caught up once: a restarted loop's pass is not waited for)."""
    note = read_note(home)
    if note is not None and (note.get("everCaughtUp") or note.get("caughtUp")):
        return None
    mine = LOOPS.get(key(home))
    if mine is None or mine.first_pass_over.is_set():
        if note is None or not note.get("firstPass") or not lease(home).probe():
            return None  # no first pass runs (a note left by a holder that is gone)
    elif note is not None and note.get("pid") != os.getpid():
        note = None  # a predecessor's note: ours is not written yet
    files, pending = (note or {}).get("files"), (note or {}).get("pendingFiles")
    if isinstance(files, int) and isinstance(pending, int) and files > 0:
        found = " found so far" if (note or {}).get("discovering") else ""
        return (f"history is still being read: {max(0, files - pending):,} of {files:,} "
                f"files{found}; try again in a few seconds")
    return "history is still being read; try again in a few seconds"


def first_pass(home: Home, wait_s: float = FIRST_PASS_WAIT_S) -> str | None:
    """While the first capture pass of a home runs (this process's loop, or the note of the
    process that captures), wait for it up to `wait_s`; None once it has ended or when none
    runs, else the one line saying how far it got."""
    deadline = time.monotonic() + wait_s
    while True:
        reading = _reading(home)
        left = deadline - time.monotonic()
        if reading is None or left <= 0:
            return reading
        mine = LOOPS.get(key(home))
        if mine is not None and not mine.first_pass_over.is_set():
            mine.first_pass_over.wait(min(0.1, left))
        else:
            time.sleep(min(0.1, left))


def read_note(home: Home) -> dict[str, Any] | None:
    """The capture loop's last published note, or None."""
    raw = lease(home).read_note()
    if not raw:
        return None
    try:
        note = json.loads(raw)
    except ValueError:  # being rewritten right now
        return None
    return note if isinstance(note, dict) else None


def holder(home: Home) -> str:
    """Who captures this home, for messages ("pid 123, `mcp`")."""
    note = read_note(home) or {}
    pid = note.get("pid")
    cmd = note.get("command")
    return f"pid {pid}" + (f", `agentlog {cmd}`" if cmd else "") if pid else "another process"


def coverage_fields(home: Home, coverage: dict[str, Any]) -> dict[str, Any]:
    """The capture fields of `coverage` (docs/search.md): capturing, lastCaptureAgeS,
    pendingFiles, pendingEvents, caughtUp. Reads one small file; never waits."""
    capturing = bool(lease(home).probe())
    note = read_note(home)
    if note is None:
        return {"capturing": capturing, "lastCaptureAgeS": None, "pendingFiles": None,
                "pendingEvents": None, "caughtUp": False}
    pass_at = note.get("passAt")
    age = max(0.0, (now_ms() - pass_at) / 1000) if isinstance(pass_at, int) else None
    head = note.get("head")
    indexed = coverage.get("events")
    pending_events = (max(0, head - indexed) if isinstance(head, int)
                      and isinstance(indexed, int) else None)
    files = note.get("pendingFiles")
    return {
        "capturing": capturing,
        "lastCaptureAgeS": None if age is None else round(age, 1),
        "pendingFiles": files if isinstance(files, int) else None,
        "pendingEvents": pending_events,
        # both counts known and zero, after a first pass that found every file
        "caughtUp": bool(capturing and note.get("caughtUp") and files == 0
                         and pending_events == 0),
    }


def with_capture(home: Home, result: dict[str, Any]) -> dict[str, Any]:
    """`result` (a search or coverage answer) with the capture fields in its coverage."""
    cov = result.get("coverage")
    if isinstance(cov, dict):
        cov.update(coverage_fields(home, cov))
    return result
