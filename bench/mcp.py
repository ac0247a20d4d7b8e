"""Benchmark of the MCP front end: `search_history` round trips over stdio, and start-up.

Builds (or reuses, with --home) a history of N broker messages recorded through
`agentlog record` and projected into history.db, then prints:
- baseline: `projections.query.search` called in-process (same queries), p50/p99 in ms;
- MCP: `search_history` through the SDK's stdio client against `agentlog mcp`, p50/p99
  (goal p50 <= 30 ms at 100k documents), and its ratio to the baseline;
- start-up: spawn `agentlog mcp` → initialize → tools/list done (goal < 1 s), against
  `agentlog --version` (interpreter + click) as the baseline.

Usage: .venv/bin/python bench/mcp.py [--quick] [--docs N] [--calls N] [--home DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the SDK: keep its directory off the import path.
_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

# A Zipf-distributed vocabulary (rank r drawn with weight 1/r), so that queries can pick
# frequent, middling and rare words as real histories have them.
_SYL = ("ka", "lo", "mi", "ne", "ru", "so", "ta", "vu", "ze", "xi", "bo", "di", "fa", "gu")
WORDS = [f"{a}{b}{c}" for a in _SYL for b in _SYL for c in ("n", "r", "s", "t", "x", "l")]
WEIGHTS = [1 / (r + 1) for r in range(len(WORDS))]
BANDS = {"frequent": (0, 30), "middling": (100, 400), "rare": (600, len(WORDS))}


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[k]


def facts(n: int, seed: int = 7) -> bytes:
    rnd = random.Random(seed)
    lines = []
    base = 1767225600000  # 2026-01-01
    for i in range(n):
        words = rnd.choices(WORDS, weights=WEIGHTS, k=20)
        lines.append(json.dumps({
            "type": "message", "id": f"b{i}", "from": f"peer{i % 17}", "to": ["lead"],
            "kind": ("message", "report", "progress", "approval")[i % 4],
            "body": " ".join(words), "at": base + i * 60_000,
            "project": f"/p/proj{i % 13}", "session": f"s{i % 101}", "job": f"job{i % 29}",
            "thread": f"t{i // 20}",
        }))
    return ("\n".join(lines) + "\n").encode()


def cli(home: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), *args],
                          input=data, capture_output=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"agentlog {' '.join(args)} failed: {proc.stderr.decode()[-2000:]}")
    return proc


def build_history(home: Path, n: int) -> float:
    """Record n messages and project them; returns seconds taken."""
    from cli.services.config import Home
    from projections.catchup import catch_up

    start = time.perf_counter()
    chunk = 20_000
    lines = facts(n).splitlines()
    for lo in range(0, n, chunk):
        cli(home, "record", data=b"\n".join(lines[lo:lo + chunk]) + b"\n")
    h = Home(home)
    catch_up(h.history_db, h.log(readonly=True))
    return time.perf_counter() - start


def queries(k: int, seed: int = 11) -> list[dict[str, Any]]:
    """k searches cycling through word bands and shapes; each carries its label in "_band"."""
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    names = list(BANDS)
    for i in range(k):
        band = names[i % len(names)]
        lo, hi = BANDS[band]

        def word(lo: int = lo, hi: int = hi) -> str:
            return WORDS[rnd.randrange(lo, hi)]

        shape = (i // len(names)) % 4
        if shape == 0:
            q: dict[str, Any] = {"query": word()}
        elif shape == 1:
            q = {"query": f"{word()} {WORDS[rnd.randrange(0, 400)]}"}
        elif shape == 2:
            q = {"query": word(), "filters": {"kind": "report"}}
        else:
            q = {"query": word(), "filters": {"project": f"/p/proj{rnd.randrange(13)}"},
                 "limit": 20}
        q["_band"] = band
        out.append(q)
    return out


def by_band(qs: list[dict[str, Any]], times: list[float]) -> str:
    parts = []
    for band in BANDS:
        sel = [t for q, t in zip(qs, times, strict=True) if q["_band"] == band]
        parts.append(f"{band} {percentile(sel, 50):.1f}")
    return "p50 by word band (ms): " + ", ".join(parts)


def baseline(home: Path, qs: list[dict[str, Any]]) -> list[float]:
    from projections import query

    db = home / "history.db"
    times = []
    for q in qs:
        t = time.perf_counter()
        query.search(db, q["query"], q.get("filters"), q.get("limit"))
        times.append((time.perf_counter() - t) * 1000)
    return times


def mcp_round_trips(home: Path, qs: list[dict[str, Any]]) -> tuple[list[float], int]:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(home), "mcp"],
        cwd=str(ROOT))
    times: list[float] = []
    hits = 0

    async def run() -> None:
        nonlocal hits
        async with Client(params, mode="legacy") as client:
            await client.call_tool("search_history", {"query": "warmup"})
            for q in qs:
                t = time.perf_counter()
                args = {k: v for k, v in q.items() if not k.startswith("_")}
                args["detail"] = "full"  # the hits as JSON (compact is text only)
                res = await client.call_tool("search_history", args)
                times.append((time.perf_counter() - t) * 1000)
                assert not res.is_error, res.content
                hits += len((res.structured_content or {}).get("hits", []))

    anyio.run(run)
    return times, hits


def startup(home: Path, reps: int) -> tuple[list[float], list[float]]:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(home), "mcp"],
        cwd=str(ROOT))
    mcp_times: list[float] = []
    base_times: list[float] = []

    async def once() -> None:
        t = time.perf_counter()
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            mcp_times.append((time.perf_counter() - t) * 1000)

    for _ in range(reps):
        anyio.run(once)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cli.main", "--version"], capture_output=True,
                       cwd=ROOT, check=True)
        base_times.append((time.perf_counter() - t) * 1000)
    return mcp_times, base_times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (5k docs, 100 calls)")
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--home", type=Path, default=None,
                    help="reuse (or build once into) this home")
    args = ap.parse_args()
    n = args.docs or (5_000 if args.quick else 100_000)
    calls = args.calls or (100 if args.quick else 500)
    tmp = tempfile.TemporaryDirectory(prefix="agentlog-bench-mcp-")
    home = args.home or Path(tmp.name) / "home"
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "history.db").exists():
        secs = build_history(home, n)
        print(f"history: {n} messages recorded and projected in {secs:.1f} s")
    else:
        print(f"history: reusing {home}")
    qs = queries(calls)
    base = baseline(home, qs)
    rt, hits = mcp_round_trips(home, qs)
    b50, b99 = percentile(base, 50), percentile(base, 99)
    m50, m99 = percentile(rt, 50), percentile(rt, 99)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"baseline query.search in-process: p50 {b50:.2f} ms  p99 {b99:.2f} ms  "
          f"({calls} queries)  {by_band(qs, base)}")
    print(f"MCP search_history over stdio:     p50 {m50:.2f} ms  p99 {m99:.2f} ms  "
          f"({hits / calls:.1f} hits/call)  goal p50 <= 30 ms: "
          f"{'met' if m50 <= 30 else 'NOT met'}  {by_band(qs, rt)}")
    print(f"ratio MCP/baseline: p50 {m50 / b50:.2f}x  p99 {m99 / b99:.2f}x  "
          f"(overhead p50 {m50 - b50:.2f} ms)")
    mt, bt = startup(home, 3 if args.quick else 7)
    s_m, s_b = statistics.median(mt), statistics.median(bt)
    print(f"start-up agentlog mcp (spawn→initialize→tools/list): median {s_m:.0f} ms  "
          f"(baseline `agentlog --version` {s_b:.0f} ms, ratio {s_m / s_b:.2f}x)  "
          f"goal < 1000 ms: {'met' if s_m < 1000 else 'NOT met'}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
