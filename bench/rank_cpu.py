"""The full ranking (projections/rank/split.py) on one thread and split across threads, in CPU
time: what a busy shared machine can still measure when its second core is never idle.

For each query, `search.fts_search(..., lists=False)` (every match ranked) alternately with
`split.THREADS` = 1 and = 2; per call the process CPU, the calling thread's CPU and the
other thread's (process minus caller). The critical path, the larger of the two, is the
wall the split takes on two idle cores. Medians of `--reps`; the hits are compared.
`--sweep`: words of the file near 1,000 ... 80,000 documents, split forced
(`PARALLEL_AT` = 0): where the split starts to pay.

Usage: .venv/bin/python bench/rank_cpu.py HISTORY_DB [QUERY ...] [--reps N] [--sweep]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from projections import db, search  # noqa: E402
from projections.filters import Filters  # noqa: E402
from projections.rank import split  # noqa: E402


def measure(con: sqlite3.Connection, tokens: list[str], reps: int) -> dict[int, list[float]]:
    """{threads: (process CPU, caller CPU, critical path)} medians, in seconds."""
    got: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
    hits: dict[int, list[tuple[object, ...]]] = {}
    for _ in range(reps):
        for n in (1, 2):
            split.THREADS = n
            p0, t0 = time.process_time(), time.thread_time()
            hits[n] = search.fts_search(con, tokens, Filters(), 10, lists=False)
            total, caller = time.process_time() - p0, time.thread_time() - t0
            got[n].append((total, caller, max(caller, total - caller)))
    split.THREADS = None
    if hits[1] != hits[2]:
        raise SystemExit(f"{tokens}: the split's hits differ")
    return {n: [statistics.median(x[i] for x in v) for i in range(3)] for n, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db", type=Path)
    ap.add_argument("queries", nargs="*", default=["refactor parser"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sweep", action="store_true")
    args = ap.parse_args()
    con = db.connect(args.db, readonly=True)
    with open("/proc/loadavg") as f:
        print(f"load average {f.read().split()[0]}; medians of {args.reps}")
    queries = args.queries
    if args.sweep:
        split.PARALLEL_AT = 0
        vocab = con.execute("SELECT term, doc FROM documents_fts_terms"
                            " WHERE doc BETWEEN 500 AND 200000").fetchall()
        queries = [min(vocab, key=lambda v: abs(v[1] - n))[0]
                   for n in (1000, 2500, 5000, 10_000, 20_000, 40_000, 80_000)] if vocab else []
    for q in queries:
        n = con.execute("SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?",
                        (" AND ".join(f'"{t}"' for t in q.split()),)).fetchone()[0]
        m = measure(con, q.split(), args.reps)
        print(f"  {q!r:24} {n:8,} matches: one thread CPU {m[1][0] * 1e3:7.1f} ms | split CPU"
              f" {m[2][0] * 1e3:7.1f} ms, caller {m[2][1] * 1e3:7.1f}, critical path"
              f" {m[2][2] * 1e3:7.1f} ms = {m[2][2] / m[1][0]:.2f}x")


if __name__ == "__main__":
    main()
