"""A rebuild that runs while a capture is still appending (empty -> searchable on 2 cores).

`start(db_path, log_dir)` starts a builder process that rebuilds `db_path` from seq 1
while the caller keeps appending to the log, and its parse process (`projections.pipeline`)
beside it, which reads the log as it grows and sends the builder its frames;
`finish(started)` says the appends are over and waits until the new file is swapped in. The
builder is `rebuild.rebuild(..., follow=True)` reading the parse process's frames; the
parse process reads, once its stdin (the caller's pipe) ends, up to the head of that moment.

Promises:
- the result is a rebuild of a prefix of the log: the same rows as `rebuild` at that head
  (tests compare them), published with the same lock, temporary file and atomic swap;
- the caller's end of the pipe is the only instruction: when the caller exits, however it
  exits (even kill -9), the pipe ends and the builder completes the file up to the head the
  caller left, so nothing waits forever and the log stays the only truth;
- a builder that dies leaves no file behind but its temporary one (the next rebuild removes
  it) and the caller's usual catch-up after its appends rebuilds instead; its parse process
  then meets the end of its pipe and exits (as does a builder whose parse process dies:
  it reads the end of the frames).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Started:
    """The builder and its parse process (`start`)."""

    builder: subprocess.Popen[bytes]
    parse: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.builder.pid


def start(db_path: Path, log_dir: Path, stats: str | None = None) -> Started:
    """The builder process and its parse process, started together: the parse process's
    start-up (an interpreter and its imports, ~0.1 s) runs beside the builder's instead of
    after it. The parse process's stdin is the pipe `finish` closes; its frames go to the
    builder through a pipe this process does not keep. `stats`: a file for their load's
    time counters (`projections.pipestats`)."""
    from projections import pipeline, rebuild, redact
    from projections.child import argv

    parse = pipeline.spawn(log_dir, -1, batch=rebuild.BATCH, batch_bytes=rebuild.BATCH_BYTES,
                           follow=True, stdin=subprocess.PIPE, stats=stats)
    assert parse.stdout is not None
    fd = parse.stdout.fileno()
    try:
        builder = subprocess.Popen(argv("projections.follow:run", str(db_path), str(log_dir),
                                        stats, fd, redact.rules()),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   close_fds=True, pass_fds=(fd,))
    except BaseException:
        parse.kill()
        parse.wait()
        raise
    finally:
        parse.stdout.close()  # the builder's now: when it ends, the parse process's writes do
    return Started(builder, parse)


def finish(started: Started, timeout: float | None = None) -> int:
    """The appends are over: let the builder read to the head, swap, and exit."""
    if started.parse.stdin is not None:
        started.parse.stdin.close()
    code = started.builder.wait(timeout)
    try:
        started.parse.wait(10)  # it ended with its last frame (or its pipe's reader)
    except subprocess.TimeoutExpired:
        started.parse.kill()
        started.parse.wait()
    return code


def run(db_path: str, log_dir: str, stats: str | None = None, fd: int | None = None,
        secret_rules: dict[str, Any] | None = None) -> None:
    """The builder process (`fd`: the parse process's frames), redacting with the caller's
    `secret_rules` (`redact.rules()`: config.json's, as the parse process does; the file
    records their version)."""
    from eventlog import EventLog
    from projections import pipestats
    from projections.rebuild import rebuild

    if secret_rules:
        from projections import redact

        redact.configure(secret_rules.get("patterns"), secret_rules.get("allow"))
    pipestats.PATH = stats
    source = None if fd is None else os.fdopen(fd, "rb")
    log = EventLog(Path(log_dir), readonly=True)
    try:
        rebuild(Path(db_path), log, follow=True, source=source)
    except Exception as exc:  # the caller's own catch-up rebuilds instead
        sys.stderr.write(f"agentlog: the rebuild beside the capture failed ({exc});"
                         " history.db is rebuilt after the capture instead\n")
        sys.exit(1)
    finally:
        log.close()
