"""The unfinished last line waits, end to end: through each front door a capture takes
(`agentlog capture`, `capture --path`, an agent's hook), a source whose last line is still
being written restores without that line, and once the line is finished, with it.

The engine's own test (`test_capture.py::test_torn_tail_waits`) passes `settle` explicitly;
these run the commands as users and agents do, with the defaults they ship (a 2 s settle),
so a default or a path that takes a torn tail at once fails here. While a command runs, a
thread keeps touching the source (an agent still writing it): its mtime stays within
milliseconds of now, however slowly the machine runs the child process, yet never after it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.capture_helpers import append, write
from tests.conftest import run_cli

FINISHED = b'{"a":1}\n'
UNFINISHED = b'{"b":2'


@contextmanager
def _writing(f: Path) -> Iterator[None]:
    """The agent is still writing `f`: its mtime is set to now every 20 ms meanwhile."""
    done = threading.Event()

    def touch() -> None:
        while not done.wait(0.02):
            os.utime(f)

    os.utime(f)
    toucher = threading.Thread(target=touch, daemon=True)
    toucher.start()
    try:
        yield
    finally:
        done.set()
        toucher.join()


def _restored(home: Path, tmp_path: Path, name: str) -> bytes:
    out = tmp_path / name
    p = run_cli(home, "restore", "--to", str(out))
    assert p.returncode == 0, p.stderr.decode()
    return (out / "claude" / "projects" / "-p" / "s1.jsonl").read_bytes()


def _capture(home: Path, how: str, f: Path) -> None:
    if how == "capture":
        p = run_cli(home, "capture")
    elif how == "capture --path":
        p = run_cli(home, "capture", "--path", str(f))
    else:  # Claude Code's Stop hook: the session goes on, its last line may be unfinished
        payload = {"transcript_path": str(f), "hook_event_name": "Stop"}
        p = run_cli(home, "hooks", "run", "claude", input=json.dumps(payload).encode())
        assert not p.stderr, p.stderr.decode()
    assert p.returncode == 0, p.stderr.decode()


@pytest.mark.parametrize("how", ["capture", "capture --path", "hooks run claude"])
def test_unfinished_last_line_waits(home: Path, tmp_path: Path, how: str) -> None:
    f = write(Path(os.environ["HOME"]) / ".claude" / "projects" / "-p" / "s1.jsonl",
              FINISHED + UNFINISHED)
    with _writing(f):
        _capture(home, how, f)
    assert _restored(home, tmp_path, "o1") == FINISHED
    append(f, b"}\n")
    with _writing(f):
        _capture(home, how, f)
    assert _restored(home, tmp_path, "o2") == FINISHED + UNFINISHED + b"}\n"
