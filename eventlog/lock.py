"""The cross-process writer lock of a log: one writer at a time, never interleaved.

An advisory `flock` on `<log>/writer.lock`, reentrant within a process (and safe across
its threads). A second writer polls with backoff until its timeout, then raises
`WriterBusy` naming the holder: the holder writes `<pid> <host> <command>` into the file
(advisory, for that message only; the flock is what excludes).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from eventlog.errors import WriterBusy


class WriterLock:
    def __init__(self, path: Path, log_path: Path, command: str) -> None:
        self.path = path
        self.log_path = log_path
        self.command = command
        self._fd: int | None = None
        self._depth = 0
        self._thread_lock = threading.RLock()

    @contextlib.contextmanager
    def hold(self, timeout: float) -> Iterator[None]:
        """Hold the lock (reentrant); waits up to `timeout` seconds for another process."""
        with self._thread_lock:
            if self._depth == 0:
                self._acquire(timeout)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _acquire(self, timeout: float) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriterBusy(
                        f"another agentlog process is writing to {self.log_path}"
                        f"{self._holder()}; gave up after waiting {timeout:g} s for "
                        f"{self.path}. Retry when it has finished."
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        with contextlib.suppress(OSError):
            # the host as gethostname() names it (`socket` would cost every writer's start-up)
            note = f"{os.getpid()} {os.uname().nodename} {self.command}".encode()[:200]
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, note, 0)

    def _holder(self) -> str:
        try:
            with open(self.path, "rb") as f:
                note = f.read(200).decode("utf-8", "replace").split(" ", 2)
        except OSError:
            return ""
        if len(note) < 2 or not note[0].isdigit():
            return ""
        cmd = f", {note[2]!r}" if len(note) > 2 and note[2] else ""
        return f" (pid {note[0]} on {note[1]}{cmd})"


class Lease:
    """An election among the processes of one log: at most one holds the lease at a time.

    A non-blocking `flock` on its own file beside `writer.lock` (`capture.lock`), held for
    as long as the holder keeps the job: the kernel releases it when the holder exits, even
    on kill -9, so another candidate's next `try_acquire` wins. It is separate from the
    writer lock on purpose: the lease holder still takes the writer lock only while it
    appends, so `record`, `capture` and `import` of other processes keep writing.

    The holder may publish a small JSON note (`publish`) in the file, padded to a fixed
    size and written in place; anyone can `read_note` it and `probe` whether it is held.
    """

    NOTE_SIZE = 1024

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lease if nobody holds it; True when this object holds it now."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor releases the flock

    def publish(self, note: bytes) -> None:
        """Write `note` (at most NOTE_SIZE bytes) into the lease file; holder only."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.pwrite(self._fd, note[: self.NOTE_SIZE].ljust(self.NOTE_SIZE, b" "), 0)

    def probe(self) -> bool:
        """Whether some process (this one included) holds the lease right now."""
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # also drops the shared lock a free lease gave us
        return False

    def read_note(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                return f.read(self.NOTE_SIZE).rstrip(b" \x00")
        except OSError:
            return b""
