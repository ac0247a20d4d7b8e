"""Does a search wait for capture? Search latency while history.db catches up a burst.

Builds a home from the shared corpora (captured in place, history.db rebuilt), then
captures a burst into the log: the staged Claude Code and Codex files of the corpus again
under `--copies` other roots (new sources), without indexing it. Another process then
catches history.db up the way the capture loop does after a commit
(`projections.catchup.catch_up`), while this process searches without pause (common
words, `projections.query.search`, the path of MCP and HTTP). Printed: search p50/p99/max
during the catch-up, and idle for reference. history.db keeps a rollback journal
(docs/search.md: the swap of `reindex` needs it), so a search waits whenever the catch-up's
transaction holds the file's exclusive lock: while it commits, and from the moment its page
cache spills into the file.

Usage: .venv/bin/python bench/burst.py [--quick] [--rounds N] [--copies N] [--writer-cache-mib N]
  --writer-cache-mib: the catch-up connection's page cache instead of SQLite's default
  (2 MiB): whether a transaction that never spills keeps searches out only while it
  commits. Noisy on a shared machine: compare interleaved runs, and read the load average
  it prints.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ("error", "install", "test", "file", "function", "python", "build", "config", "fix",
         "update", "data", "server", "the", "and", "import", "user")


# the catch-up of the capture loop (cli.services.catchup.after_append), in its own process:
# argv[1] the home, argv[2] the writer's page cache in MiB (0: SQLite's default, 2 MiB)
WRITER = """
import sys
from pathlib import Path
from eventlog import EventLog
from projections import db
from projections.catchup import catch_up
home, mib = Path(sys.argv[1]), int(sys.argv[2])
if mib:  # the page cache of the catch-up's connection (it opens it with db.connect)
    connect = db.connect
    def big(path, **kw):
        con = connect(path, **kw)
        if not kw.get("readonly"):
            con.execute(f"PRAGMA cache_size = -{mib * 1024}")
        return con
    db.connect = big
catch_up(home / "history.db", EventLog(home / "log", readonly=True), count=False)
"""


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def searches(db_path: Path, stop: threading.Event, out: list[float]) -> None:
    from projections import query

    i = 0
    while not stop.is_set():
        t = time.perf_counter()
        query.search(db_path, WORDS[i % len(WORDS)], limit=10)
        out.append((time.perf_counter() - t) * 1000)
        i += 1


def one_round(work: Path, cache_mib: int | None, copies: int) -> dict[str, object]:
    from eventlog import EventLog
    from projections.rebuild import rebuild
    from tests.corpus_home import capture_all, corpus_roots

    corpus = ROOT.parent / "shared" / "corpus"
    more = ROOT.parent / "shared" / "corpus-more"
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    log = EventLog(home / "log")
    try:
        capture_all(log, corpus_roots(corpus, more, home / "stage"))
        rebuild(home / "history.db", log)
        before = log.head().seq
        for i in range(copies):  # staged Claude and Codex files: new sources each time
            capture_all(log, corpus_roots(corpus, more, home / f"burst{i}"))
        burst = log.head().seq - before
        idle: list[float] = []
        stop = threading.Event()
        timer = threading.Timer(1.0, stop.set)
        timer.start()
        searches(home / "history.db", stop, idle)
    finally:
        log.close()
    busy: list[float] = []
    stop = threading.Event()
    started = time.perf_counter()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(home), str(cache_mib or 0)],
                              cwd=ROOT)

    def wait() -> None:
        writer.wait()
        stop.set()

    threading.Thread(target=wait).start()
    searches(home / "history.db", stop, busy)
    took = time.perf_counter() - started
    if writer.returncode != 0:
        raise SystemExit(f"the catch-up process failed ({writer.returncode})")
    return {"burst": burst, "catchup_s": took, "idle": idle, "busy": busy}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--writer-cache-mib", type=int, default=None)
    ap.add_argument("--copies", type=int, default=6, help="the staged corpus captured again")
    ap.add_argument("--quick", action="store_true", help="one round of two copies")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.copies = 1, 2
    idle: list[float] = []
    busy: list[float] = []
    with tempfile.TemporaryDirectory(prefix="agentlog-burst-") as tmp:
        for _ in range(args.rounds):
            r = one_round(Path(tmp), args.writer_cache_mib, args.copies)
            idle += r["idle"]  # type: ignore[arg-type]
            busy += r["busy"]  # type: ignore[arg-type]
            print(f"burst of {r['burst']} events caught up in {r['catchup_s']:.2f} s;"
                  f" {len(r['busy'])} searches meanwhile")  # type: ignore[arg-type]
    cache = (f"writer cache {args.writer_cache_mib} MiB" if args.writer_cache_mib
             else "writer cache SQLite's default")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"search latency, ms ({cache}; {args.rounds} rounds; load average {load}):")
    for label, xs in (("idle", idle), ("during catch-up", busy)):
        print(f"  {label:<16} n={len(xs):>5}  p50 {statistics.median(xs):7.2f}"
              f"  p99 {pct(xs, 99):8.2f}  max {max(xs):8.2f}")


if __name__ == "__main__":
    main()
