"""Crash safety and the cross-process writer lock, with real child processes.

- A child appends batches in a loop, printing each committed batch; it is SIGKILLed at
  random moments. After every kill the log verifies, every reported batch is present
  and no batch is partial.
- A second writer waits for the lock, and fails with WriterBusy (a clear message) once
  its timeout passes.
- Two processes appending at once never interleave within a batch and never duplicate.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from eventlog import EventLog, WriterBusy
from eventlog.events import OperationRecorded, WriterStarted
from eventlog.verify import scan, verify_isolated

ROOT = Path(__file__).resolve().parent.parent

APPENDER = r"""
import random, sys
from pathlib import Path
from eventlog import EventLog
from eventlog.events import OperationRecorded

path, tag, batches, shared = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
rng = random.Random(tag)
log = EventLog(Path(path), command="crash-test", lock_timeout=60)
i = 0
while batches == 0 or i < batches:
    n = rng.randint(1, 20)
    if shared and i % 3 == 0:
        n = 10 + i % 7  # the same keys in both processes
        keys = [f"shared:{i}:{j}" for j in range(n)]
    else:
        keys = [f"{tag}:{i}:{j}" for j in range(n)]
    pad = "p" * rng.randint(0, 300)
    details = {"tag": tag, "b": i, "n": n, "pad": pad}
    batch = [(k.encode(), OperationRecorded(op="batch", at=i, details=details)) for k in keys]
    res = log.append(batch)
    print(f"{tag} {i} {n} {res.appended} {res.head}", flush=True)
    i += 1
"""


def start_appender(
    path: Path, tag: str, batches: int = 0, shared: bool = False
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), tag, str(batches), "1" if shared else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def batches_in(path: Path) -> tuple[dict[tuple[str, int], list[int]], dict[tuple[str, int], int]]:
    """(batch -> seqs, batch -> declared size) of every OperationRecorded batch in the log."""
    seqs: dict[tuple[str, int], list[int]] = defaultdict(list)
    sizes: dict[tuple[str, int], int] = {}
    with EventLog(path, readonly=True) as log:
        for ev in log.iter_events():
            if isinstance(ev.event, OperationRecorded):
                d = ev.event.details
                tag = str(d["tag"]) if not ev.key.startswith(b"shared:") else "shared"
                seqs[(tag, int(d["b"]))].append(ev.seq)
                sizes[(tag, int(d["b"]))] = int(d["n"])
    return seqs, sizes


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_committed_batch(tmp_path: Path) -> None:
    path = tmp_path / "log"
    rng = random.Random(20261129)
    reported: dict[tuple[str, int], int] = {}
    silent: set[tuple[str, int]] = set()  # committed, killed before it could print
    rounds = 32
    for r in range(rounds):
        tag = f"r{r}"
        proc = start_appender(path, tag)
        first = ""
        if r % 4 == 0:  # anywhere from start-up (opening the env) to the first batches
            time.sleep(rng.uniform(0.0, 0.25))
        else:  # somewhere in the write loop
            assert proc.stdout is not None
            first = proc.stdout.readline()
            time.sleep(rng.uniform(0.0, 0.08))
        proc.send_signal(signal.SIGKILL)
        assert proc.stdout is not None and proc.stderr is not None
        # Read on through the same buffered reader: lines that readline() already pulled
        # into its buffer are not lost (communicate() would read the raw pipe past them).
        out = first + proc.stdout.read()
        proc.stderr.read()
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        for line in out.splitlines():
            t, i, n, appended, _head = line.split()
            assert int(appended) == int(n)
            reported[(t, int(i))] = int(n)

        with EventLog(path) as log:  # a writer open after the kill: stale lock is no issue
            report = scan(log)
        assert report.ok, f"round {r}: {report.problems}"
        seqs, sizes = batches_in(path)
        for key, n in reported.items():
            assert len(seqs.get(key, [])) == n, f"round {r}: reported batch {key} not whole"
        unreported = [k for k in seqs if k not in reported and k not in silent]
        # at most the batch committed between the commit and the print of this round
        assert all(k[0] == tag for k in unreported) and len(unreported) <= 1, unreported
        silent.update(unreported)
        for key, got in seqs.items():
            assert len(got) == sizes[key], f"partial batch {key}"
            assert got == list(range(got[0], got[0] + len(got))), f"batch {key} not contiguous"
        if r % 10 == 9:
            iso = verify_isolated(path)
            assert iso.ok and iso.structural == "ok", iso.problems
    assert len(reported) >= rounds // 2, "the child hardly ever committed: proves nothing"


HOLDER = r"""
import sys, time
from pathlib import Path
from eventlog import EventLog
log = EventLog(Path(sys.argv[1]))
with log.exclusive():
    print("locked", flush=True)
    if sys.argv[2] == "stdin":  # hold until told to let go
        sys.stdin.readline()
    else:
        time.sleep(float(sys.argv[2]))
