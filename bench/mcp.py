"""Benchmark of the MCP front end: `search_history` round trips over stdio, and start-up.

Builds (or reuses, with --home) a history of N broker messages recorded through
`agentlog record` and projected into history.db, then prints:
- baseline: `projections.query.search` called in-process (same queries), p50/p99 in ms;
- MCP: `search_history` through the SDK's stdio client against `agentlog mcp`, p50/p99
  (goal p50 <= 30 ms at 100k documents), and its ratio to the baseline;
- start-up: spawn `agentlog mcp` → initialize → tools/list done (goal < 1 s), against
  `agentlog --version` (interpreter + click) as the baseline;
- with `--meaning-rows N` (issue 28: "MCP round trip p50 <= 50 ms at 1M chunks"): the home's
  embedding projection is filled with N chunks of random unit vectors spread over its
  documents (the real model's id, so the server searches them with the real model), then
  `search_history` with `mode` "meaning" and "hybrid" over the same stdio client, against
  "words" in the same server (the first call of a mode, untimed, loads the model and packs
  the sign bits).

Usage: .venv/bin/python bench/mcp.py [--quick] [--docs N] [--calls N] [--home DIR]
                                     [--meaning-rows N]
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


def server_peak_mb(home: Path) -> float | None:
    """The peak RSS (VmHWM) of the running `agentlog mcp` of `home`, read from /proc (the
    SDK's client does not give the server's pid)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
            if b"cli.main" in argv and str(home).encode() in argv and b"mcp" in argv:
                for line in (cmdline.parent / "status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return None


def mcp_round_trips(home: Path, qs: list[dict[str, Any]], modes: tuple[str | None, ...] = (None,)
                    ) -> tuple[dict[str | None, tuple[list[float], int]], float | None]:
    """Per mode (None: the default, words), the round trip of each query and the hits, the
    modes interleaved query by query in one server, each mode's first call untimed; and
    the server's peak RSS in MB at the end."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(home), "mcp"],
        cwd=str(ROOT), env={**os.environ, "AGENTLOG_EMBED": "0"})
    out: dict[str | None, tuple[list[float], int]] = {m: ([], 0) for m in modes}
    peak: list[float | None] = [None]

    def args_of(q: dict[str, Any], mode: str | None) -> dict[str, Any]:
        args = {k: v for k, v in q.items() if not k.startswith("_")}
        args["detail"] = "full"  # the hits as JSON (compact is text only)
        if mode is not None:
            args["mode"] = mode
        return args

    async def run() -> None:
        async with Client(params, mode="legacy") as client:
            for mode in modes:
                await client.call_tool("search_history", args_of({"query": "warmup"}, mode))
            for q in qs:
                for mode in modes:
                    t = time.perf_counter()
                    res = await client.call_tool("search_history", args_of(q, mode))
                    times, hits = out[mode]
                    times.append((time.perf_counter() - t) * 1000)
                    assert not res.is_error, res.content
                    out[mode] = (times, hits + len((res.structured_content or {}).get("hits", [])))
            peak[0] = server_peak_mb(home)

    anyio.run(run)
    return out, peak[0]


def fill_meaning(home: Path, rows: int) -> float:
    """`rows` chunks of random unit vectors, spread over the home's documents, under the
    default model's id, every document marked read (nothing left to embed); seconds taken."""
    sys.path.insert(0, str(_HERE))  # bench/common.py (this file's name is the SDK's)
    try:
        from common import random_projection
    finally:
        sys.path.remove(str(_HERE))
    from projections.db import connect

    start = time.perf_counter()
    con = connect(home / "history.db", readonly=True)
    docs = [(int(r), str(d))
            for r, d in con.execute("SELECT rowid, id FROM documents ORDER BY rowid")]
    con.close()
    random_projection(home / "meaning", rows, docs)
    return time.perf_counter() - start


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
    ap.add_argument("--meaning-rows", type=int, default=0, metavar="N",
                    help="also time modes meaning and hybrid over N embedded chunks")
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
    rt, hits = mcp_round_trips(home, qs)[0][None]
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
    if args.meaning_rows:
        from projections.catchup import make_lists

        # the lists the server's idle loop would make first (in its own process: ~50 MB
        # more while it makes them on a fresh 100k home), so its RSS is the searches'
        made = make_lists(home / "history.db")
        secs = fill_meaning(home, args.meaning_rows)
        print(f"champion lists made before: {made}")
        print(f"meaning: {args.meaning_rows} chunks of random vectors written in {secs:.1f} s")
        modes, peak = mcp_round_trips(home, qs, ("words", "meaning", "hybrid"))
        w50 = percentile(modes["words"][0], 50)
        for mode, (times, n_hits) in modes.items():
            p50, p99 = percentile(times, 50), percentile(times, 99)
            goal = "" if mode == "words" else (
                f"  goal p50 <= 50 ms: {'met' if p50 <= 50 else 'NOT met'}")
            print(f"MCP search_history mode {mode:8s} at {args.meaning_rows} chunks: p50"
                  f" {p50:.2f} ms  p99 {p99:.2f} ms  ({n_hits / calls:.1f} hits/call;"
                  f" {p50 / w50:.2f}x words){goal}")
        if peak is None:
            print("peak RSS of the MCP server: not found in /proc")
        else:
            print(f"peak RSS of the MCP server (model loaded, {args.meaning_rows} rows searched):"
                  f" {peak:.0f} MB  goal <= 300 MB: {'met' if peak <= 300 else 'NOT met'}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
