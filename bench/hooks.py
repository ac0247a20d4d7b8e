"""Benchmark of the hook path: `agentlog hooks run` / `capture --path` on a 6,000-file history.

    .venv/bin/python bench/hooks.py --quick   # 6,000 small files (~12 MB)
    .venv/bin/python bench/hooks.py           # 6,000 files (~250 MB)

Writes a synthetic home (bench/capture.py's generator), captures and indexes it once, then
appends a few lines to one Claude session (or Codex rollout) and times the whole process
that an agent's hook starts, as the agent starts it: `hooks run claude` with the hook JSON
on stdin, `hooks run codex PAYLOAD` (rollout found by thread id), `capture --path FILE`.
Goal: <= 0.2 s per whole process. Baselines measured in the same run: a bare
`python -c pass` and `agentlog --version` (interpreter + click start-up). Each row also
gives the process's CPU seconds (user + sys), which a busy shared machine inflates far less
than wall time.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from capture import ENV, _claude_line, _codex_line, write_home  # noqa: E402

CPU: dict[str, list[float]] = {}  # command label -> child CPU seconds (user + sys)


def timed(cmd: list[str], stdin: bytes | None = None, label: str = "") -> float:
    """Wall seconds of one whole process; its CPU seconds go to CPU[label]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, cwd=ROOT, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(label, []).append(after.ru_utime - before.ru_utime
                                     + after.ru_stime - before.ru_stime)
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"{' '.join(cmd[:6])}… failed: {proc.stderr.decode()[:500]}")
    return wall


def stats(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(times):.3f} s, p95 {p95:.3f} s, best {min(times):.3f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small files (~1-2 minutes)")
    ap.add_argument("--files", type=int, default=6000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    target = 12 << 20 if args.quick else 250 << 20
    tmp = Path(tempfile.mkdtemp(prefix="agentlog-bench-hooks-"))
    ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    try:
        roots = write_home(tmp / "src", args.files, target, 0)
        ENV["CLAUDE_CONFIG_DIR"] = str(roots["claude"])
        ENV["CODEX_HOME"] = str(roots["codex"])
        ENV["XDG_DATA_HOME"] = str(roots["opencode"].parent / "no-xdg")
        ENV["AGENTLOG_RUNS_DIR"] = str(tmp / "no-runs")
        home = tmp / "home"
        agentlog = [sys.executable, "-m", "cli.main", "--home", str(home)]
        t0 = time.perf_counter()
        subprocess.run([*agentlog, "capture", "--json", "--claude-dir", str(roots["claude"]),
                        "--codex-dir", str(roots["codex"]), "--opencode-dir",
                        str(roots["opencode"])], check=True, capture_output=True, cwd=ROOT,
                       env=ENV)
        n = sum(1 for r in roots.values() for p in r.rglob("*") if p.is_file())
        print(f"history: {n} files captured and indexed in {time.perf_counter() - t0:.1f} s")
        rng = random.Random(3)
        session = next(iter(sorted((roots["claude"] / "projects").rglob("*.jsonl"))))
        rollout = next(iter(sorted((roots["codex"] / "sessions").rglob("*.jsonl"))))
        thread = rollout.name[len("rollout-2025-01-01T00-00-00-"):-len(".jsonl")]
        base_py = [timed([sys.executable, "-c", "pass"], label="py") for _ in range(args.runs)]
        base_cli = [timed([*agentlog, "--version"], label="cli") for _ in range(args.runs)]
        print(f"baseline python -c pass: {stats(base_py)}; CPU {stats(CPU['py'])}")
        print(f"baseline agentlog --version: {stats(base_cli)}; CPU {stats(CPU['cli'])}")
        rows: dict[str, list[float]] = {"hooks run claude": [], "hooks run codex": [],
                                         "capture --path": [], "hooks run claude (no change)": []}
        for i in range(args.runs):
            with open(session, "ab") as f:
                f.write(b"".join(_claude_line(rng, "bench", 10_000 + 3 * i + j, 60)
                                 for j in range(3)))
            payload = json.dumps({"session_id": "x", "transcript_path": str(session),
                                  "hook_event_name": "SessionEnd"}).encode()
            rows["hooks run claude"].append(timed([*agentlog, "hooks", "run", "claude"],
                                                  payload, "hooks run claude"))
            rows["hooks run claude (no change)"].append(
                timed([*agentlog, "hooks", "run", "claude"], payload,
                      "hooks run claude (no change)"))
            with open(rollout, "ab") as f:
                f.write(_codex_line(rng, i, 60))
            note = json.dumps({"type": "agent-turn-complete", "thread-id": thread})
            rows["hooks run codex"].append(timed([*agentlog, "hooks", "run", "codex", note],
                                                 label="hooks run codex"))
            with open(session, "ab") as f:
                f.write(_claude_line(rng, "bench", 20_000 + i, 60))
            rows["capture --path"].append(timed([*agentlog, "capture", "--path", str(session),
                                                 "--json"], label="capture --path"))
        cli = statistics.median(base_cli)
        for name, times in rows.items():
            what = name if "no change" in name else f"{name} (3 new lines, indexed)"
            print(f"{what}: wall {stats(times)}; ratio to agentlog --version "
                  f"{statistics.median(times) / cli:.2f}x (goal <= 0.2 s); "
                  f"CPU {stats(CPU[name])}")
        print("(CPU = the process's user + sys seconds: what the wall time would be on an idle "
              "machine, less I/O waits)")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
