"""Benchmark of the event log against raw py-lmdb, measured in the same run.

Prints:
- events/s appending 1 KB events in batches of 1,000 through `EventLog.append`;
- the same for raw py-lmdb puts of the same value bytes with the same settings
  (sync, metasync, no writemap, append=True, one write transaction per 1,000);
- their ratio (goal >= 0.5);
- verify throughput in MB/s of record bytes (goal >= 200 MB/s) for the in-process
  scan (`eventlog.verify.scan`) and for the isolated verify (`verify_isolated`: LMDB
  copy + structural check + chain scan, each in a child process);
- peak RSS: of this process (which holds the pre-built inputs), and of a child that
  appends the same number of events built batch by batch and then verifies.

Usage: .venv/bin/python bench/eventlog.py [--quick] [--events N] [--reps R]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import lmdb  # noqa: E402

from eventlog import chain, codec  # noqa: E402
from eventlog.events import MessageSent  # noqa: E402
from eventlog.store import EventLog  # noqa: E402
from eventlog.verify import (  # noqa: E402
    chain_check,
    scan,
    structural_check,
    verify_isolated,
)

BATCH = 1000


def make_events(n: int, start: int = 0) -> list[tuple[bytes, MessageSent]]:
    """`n` message events whose stored records are ~1 KB each."""
    pad = "x" * 880
    out = []
    for i in range(start, start + n):
        ev = MessageSent(
            id=f"m{i:09d}", sender="bench", to=["peer"], kind="message",
            body=f"{i:09d} {pad}", at=1_700_000_000_000 + i,
        )
        out.append((f"message\x1fm{i:09d}".encode(), ev))
    return out


def bench_eventlog(path: Path, events: list[tuple[bytes, MessageSent]]) -> tuple[float, int]:
    log = EventLog(path, command="bench")
    t0 = time.perf_counter()
    for i in range(0, len(events), BATCH):
        log.append(events[i : i + BATCH], at=1_700_000_000_000)
    dt = time.perf_counter() - t0
    head = log.head().seq
    log.close()
    return dt, head


def raw_values(events: list[tuple[bytes, MessageSent]]) -> list[bytes]:
    """The exact LMDB values the event log would store (so both write the same bytes)."""
    prev = chain.GENESIS
    out = []
    for seq, (key, ev) in enumerate(events, start=1):
        stored = codec.encode_stored(1_700_000_000_000, key, codec.encode_event(ev))
        prev = chain.link(prev, seq, stored)
        out.append(codec.pack_value(prev, stored))
    return out


def bench_raw(path: Path, values: list[bytes]) -> float:
    path.mkdir(parents=True, exist_ok=True)
    env = lmdb.open(
        str(path), map_size=1 << 30, max_dbs=6, sync=True, metasync=True, writemap=False,
    )
    db = env.open_db(b"events")
    t0 = time.perf_counter()
    seq = 0
    for i in range(0, len(values), BATCH):
        with env.begin(write=True) as txn:
            cur = txn.cursor(db=db)
            for v in values[i : i + BATCH]:
                seq += 1
                if not cur.put(chain.seq_key(seq), v, append=True):
                    raise SystemExit("raw put refused")
    dt = time.perf_counter() - t0
    env.close()
    return dt


def stream_child(n: int, path: Path) -> None:
    """Append `n` events built batch by batch, verify, print peak RSS (JSON)."""
    log = EventLog(path, command="bench")
    t0 = time.perf_counter()
    for i in range(0, n, BATCH):
        log.append(make_events(min(BATCH, n - i), start=i))
    rate = n / (time.perf_counter() - t0)
    anon_append = _status_mb("RssAnon:")
    assert scan(log).ok
    anon_scan = _status_mb("RssAnon:")
    log.close()
    print(json.dumps({"rss_mb": peak_rss_mb(), "events_s": rate, "anon_append": anon_append,
                      "anon_scan": anon_scan}))


def _status_mb(field: str) -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def peak_rss_mb() -> float:
    """VmHWM of this process image (ru_maxrss survives exec, so a child would report the
    parent's peak from before its exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--stream-child":
        stream_child(int(sys.argv[2]), Path(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (20k events, 1 rep)")
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    n = args.events or (20_000 if args.quick else 200_000)
    reps = args.reps or (1 if args.quick else 3)
    events = make_events(n)
    values = raw_values(events)
    # the pre-built inputs are bench scaffolding: keep the cyclic GC from re-scanning them
    gc.collect()
    gc.freeze()
    mean_value = sum(len(v) for v in values) / len(values)
    print(f"eventlog bench: {n} events of ~{mean_value:.0f} B value, batches of {BATCH}, "
          f"{reps} rep(s), python {sys.version.split()[0]}, lmdb {lmdb.__version__}")

    tmp = Path(tempfile.mkdtemp(prefix="agentlog-bench-"))
    try:
        ev_rates, raw_rates = [], []
        log_dir = tmp / "log"
        for rep in range(reps):
            # alternate order so neither side always runs on a warmer cache
            for which in (("raw", "ev") if rep % 2 else ("ev", "raw")):
                if which == "ev":
                    shutil.rmtree(log_dir, ignore_errors=True)
                    dt, head = bench_eventlog(log_dir, events)
                    assert head == n + 1, head
                    ev_rates.append(n / dt)
                else:
                    raw_dir = tmp / f"raw{rep}"
                    dt = bench_raw(raw_dir, values)
                    raw_rates.append(n / dt)
                    shutil.rmtree(raw_dir, ignore_errors=True)
        ev, raw = statistics.median(ev_rates), statistics.median(raw_rates)
        # each rep measures both sides back to back: the median of per-rep ratios is the
        # figure least disturbed by a noisy machine
        ratio = statistics.median(e / r for e, r in zip(ev_rates, raw_rates, strict=True))
        print(f"append EventLog.append : {ev:>12,.0f} events/s  (runs {_fmt(ev_rates)})")
        print(f"append raw py-lmdb put : {raw:>12,.0f} events/s  (runs {_fmt(raw_rates)})")
        print(f"ratio eventlog/raw     : {ratio:>12.2f}  (median of per-rep ratios; goal >= 0.5) "
              f"{'OK' if ratio >= 0.5 else 'MISS'}")

        log = EventLog(log_dir, readonly=True, create=False)
        scan_rates = []
        for _ in range(reps):
            rep_ = scan(log)
            assert rep_.ok, rep_.reason
            scan_rates.append(rep_.bytes / rep_.seconds / 1e6)
        mb = rep_.bytes / 1e6
        sc = statistics.median(scan_rates)
        print(f"verify scan in-process : {sc:>12,.0f} MB/s  ({mb:.0f} MB of records, "
              f"{rep_.records / rep_.seconds:,.0f} records/s) "
              f"{'OK' if sc >= 200 else 'MISS'} (goal >= 200)")
        iso_rates = []
        for _ in range(reps):
            t0 = time.perf_counter()
            rep2 = verify_isolated(log_dir, live=log)
            dt = time.perf_counter() - t0
            assert rep2.ok, rep2.reason
            iso_rates.append(rep2.bytes / dt / 1e6)
        iso = statistics.median(iso_rates)
        print(f"verify isolated (copy + structure + chain, child processes): "
              f"{iso:,.0f} MB/s {'OK' if iso >= 200 else 'MISS'} (goal >= 200)")
        snap = tmp / "snap"
        log.copy_to(snap, compact=False)
        log.close()
        t0 = time.perf_counter()
        ok, _ = structural_check(snap)
        t_struct = time.perf_counter() - t0
        t0 = time.perf_counter()
        assert chain_check(snap).ok and ok
        t_chain = time.perf_counter() - t0
        data_mb = (log_dir / "data.mdb").stat().st_size / 1e6
        print(f"  of which: LMDB structural audit (python -m lmdb verify) {t_struct:.2f} s = "
              f"{data_mb / t_struct:,.0f} MB/s of data.mdb; chain scan child {t_chain:.2f} s")
        print(f"data.mdb size          : {data_mb:>12,.1f} MB")
        rss = peak_rss_mb()
        print(f"peak RSS (this process): {rss:>12,.0f} MB (holds the {n} pre-built inputs twice)")
        out = subprocess.run(
            [sys.executable, __file__, "--stream-child", str(n), str(tmp / "stream")],
            capture_output=True, text=True, check=True,
        ).stdout
        child = json.loads(out)
        print(f"peak RSS streaming     : {child['rss_mb']:>12,.0f} MB (a process appending "
              f"{n} events made batch by batch, then verifying; "
              f"{child['events_s']:,.0f} events/s incl. building events)")
        print(f"  of which anonymous (heap) memory: {child['anon_append']:.0f} MB after the "
              f"appends, {child['anon_scan']:.0f} MB after the scan; the rest is data.mdb "
              "pages mapped by LMDB (page cache)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fmt(xs: list[float]) -> str:
    return ", ".join(f"{x:,.0f}" for x in xs)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
