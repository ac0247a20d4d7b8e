"""Frames cross a pipe whole while either end is stopped and continued (Ctrl-Z and `fg`,
a debugger or a profiler attaching): write(2) and read(2) then move fewer bytes than asked,
and every byte still has to arrive, in order (projections/frames.py).

Real processes, a real pipe: a child writes (or reads) frames of sizes from a few bytes to
well past the pipe's capacity while another thread stops and continues it every few
milliseconds; every frame must come out as it went in, with PYTHONUNBUFFERED set (the
child's `sys.stdout.buffer` is then the raw file) and without."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from projections import frames
from tests.conftest import ROOT, stop_and_continue

SIZES = (0, 7, 4_000, 70_000, 300_000, 1_500_000)
COUNT = 300

_PRELUDE = (f"import random, sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from projections import frames\n")
_WRITER = _PRELUDE + f"""
r = random.Random(int(sys.argv[1]))
for i in range({COUNT}):
    frames.write(sys.stdout.buffer, (i, bytes([i % 251]) * r.choice({SIZES!r})))
frames.write(sys.stdout.buffer, None)
"""
_READER = _PRELUDE + f"""
r = random.Random(int(sys.argv[1]))
for i in range({COUNT}):
    v = frames.read(sys.stdin.buffer)
    assert v == (i, bytes([i % 251]) * r.choice({SIZES!r})), (i, None if v is None else v[0])
assert frames.read(sys.stdin.buffer) is None
print("ok")
"""


def _env(unbuffered: bool) -> dict[str, str]:
    """This environment, with PYTHONUNBUFFERED set or not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def _payloads(seed: int) -> Iterator[tuple[int, bytes]]:
    r = random.Random(seed)
    for i in range(COUNT):
        yield i, bytes([i % 251]) * r.choice(SIZES)


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX job control only")
@pytest.mark.parametrize("unbuffered", [True, False], ids=["PYTHONUNBUFFERED", "buffered"])
def test_frames_from_a_writer_stopped_and_continued_arrive_whole(unbuffered: bool) -> None:
    # PYTHONUNBUFFERED: sys.stdout.buffer is the raw file, which writes part of a frame
    seed = 11
    env = _env(unbuffered)
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(seed)],
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    frames.widen(proc.stdout.fileno(), 1 << 20)
    try:
        with stop_and_continue(proc.pid) as stops:
            got = []
            while (value := frames.read(proc.stdout)) is not None:
                got.append(value)
        assert proc.wait(30) == 0
        assert stops[0] > 10
        assert got == list(_payloads(seed))
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX job control only")
@pytest.mark.parametrize("unbuffered", [True, False], ids=["PYTHONUNBUFFERED", "buffered"])
def test_frames_to_a_reader_stopped_and_continued_arrive_whole(unbuffered: bool) -> None:
    seed = 12
    env = _env(unbuffered)
    proc = subprocess.Popen([sys.executable, "-c", _READER, str(seed)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        with stop_and_continue(proc.pid) as stops:
            for value in _payloads(seed):
                frames.write(proc.stdin, value)
            proc.stdin.close()
            said = proc.stdout.read()
        assert proc.wait(30) == 0, said
        assert said.strip() == b"ok"
        assert stops[0] > 10
    finally:
        proc.kill()
        proc.wait()


def test_a_stream_that_ends_inside_a_frame_reads_as_its_end() -> None:
    r, w = os.pipe()
    with os.fdopen(r, "rb") as rs, os.fdopen(w, "wb") as ws:
        frames.write(ws, {"a": 1})
        ws.write(b"\0\0\0\0\0\0\1\0" + b"x" * 10)  # a head promising 256 bytes, 10 sent
        ws.close()
        assert frames.read(rs) == {"a": 1}
        assert frames.read(rs) is None
