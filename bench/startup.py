"""Benchmark of the first answer: whole-process search and MCP start-up, against peers and floors.

Builds a synthetic three-agent home (bench/capture.py writes it), captures it, then measures,
interleaved so that a noisy shared machine hits every column alike (medians of `--reps`):
- `python -c pass` (the interpreter floor);
- `agentlog search --json` for a needle (one session holds it), whole process; and for two
  common words (nearly every record);
- claude-session-search's query (`cc_search.server.api_search`, whole process) over the same
  Claude files, installed from PyPI into a temporary venv; skipped, saying so, when it cannot
  be installed; its `--reindex` of those files is timed once as well (for reference);
- `agentlog mcp` spawn -> initialize -> tools/list answered (raw JSON-RPC over the pipes),
  against a bare `python -c "import mcp.server.lowlevel, mcp.server.stdio"` (goal <= 1.25x).
agentlog is timed as a user installs it: a plain `pip install` of this tree into a temporary
venv (`--editable` times this venv's editable install instead, whose .pth finder adds to every
interpreter start), next to each venv's own `python -c pass`.

Usage: .venv/bin/python bench/startup.py [--quick] [--reps N] [--keep DIR] [--editable]
       [--baseline REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, css_query, export_rev, install_agentlog, install_css, workdir

BIN = Path(sys.executable).parent
NEEDLE = "zanzibarquux"  # one session holds it (a needle); COMMON matches nearly every record
COMMON = "refactor parser"
_CSS_QUERY = css_query(200)


_AGENTLOG: list[Path] = []


def agentlog_cmd() -> list[str]:
    """The installed `agentlog` (a plain install made by `install_agentlog`, else this venv's,
    which is editable: its .pth finder costs every interpreter start of that venv)."""
    if _AGENTLOG:
        return [str(_AGENTLOG[0] / "bin" / "agentlog")]
    exe = BIN / "agentlog"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "cli.main"]


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, env=env, cwd=ROOT)
    return (time.perf_counter() - t0) * 1000


def mcp_spawn(home: Path) -> float:
    """ms from spawning `agentlog mcp` until its tools/list answer arrives."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}
    msgs = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    t0 = time.perf_counter()
    proc = subprocess.Popen([*agentlog_cmd(), "--home", str(home), "mcp"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
    proc.stdin.flush()
    took = None
    for line in proc.stdout:
        msg = json.loads(line)
        if msg.get("id") == 2:
            if not msg.get("result", {}).get("tools"):
                raise SystemExit(f"tools/list answered without tools: {msg}")
            took = (time.perf_counter() - t0) * 1000
            break
    proc.stdin.close()
    proc.wait(timeout=30)
    if took is None:
        raise SystemExit("agentlog mcp never answered tools/list")
    return took


def build(work: Path, quick: bool) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "bench"))
    from capture import write_home  # the capture bench's synthetic home

    src = work / "src"
    if not (src / "claude").is_dir():
        write_home(src, 600 if quick else 3000, (12 << 20) if quick else (120 << 20), 0)
        needle = src / "claude" / "projects" / "-w-needle" / "needle-session.jsonl"
        needle.parent.mkdir(parents=True, exist_ok=True)
        rec = {"type": "user", "sessionId": "needle-session", "uuid": "needle-000001",
               "cwd": "/w/p", "timestamp": "2026-04-07T15:31:35.362Z",
               "message": {"role": "user", "content": f"where is the {NEEDLE} bug"}}
        needle.write_text(json.dumps(rec) + "\n")
    home = work / "home"
    if not (home / "history.db").exists():
        flags = [f"--{a}-dir={src / a}" for a in ("claude", "codex", "opencode")]
        subprocess.run([*agentlog_cmd(), "--home", str(home), "capture", "--json", *flags,
                        f"--runs-dir={work / 'no-runs'}"], check=True, capture_output=True,
                       cwd=ROOT)
    return src, home


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a ~12 MB home, fewer repetitions")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    ap.add_argument("--editable", action="store_true",
                    help="time this venv's editable agentlog instead of a plain install")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also time `agentlog search --json` of git revision REV (same run)")
    args = ap.parse_args()
    reps = args.reps or (9 if args.quick else 21)
    with workdir(args.keep, "agentlog-bench-start-") as work:
        run(work, args, reps)


