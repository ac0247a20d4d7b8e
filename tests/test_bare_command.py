"""Bare `agentlog`: on a terminal it opens `browse`; in a pipe it prints the help as before.

The terminal is a real pseudo-terminal (`pty.openpty`): the child's standard input, output
and error are its slave end, we read the screen Textual draws from the master end, and
leave with Escape.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("bare") / "home"
    proc = run_cli(home, "demo")
    assert proc.returncode == 0, proc.stderr.decode()
    return home


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "AGENTLOG_HOME": str(home), "TERM": "xterm-256color",
            "COLUMNS": "120", "LINES": "40"}


def test_bare_agentlog_in_a_pipe_prints_the_help(demo_home: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cli.main"], env=_env(demo_home),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith(b"Usage: agentlog [OPTIONS] COMMAND [ARGS]...")  # as before
    assert b"browse" in proc.stderr and b"\x1b[" not in proc.stderr and proc.stdout == b""


def _read_until(fd: int, want: bytes, seconds: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while want not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the child closed its end
                break
    return seen


def test_bare_agentlog_on_a_terminal_opens_browse(demo_home: Path) -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "cli.main"], env=_env(demo_home),
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        screen = _read_until(master, b"search your agents", 60)
        assert b"search your agents" in screen, screen[-2000:]  # the browser's query line
        assert b"Usage:" not in screen
        os.write(master, b"\x1b")  # Escape leaves
        rest = _read_until(master, b"\x00never", 3)
        assert proc.wait(timeout=30) == 0, rest[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
