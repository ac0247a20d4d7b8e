"""Sync alone against a bare COPY (bench/postgres.py's first line), repeated on one server.

N synthetic broker messages over 4 hosts' LMDB logs (bench/postgres.py's `fill`); each
repetition drops the schema, times one bare binary COPY of the record bytes, then `sync` of
every host into a fresh schema. Run it from two checkouts to compare sync paths.
Usage: .venv/bin/python bench/pg_sync.py [--docs N] [--reps R] [--url URL]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))

from common import pg_start, pg_stop  # noqa: E402
from postgres import HOSTS, bare_copy, fill  # noqa: E402
from search import make_texts  # noqa: E402

from eventlog.store import EventLog  # noqa: E402
from projections.pg.sync import sync  # noqa: E402


def main() -> None:
    import psycopg

    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=40_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--url", default=None, help="an existing server (superuser) instead")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="agentlog-bench-pgsync-"))
    url, server = pg_start(args.url, "bench/pg_sync.py")
    try:
        texts, _ = make_texts(args.docs)
        logs = {}
        for h in range(HOSTS):
            logs[f"host{h}"] = EventLog(work / f"log{h}", command="bench")
            fill(logs[f"host{h}"], texts, list(range(h, args.docs, HOSTS)))
        for rep in range(args.reps):
            with psycopg.connect(url, autocommit=True) as con:
                con.execute("DROP SCHEMA IF EXISTS agentlog CASCADE")
            bare_s, nbytes = bare_copy(url, logs)
            t0 = time.perf_counter()
            for host, log in logs.items():
                sync(log, url, host)
            s = time.perf_counter() - t0
            print(f"rep {rep}: sync {s:.2f} s, bare COPY {bare_s:.2f} s ({nbytes / 1e6:.1f} MB),"
                  f" ratio {bare_s / s:.2f}", flush=True)
    finally:
        pg_stop(server, False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