print("released", flush=True)
"""


def hold_lock(path: Path, seconds: float | str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def op(key: str) -> tuple[bytes, OperationRecorded]:
    return key.encode(), OperationRecorded(op="x", at=1, details={"tag": "t", "b": 0, "n": 1})


def test_second_writer_times_out_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "log"
    EventLog(path).close()
    holder = hold_lock(path, 30)
    try:
        log = EventLog(path, lock_timeout=0.6)
        t0 = time.monotonic()
        with pytest.raises(WriterBusy) as err:
            log.append([op("a")])
        assert time.monotonic() - t0 >= 0.6  # it waited out its timeout (a lower bound only)
        msg = str(err.value)
        assert "another agentlog process is writing" in msg and str(path) in msg
        assert f"(pid {holder.pid} on " in msg and "gave up after waiting 0.6 s" in msg
        assert log.head().seq == 0
        log.close()
    finally:
        holder.kill()
        holder.wait()


def test_second_writer_waits_for_the_first(tmp_path: Path) -> None:
    path = tmp_path / "log"
    EventLog(path).close()
    holder = hold_lock(path, "stdin")
    try:
        with EventLog(path, lock_timeout=60) as log:
            done: list[int] = []
            t = threading.Thread(target=lambda: done.append(log.append([op("a")]).appended))
            t.start()
            t.join(0.5)
            assert t.is_alive() and not done, "appended while another process held the lock"
            assert holder.stdin is not None
            holder.stdin.write("go\n")
            holder.stdin.flush()
            t.join(60)
            assert done == [1]
        assert holder.wait(10) == 0
    finally:
        holder.kill()
        holder.wait()


def test_concurrent_appenders_never_interleave_or_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "log"
    EventLog(path).close()
    procs = [start_appender(path, tag, batches=60, shared=True) for tag in ("p", "q")]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out)
    with EventLog(path, readonly=True) as log:
        report = scan(log)
        events = list(log.iter_events())
    assert report.ok, report.problems
    keys = [e.key for e in events]
    assert len(keys) == len(set(keys))
    # each committed batch is a contiguous run of seqs (its writer event may precede it)
    runs: dict[tuple[str, int], list[int]] = defaultdict(list)
    for e in events:
        if isinstance(e.event, WriterStarted):
            continue
        d = e.event.details  # type: ignore[union-attr]
        runs[(str(d["tag"]), int(d["b"]))].append(e.seq)
    for key, seqs in runs.items():
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"batch {key} interleaved"
    # a shared batch is appended whole by exactly one process; the other sees duplicates
    shared_total = 0
    for out in outs:
        for line in out.splitlines():
            _tag, i, n, appended, _ = line.split()
            if int(i) % 3 == 0:
                assert int(appended) in (0, int(n))
                shared_total += int(appended)
            else:
                assert int(appended) == int(n)
    assert shared_total == sum(1 for k in keys if k.startswith(b"shared:"))
    writers = [e for e in events if isinstance(e.event, WriterStarted)]
    assert len(writers) == 2 and {w.event.pid for w in writers} == {p.pid for p in procs}  # type: ignore[union-attr]
    assert os.path.exists(path / "writer.lock")
