"""Where a cold capture's cores go, second by second: CPU per process of the tree.

Runs `agentlog capture --json` of a synthetic home (bench/cold.py's roots) into an empty
home and samples /proc every `--interval` seconds: each process of the tree (the capture
process, the builder `projections.follow`, the parse process `projections.pipeline`) with
its CPU seconds (user + system) per wall second, so 1.00 is one core busy. At the end: CPU
seconds per process, wall, CPU / wall, and the sampler's own CPU (it runs on the same two
cores: subtract it when reading the sum).

Usage: .venv/bin/python bench/timeline.py --src /tmp/b13/src [--tree DIR] [--interval 0.2]
                                          [--bin 1.0]
                                          [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cold import child_env
from common import ROOT, load_average, workdir

AGENTS = ("claude", "codex", "opencode")
ROLES = (("projections.follow", "builder"), ("projections.pipeline", "parse"),
         ("cli.main", "capture"))
TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            pass
    return out


def _tree(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo += _children(pid)
    return pids


def _cpu(pid: int) -> float | None:
    """User + system CPU seconds of `pid` (its threads included), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def _role(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"
    return next((name for key, name in ROLES if key in cmd), cmd[:20])


def sample(cmd: list[str], env: dict[str, str], cwd: Path, interval: float,
           width: float = 1.0) -> None:
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    t0 = time.perf_counter()
    last: dict[int, float] = {}
    roles: dict[int, str] = {}
    bins: dict[int, dict[str, float]] = {}
    while proc.poll() is None:
        now = time.perf_counter() - t0
        for pid in _tree(proc.pid):
            cpu = _cpu(pid)
            if cpu is None:
                continue
            if pid not in roles or (pid != proc.pid and roles[pid] == "capture"):
                # a child seen between its fork and its exec still shows the capture's
                # command line: read it again until it shows its own
                roles[pid] = _role(pid)
            prev = last.get(pid, 0.0)
            last[pid] = cpu
            row = bins.setdefault(int(now / width), {})
            row[roles[pid]] = row.get(roles[pid], 0.0) + cpu - prev
        time.sleep(interval)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"capture failed ({proc.returncode})")
    names = sorted({r for r in roles.values()})
    print("    from  " + "  ".join(f"{n:>8}" for n in names) + "     sum  (CPU s per wall s)")
    for sec in sorted(bins):
        row = bins[sec]
        print(f"  {sec * width:6.1f}  "
              + "  ".join(f"{row.get(n, 0.0) / width:8.2f}" for n in names)
              + f"  {sum(row.values()) / width:6.2f}")
    totals = {n: 0.0 for n in names}
    for pid, cpu in last.items():
        totals[roles[pid]] += cpu
    print(f"  wall {wall:.2f} s (the last sample may miss a process's final ~{interval} s);"
          " CPU seconds per process: "
          + ", ".join(f"{n} {c:.2f}" for n, c in totals.items())
          + f"; CPU/wall {sum(totals.values()) / wall:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, required=True, help="a home bench/cold.py wrote")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the agentlog tree to run")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--bin", type=float, default=1.0, help="seconds per printed row")
    ap.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    args = ap.parse_args()
    with workdir(args.keep, "agentlog-bench-timeline-") as work:
        home, user = work / "home", work / "user"
        shutil.rmtree(home, ignore_errors=True)
        user.mkdir(parents=True, exist_ok=True)
        env = child_env(user)
        flags = [f"--{a}-dir={args.src / a}" for a in AGENTS] + [f"--runs-dir={work / 'none'}"]
        cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--json",
               *flags]
        print(f"timeline of a cold capture of {args.src} with {args.tree}, load"
              f" {load_average()}")
        s0 = time.process_time()
        sample(cmd, env, args.tree, args.interval, args.bin)
        print(f"  this sampler's own CPU: {time.process_time() - s0:.2f} s")


if __name__ == "__main__":
    main()
