"""Benchmark of +1 session: one new transcript captured and searchable, also right after a rebuild.

Builds a synthetic three-agent home (bench/capture.py writes it), captures it with indexing,
then, as whole `agentlog` processes:
- right after `agentlog reindex` (a fresh history.db): `--sessions` times, write one new Claude
  session file, `agentlog capture` (which catches history.db up), then check that
  `agentlog search --json` finds the new session's unique word;
- the same again in steady state (after those captures);
- as floors in the same run: a no-change `agentlog capture` and `python -c pass`.
Prints p50/p95 of the capture step (the search step is only a check) against the goal
(<= 0.15 s p95) and the floors.

Usage: .venv/bin/python bench/incremental.py [--quick] [--sessions N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from capture import _claude_line, write_home  # noqa: E402  (the capture bench's home)

# bytecode is written (a user's install has it): a PYTHONDONTWRITEBYTECODE environment would
# otherwise compile every module on every run and time the compiler
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cli(home: Path, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), *args],
                          cwd=ROOT, capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"agentlog {args[:2]} failed: {proc.stderr[-2000:]}")
    return took, proc.stdout


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def new_sessions(src: Path, home: Path, flags: list[str], n: int, tag: str) -> list[float]:
    rng = random.Random(tag)
    out = []
    for i in range(n):
        word = f"zq{tag}{i:04d}x"
        path = src / "claude" / "projects" / f"-w-{tag}" / f"{tag}-{i:04d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [_claude_line(rng, f"{tag}{i}", j, 60) for j in range(40)]
        rec = json.loads(lines[0])
        rec["message"]["content"] = f"please look at {word}"
        lines[0] = json.dumps(rec).encode() + b"\n"
        path.write_bytes(b"".join(lines))
        took, _ = cli(home, "capture", "--json", *flags)
        out.append(took)
        _, found = cli(home, "search", "--json", word)
        if not json.loads(found)["hits"]:
            raise SystemExit(f"the new session's word {word} is not searchable after capture")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a ~12 MB home")
    ap.add_argument("--sessions", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    args = ap.parse_args()
    n = args.sessions or (6 if args.quick else 12)
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="agentlog-bench-inc-")
    work = args.keep or Path(tmp.name)  # type: ignore[union-attr]
    src, home = work / "src", work / "home"
    if not (src / "claude").is_dir():
        write_home(src, 600 if args.quick else 6000, (12 << 20) if args.quick else (250 << 20),
                   0)
    flags = [f"--{a}-dir={src / a}" for a in ("claude", "codex", "opencode")]
    flags.append(f"--runs-dir={work / 'no-runs'}")
    cold, _ = cli(home, "capture", "--json", *flags)
    print(f"+1 session bench: home captured and indexed in {cold:.1f} s")
    reindex, _ = cli(home, "reindex", "--json")
    after = new_sessions(src, home, flags, n, f"r{int(time.time()) % 10000}")
    steady = new_sessions(src, home, flags, n, f"s{int(time.time()) % 10000}")
    nochange = [cli(home, "capture", "--json", *flags)[0] for _ in range(max(3, n // 2))]
    floor = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=ENV)
        floor.append(time.perf_counter() - t0)
    print(f"  reindex {reindex:.1f} s; floors: no-change capture p50"
          f" {statistics.median(nochange):.3f} s, python -c pass {statistics.median(floor):.3f} s")
    for label, xs in (("right after a rebuild", after), ("steady state", steady)):
        p95 = pct(xs, 95)
        print(f"  +1 session {label}: p50 {statistics.median(xs):.3f} s, p95 {p95:.3f} s,"
              f" first {xs[0]:.3f} s (goal p95 <= 0.15 s: {'met' if p95 <= 0.15 else 'NOT met'};"
              f" p95 / no-change capture {p95 / statistics.median(nochange):.2f}x)")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
