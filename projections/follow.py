"""A rebuild that runs while a capture is still appending (empty -> searchable on 2 cores).

`start(db_path, log_dir)` starts a builder process that rebuilds `db_path` from seq 1
while the caller keeps appending to the log; `finish(builder)` says the appends are over
and waits until the new file is swapped in. The builder is `rebuild.rebuild(...,
follow=True)`: its parse process (`projections.pipeline`) reads the log as it grows and,
once the builder's stdin ends, up to the head of that moment.

Promises:
- the result is a rebuild of a prefix of the log: the same rows as `rebuild` at that head
  (tests compare them), published with the same lock, temporary file and atomic swap;
- the caller's end of the pipe is the builder's only instruction: when the caller exits,
  however it exits (even kill -9), the pipe ends and the builder completes the file up to
  the head the caller left, so nothing waits forever and the log stays the only truth;
- a builder that dies leaves no file behind but its temporary one (the next rebuild removes
  it) and the caller's usual catch-up after its appends rebuilds instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_BOOT = ("import json, sys; a = json.loads(sys.argv[1]); sys.path[:] = a[0];"
         " from projections.follow import run; run(*a[1:])")


def start(db_path: Path, log_dir: Path,
          stats: str | None = None) -> subprocess.Popen[bytes]:
    """The builder process (its stdin is the pipe that `finish` closes); `stats`: a file
    for its load's time counters (`projections.pipestats`)."""
    args = json.dumps([sys.path, str(db_path), str(log_dir), stats])
    return subprocess.Popen([sys.executable, "-c", _BOOT, args], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, close_fds=True)


def finish(builder: subprocess.Popen[bytes], timeout: float | None = None) -> int:
    """The appends are over: let the builder read to the head, swap, and exit."""
    if builder.stdin is not None:
        builder.stdin.close()
    return builder.wait(timeout)


def run(db_path: str, log_dir: str, stats: str | None = None) -> None:
    """The builder process."""
    from eventlog import EventLog
    from projections import pipestats
    from projections.rebuild import rebuild

    pipestats.PATH = stats
    log = EventLog(Path(log_dir), readonly=True)
    try:
        rebuild(Path(db_path), log, follow=True)
    except Exception as exc:  # the caller's own catch-up rebuilds instead
        sys.stderr.write(f"agentlog: the rebuild beside the capture failed ({exc});"
                         " history.db is rebuilt after the capture instead\n")
        sys.exit(1)
    finally:
        log.close()
