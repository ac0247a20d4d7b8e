"""Where the parallel rebuild's two processes spend their time (a measuring aid).

Each process of `projections.pipeline` marks the end of each phase of its loop (`mark`: a
few hundred per GB of log: nothing measurable). When `PATH` names a file (the CLI sets it
from the environment variable `AGENTLOG_PIPE_STATS` for a cold capture's build, and the
building process hands it to its parse process), `dump(role)` appends one JSON line to it
at the end of the process's load: its role and, per phase, the wall seconds, the seconds on
a CPU and the seconds runnable but waiting for one (Linux `schedstat`; the rest of the wall
time is time blocked: a read, a write, a sleep), and the garbage collector's pauses.
Nothing else reads these; they change no result.
"""

from __future__ import annotations

import json
import time

PATH: str | None = None
totals: dict[str, list[float]] = {}  # phase -> [wall, cpu, runqueue wait, count]
amounts: dict[str, int] = {}  # name -> sum (bytes sent, parts packed, ...)
_last = [0.0, 0.0, 0.0]
_first = [0.0, 0.0, 0.0]


def _now() -> list[float]:
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            run, wait, _ = f.read().split()
        return [time.perf_counter(), int(run) / 1e9, int(wait) / 1e9]
    except (OSError, ValueError):
        return [time.perf_counter(), time.thread_time(), 0.0]


def start() -> None:
    if PATH:
        totals.clear()
        amounts.clear()
        _last[:] = _first[:] = _now()
        import gc

        if _gc not in gc.callbacks:
            gc.callbacks.append(_gc)


_gc_start = [0.0]


def _gc(phase: str, info: dict[str, int]) -> None:
    """The garbage collector's pauses (microseconds, by generation) in `amounts`."""
    if phase == "start":
        _gc_start[0] = time.perf_counter()
    else:
        gen = info.get("generation", 0)
        count(f"gc{gen}_us", int((time.perf_counter() - _gc_start[0]) * 1e6))
        count(f"gc{gen}_n")


def mark(phase: str) -> None:
    """The phase that just ended (since the last mark)."""
    if not PATH:
        return
    now = _now()
    row = totals.setdefault(phase, [0.0, 0.0, 0.0, 0])
    for i in range(3):
        row[i] += now[i] - _last[i]
    row[3] += 1
    _last[:] = now


def count(name: str, n: int = 1) -> None:
    if PATH:
        amounts[name] = amounts.get(name, 0) + n


def dump(role: str) -> None:
    path = PATH
    if not path:
        return
    now = _now()
    line = {"role": role, "total": [round(now[i] - _first[i], 3) for i in range(3)],
            "phases": {k: [round(x, 3) for x in v] for k, v in sorted(totals.items())},
            "amounts": amounts}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
