"""Peak memory of one rebuild of history.db, phase by phase, in this process.

    .venv/bin/python bench/memory_phases.py LOG_DIR [--set module.NAME=VALUE ...] [--parallel]

Builds a new history.db from the log at LOG_DIR (e.g. a home kept by bench/memory.py
--keep) into a temporary folder, sampling /proc/self/status every 50 ms, and prints, per
phase (the load, the query-index sort, the FTS fill, the CJK fill, optimize), the peak RSS
and its anonymous and file-backed parts in MiB with its wall and CPU time, then the whole
build's VmHWM and time.
`--set` overrides a setting for the run, e.g. `--set db.BULK_HASHSIZE=268435456
--set rebuild.LOAD_CACHE_KIB=65536` (the settings before issue 13's memory work), so two
runs compare settings on the same log. With `--parallel` the parse process's peak is
printed too.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eventlog.store import EventLog  # noqa: E402
from projections import db, heap, rebuild  # noqa: E402

PHASES = (("COMMIT", "index sort"), ("INSERT INTO documents_fts(rowid", "FTS fill"),
          ("INSERT INTO documents_cjk(rowid", "CJK fill"),
          ("INSERT INTO documents_fts(documents_fts) VALUES ('optimize')", "optimize"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--set", action="append", default=[], metavar="module.NAME=VALUE")
    ap.add_argument("--parallel", action="store_true")
    args = ap.parse_args()
    modules = {"db": db, "rebuild": rebuild, "heap": heap}
    for item in args.set:
        key, _, value = item.partition("=")
        mod, _, name = key.partition(".")
        old = getattr(modules[mod], name)
        setattr(modules[mod], name, type(old)(json.loads(value) if value[:1] in "0123456789tf"
                                              else value))
    phase = ["load"]
    peaks: dict[str, list[int]] = {}
    marks: list[tuple[str, float, float]] = []  # (phase, wall, this process's CPU) at its start
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            st = {}
            with open("/proc/self/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("RssAnon", "RssFile", "VmRSS"):
                        st[k] = int(v.split()[0]) >> 10
            p = peaks.setdefault(phase[0], [0, 0, 0])
            for i, k in enumerate(("VmRSS", "RssAnon", "RssFile")):
                p[i] = max(p[i], st.get(k, 0))
            stop.wait(0.05)

    def trace(sql: str) -> None:
        if sql[:1] in "CI":
            for prefix, name in PHASES:
                if sql.startswith(prefix) and phase[0] != name:
                    phase[0] = name
                    marks.append((name, time.perf_counter(), time.process_time()))

    real = db.connect

    def connect(path: Path, **kw: object) -> object:
        con = real(path, **kw)  # type: ignore[arg-type]
        con.set_trace_callback(trace)
        return con

    db.connect = connect  # type: ignore[assignment]
    threading.Thread(target=sample, daemon=True).start()
    log = EventLog(args.log, readonly=True)
    with tempfile.TemporaryDirectory(prefix="agentlog-phases-") as tmp:
        t0 = time.perf_counter()
        marks.append(("load", t0, time.process_time()))
        r = rebuild.build(Path(tmp) / "history.db", log, parallel=args.parallel)
        took = time.perf_counter() - t0
        marks.append(("end", time.perf_counter(), time.process_time()))
    stop.set()
    log.close()
    with open("/proc/self/status") as f:
        hwm = next(int(x.split()[1]) >> 10 for x in f if x.startswith("VmHWM"))
    print(f"rebuild of {r.documents:,} documents in {took:.1f} s; settings {args.set or 'default'}")
    spans = {m[0]: (n[1] - m[1], n[2] - m[2]) for m, n in itertools.pairwise(marks)}
    for name, (rss, anon, file) in peaks.items():
        wall, cpu = spans.get(name, (float("nan"), float("nan")))
        print(f"  {name:<11} peak RSS {rss:5d} MiB (anon {anon:5d}, file {file:4d}); "
              f"{wall:6.1f} s wall, {cpu:6.1f} s CPU of this process")
    extra = ""
    if args.parallel:
        import resource

        from projections import pipeline

        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        extra = (f"; parse process {pipeline.last_peak >> 20} MiB, "
                 f"{child.ru_utime + child.ru_stime:.1f} s CPU")
    print(f"VmHWM {hwm} MiB{extra}")


if __name__ == "__main__":
    main()