def run(work: Path, args: argparse.Namespace, reps: int) -> None:
    if not args.editable:
        shutil.rmtree(work / "agentlog-venv", ignore_errors=True)  # always this tree's code
        _AGENTLOG.append(install_agentlog(work / "agentlog-venv"))
    base_cmd: list[str] | None = None
    if args.baseline:
        bvenv = work / "baseline-venv"
        shutil.rmtree(bvenv, ignore_errors=True)
        install_agentlog(bvenv, export_rev(args.baseline, work / "baseline-src"))
        base_cmd = [str(bvenv / "bin" / "agentlog")]
    src, home = build(work, args.quick)
    print(f"start-up bench: {reps} interleaved runs, load {os.getloadavg()[0]:.1f} on"
          f" {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    css_py = install_css(work / "css-venv")
    css_env = None
    if css_py is not None:
        fake = work / "css-home"
        (fake / ".claude").mkdir(parents=True, exist_ok=True)
        link = fake / ".claude" / "projects"
        if not link.exists():
            link.symlink_to(src / "claude" / "projects")
        css_env = {**os.environ, "HOME": str(fake)}
        t0 = time.perf_counter()
        subprocess.run([str(css_py), "-m", "cc_search", "--reindex"], check=True,
                       capture_output=True, env=css_env)
        print(f"  claude-session-search --reindex of the Claude files:"
              f" {time.perf_counter() - t0:.1f} s (reference)")
    al_py = _AGENTLOG[0] / "bin" / "python" if _AGENTLOG else Path(sys.executable)
    cols: dict[str, list[float]] = {"python -c pass": [], "agentlog venv python -c pass": [],
                                    "agentlog search --json (common)": [],
                                    "claude-session-search query (common)": [],
                                    "cc-search venv python -c pass": [],
                                    "agentlog search --json": [],
                                    "claude-session-search query": [],
                                    "bare mcp SDK import": [], "agentlog mcp -> tools/list": []}
    search = [*agentlog_cmd(), "--home", str(home), "search", "--json", NEEDLE]
    if not json.loads(subprocess.run(search, capture_output=True, check=True).stdout)["hits"]:
        raise SystemExit(f"the needle {NEEDLE} is not found")
    base_home = work / "home-baseline"
    if base_cmd is not None:  # its own copy: the baseline may use another schema version
        shutil.rmtree(base_home, ignore_errors=True)
        shutil.copytree(home, base_home)
        cols[f"agentlog@{args.baseline} search --json"] = []
        base_search = [*base_cmd, "--home", str(base_home), "search", "--json", NEEDLE]
        timed(base_search)
    for _ in range(reps):
        cols["python -c pass"].append(timed([sys.executable, "-c", "pass"]))
        cols["agentlog venv python -c pass"].append(timed([str(al_py), "-c", "pass"]))
        if css_py is not None:
            cols["cc-search venv python -c pass"].append(timed([str(css_py), "-c", "pass"]))
        cols["agentlog search --json"].append(timed(search))
        if base_cmd is not None:
            cols[f"agentlog@{args.baseline} search --json"].append(timed(base_search))
        if css_py is not None:
            cols["claude-session-search query"].append(
                timed([str(css_py), "-c", _CSS_QUERY, NEEDLE], env=css_env))
            cols["claude-session-search query (common)"].append(
                timed([str(css_py), "-c", _CSS_QUERY, COMMON], env=css_env))
        cols["agentlog search --json (common)"].append(timed([*search[:-1], COMMON]))
        cols["bare mcp SDK import"].append(
            timed([str(al_py), "-c", "import mcp.server.lowlevel, mcp.server.stdio"]))
        cols["agentlog mcp -> tools/list"].append(mcp_spawn(home))
    p50 = {k: statistics.median(v) for k, v in cols.items() if v}
    for name, ms in p50.items():
        print(f"  {name:<30} p50 {ms:7.1f} ms")
    s = p50["agentlog search --json"]
    if base_cmd is not None:
        b0 = p50[f"agentlog@{args.baseline} search --json"]
        print(f"search vs the baseline {args.baseline}: {s / b0:.2f}x")
    if "claude-session-search query" in p50:
        c = p50["claude-session-search query"]
        print(f"search vs claude-session-search: {s / c:.2f}x (goal <= 1.0:"
              f" {'met' if s <= c else 'NOT met'})")
        c2 = p50["claude-session-search query (common)"]
        s2 = p50["agentlog search --json (common)"]
        print(f"common terms ({COMMON!r}) vs claude-session-search: {s2 / c2:.2f}x")
    else:
        print("search vs claude-session-search: skipped (not installable here)")
    m, b = p50["agentlog mcp -> tools/list"], p50["bare mcp SDK import"]
    print(f"mcp spawn -> tools/list vs bare SDK import: {m / b:.2f}x (goal <= 1.25:"
          f" {'met' if m <= 1.25 * b else 'NOT met'})")


if __name__ == "__main__":
    main()
