"""Does a search wait for capture? Needle-search latency while history.db catches up a burst.

Builds a home from the shared corpora (captured in place, history.db rebuilt; `--base-mb`
adds a synthetic history first, for a larger file), then captures a burst into the log
without indexing it: `--sessions` new Claude Code sessions of `--burst-mb` MB in all (the
issue's 40 sessions, 23 MB), their words drawn from history.db's own vocabulary by document
frequency (new documents, postings of known words, folds into the champion lists; a copy of
the corpus would add no document: a copied record's uid is already indexed). Then, for
each code tree
(this one, and with `--base REV` that revision extracted by `git archive` — both run on
copies of the very same home, interleaved round by round), history.db is caught up the
way the capture loop does after a commit (`projections.catchup.catch_up`) while needle
searches (a word of exactly one document, `projections.query.search`, the path of MCP and
HTTP) run without pause:

- other: the catch-up runs in another process (a second server searching);
- same: the catch-up runs in a thread of the searching process (the capturing server: its
  capture loop's thread catches up while a tool call searches).

Printed per tree and mode: search p50/p99/max during the catch-up (and idle for reference),
the catch-up's time, and the load average (the machine is shared: read the A/B of one run,
not absolute figures); with `--probe`, the windows in which a reader found history.db locked.
Each run starts on a fresh copy of the home, flushed to disk (`os.sync`) before it starts.

Usage: .venv/bin/python bench/burst.py [--quick] [--rounds N] [--sessions N] [--burst-mb MB]
                                       [--base REV] [--base-mb MB] [--probe] [--modes other,same]
"""

from __future__ import annotations

import argparse
import json
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
TREE = Path(os.environ.get("BURST_TREE", ROOT))  # the code measured (a baseline's extract)
sys.path.insert(0, str(TREE))

# the catch-up of the capture loop (cli.services.catchup.after_append) in its own process
WRITER = """
import sys
from pathlib import Path
from eventlog import EventLog
from projections.catchup import catch_up
home = Path(sys.argv[1])
catch_up(home / "history.db", EventLog(home / "log", readonly=True), count=False)
"""


# a reader that never waits (`--probe`): one read of the checkpoint every 0.5 ms with a busy
# timeout of 0, until the file argv[2] exists; prints the windows in which it found history.db
# locked (a writer's PENDING or EXCLUSIVE lock: a search would have waited), as [start, ms]
PROBE = """
import json, os, sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
con.execute("PRAGMA query_only = 1")
windows, start, t0 = [], None, time.perf_counter()
while not os.path.exists(sys.argv[2]):
    now = time.perf_counter()
    try:
        con.execute("SELECT last_seq FROM checkpoint").fetchone()
        if start is not None:
            windows.append((round((start - t0) * 1000, 1), round((now - start) * 1000, 1)))
            start = None
    except sqlite3.OperationalError:
        if start is None:
            start = now
    time.sleep(0.0005)
print(json.dumps(windows))
"""


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def searches(db_path: Path, words: list[str], stop: threading.Event, out: list[float],
             failed: list[str]) -> None:
    """Needle searches until `stop`; a search that fails (a tree that gives up on a lock:
    "history.db is busy") counts with the time it took, and its error is kept."""
    from projections import query

    i = 0
    while not stop.is_set():
        t = time.perf_counter()
        try:
            got = query.search(db_path, words[i % len(words)], limit=10)
        except Exception as exc:
            got = {"hits": [None]}
            failed.append(type(exc).__name__)
        out.append((time.perf_counter() - t) * 1000)
        if not got["hits"]:
            raise SystemExit(f"needle {words[i % len(words)]!r} not found")
        i += 1


def needles(db_path: Path, n: int = 64) -> list[str]:
    """Words of exactly one document (ASCII letters, 7+ characters), spread over the vocab."""
    import sqlite3

    con = sqlite3.connect(db_path)
    try:
        rows = [t for (t,) in con.execute(
            "SELECT term FROM documents_fts_terms WHERE doc = 1 AND length(term) >= 7")
            if t.isascii() and t.isalpha()]
    finally:
        con.close()
    step = max(1, len(rows) // n)
    return rows[::step][:n]


def drive(home: Path, mode: str, words: list[str]) -> dict[str, object]:
    """One measurement in this process (run with BURST_TREE naming the code measured)."""

    db_path = home / "history.db"
    done = home / "probe.stop"
    probe = (subprocess.Popen([sys.executable, "-c", PROBE, str(db_path), str(done)],
                              stdout=subprocess.PIPE, text=True)
             if os.environ.get("BURST_PROBE") else None)
    try:
        return measure(home, mode, words)
    finally:
        done.touch()  # the probe stops (also when the measure failed: it holds our stderr)
        windows = json.loads(probe.communicate()[0]) if probe is not None else []
        LOCKED[:] = windows


LOCKED: list[list[float]] = []  # the probe's windows of the last drive


def measure(home: Path, mode: str, words: list[str]) -> dict[str, object]:
    from projections import query

    db_path = home / "history.db"
    idle: list[float] = []
    failed: list[str] = []
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    searches(db_path, words, stop, idle, failed)
    query.close_connections()
    busy: list[float] = []
    stop = threading.Event()
    result: list[object] = []
    started = time.perf_counter()
    if mode == "other":
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(home)], cwd=TREE,
                                  env={**os.environ, "PYTHONPATH": str(TREE)})

        def wait() -> None:
            writer.wait()
            result.append(writer.returncode)
            stop.set()
    else:
        from cli.services.capture import loop as capture_loop
        from eventlog import EventLog
        from projections.catchup import catch_up

        # what CaptureLoop.start does in mcp/serve, if the tree does it (BURST_SWITCH
        # overrides, to measure)
        switch = os.environ.get("BURST_SWITCH", getattr(capture_loop, "SWITCH_INTERVAL_S", None))
        if switch is not None:
            sys.setswitchinterval(float(switch))

        log = EventLog(home / "log", readonly=True)

        def wait() -> None:
            try:
                catch_up(db_path, log, count=False)
                result.append(0)
            except BaseException as exc:
                result.append(repr(exc))
            finally:
                stop.set()

    thread = threading.Thread(target=wait)
    thread.start()
    searches(db_path, words, stop, busy, failed)
    took = time.perf_counter() - started
    thread.join()
    if result != [0]:
        raise SystemExit(f"the catch-up failed: {result}")
    return {"idle": idle, "busy": busy, "catchup_s": took, "failed": failed}


def vocabulary(db_path: Path, n: int = 20_000) -> tuple[list[str], list[int]]:
    """history.db's `n` most common words and their document counts (the burst's words)."""
    import sqlite3

    con = sqlite3.connect(db_path)
    try:
        rows = con.execute("SELECT term, doc FROM documents_fts_terms ORDER BY doc DESC LIMIT ?",
                           (n,)).fetchall()
    finally:
        con.close()
    return [t for t, _ in rows], [int(d) for _, d in rows]


def write_burst(root: Path, sessions: int, size: int, vocab: tuple[list[str], list[int]],
                seed: int = 29) -> None:
    """`sessions` new Claude Code sessions of `size` bytes in all under `root` (a `.claude`
    folder), their text drawn from `vocab` by document frequency: new documents, new
    full-text postings of words already indexed, folds into the champion lists."""
    import random

    rng = random.Random(seed)
    words, weights = vocab
    per = size // sessions
    for s in range(sessions):
        sid = f"{rng.getrandbits(128):032x}"
        sid = f"{sid[:8]}-{sid[8:12]}-{sid[12:16]}-{sid[16:20]}-{sid[20:]}"
        path = root / "projects" / f"-w-burst{s % 8}" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            written, i = 0, 0
            while written < per:
                role = "user" if i % 2 == 0 else "assistant"
                text = " ".join(rng.choices(words, weights, k=rng.randint(10, 300)))
                rec = {"parentUuid": None, "isSidechain": False, "userType": "external",
                       "cwd": f"/w/burst{s % 8}", "sessionId": sid, "version": "2.1.90",
                       "type": role, "message": {"role": role, "content": [
                           {"type": "text", "text": text}]},
                       "uuid": f"{sid[:8]}-{i:06d}", "timestamp": "2026-04-07T15:31:35.362Z"}
                line = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
                f.write(line)
                written += len(line)
                i += 1


def build(work: Path, sessions: int, burst_mb: float, base_mb: int) -> tuple[Path, int, int]:
    """The home: the shared corpora captured and history.db rebuilt, then a burst of
    `sessions` new sessions (`burst_mb` MB) captured into the log only. With `base_mb`, a
    synthetic history of that size first (bench/capture.write_home: a larger history.db,
    with champion lists and larger full-text segments to merge)."""
    from eventlog import EventLog
    from projections.rebuild import rebuild
    from readers.roots import Root
    from tests.corpus_home import capture_all, corpus_roots

    corpus = ROOT.parent / "shared" / "corpus"
    more = ROOT.parent / "shared" / "corpus-more"
    home = work / "home"
    shutil.rmtree(work, ignore_errors=True)
    home.mkdir(parents=True)
    log = EventLog(home / "log")
    try:
        if base_mb:
            sys.path.insert(0, str(ROOT / "bench"))
            from capture import write_home

            synth = write_home(work / "synth", 60 * base_mb, base_mb << 20, 0)
            capture_all(log, [Root(agent, path, "flag", True) for agent, path in synth.items()])
        capture_all(log, corpus_roots(corpus, more, work / "stage"))
        rebuild(home / "history.db", log)
        before = log.head().seq
        write_burst(work / "burst", sessions, int(burst_mb * 1e6), vocabulary(home / "history.db"))
        capture_all(log, [Root("claude", work / "burst", "flag", True)])
        burst = log.head().seq - before
        size = sum(len(r.value) for r in log.read_raw(before + 1, burst, max_bytes=1 << 40))
    finally:
        log.close()
    return home, burst, size


def as_made_before(path: Path) -> None:
    """The home's history.db as a tree from before generations made it (`--base`): a plain
    file in rollback-journal mode (the journal mode is the file's: a WAL copy would give the
    older tree this tree's readers)."""
    if path.is_symlink():
        from tests.test_projections_support import plain_file

        plain_file(path)


def extract(rev: str, into: Path) -> Path:
    """`rev`'s tree (git archive), for a baseline measured in the same run."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=40, help="new sessions in the burst")
    ap.add_argument("--burst-mb", type=float, default=23.0, help="the burst's size")
    ap.add_argument("--base-mb", type=int, default=0,
                    help="a synthetic history of this many MB in the home before the burst")
    ap.add_argument("--base", help="a revision measured in the same run (e.g. main)")
    ap.add_argument("--modes", default="other,same")
    ap.add_argument("--quick", action="store_true", help="one round, a burst of 8 sessions, 4 MB")
    ap.add_argument("--probe", action="store_true",
                    help="also print the windows a reader found history.db locked")
    ap.add_argument("--drive", nargs=3, metavar=("HOME", "MODE", "WORDS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.drive:
        home, mode, words = args.drive
        got = drive(Path(home), mode, json.loads(Path(words).read_text()))
        print(json.dumps({**got, "locked": LOCKED}))
        return
    if args.quick:
        args.rounds, args.sessions, args.burst_mb = 1, 8, 4.0
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory(prefix="agentlog-burst-") as tmp:
        trees = {"this": ROOT}
        if args.base:
            trees[args.base] = extract(args.base, Path(tmp) / "base")
        home, burst, size = build(Path(tmp) / "build", args.sessions, args.burst_mb,
                                  args.base_mb)
        words_file = Path(tmp) / "needles.json"
        words_file.write_text(json.dumps(needles(home / "history.db")))
        print(f"burst: {burst} events, {size / 1e6:.1f} MB stored; needles: "
              f"{len(json.loads(words_file.read_text()))}")
        got: dict[tuple[str, str], dict[str, list[float]]] = {}
        loads: list[float] = []
        for rnd in range(args.rounds):
            order = [(t, m) for t in trees for m in modes]
            if rnd % 2:
                order.reverse()  # interleaved: neither tree always runs first
            for tree, mode in order:
                run = Path(tmp) / "run"
                shutil.rmtree(run, ignore_errors=True)
                shutil.copytree(home, run, symlinks=True)  # history.db: a link to its file
                if "def publish(" not in (trees[tree] / "projections/rebuild.py").read_text():
                    as_made_before(run / "history.db")
                os.sync()  # the copy's writes not left to the catch-up's first fsync
                out = subprocess.run(
                    [sys.executable, str(Path(__file__).resolve()), "--drive", str(run), mode,
                     str(words_file)], cwd=trees[tree], capture_output=True,
                    text=True, env={**os.environ, "BURST_TREE": str(trees[tree]),
                                    **({"BURST_PROBE": "1"} if args.probe else {})})
                if out.returncode:
                    raise SystemExit(f"{tree} {mode} failed:\n{out.stderr[-3000:]}")
                r = json.loads(out.stdout.strip().splitlines()[-1])
                loads.append(os.getloadavg()[0])
                acc = got.setdefault((tree, mode), {"idle": [], "busy": [], "s": []})
                acc["idle"] += r["idle"]
                acc["busy"] += r["busy"]
                acc["s"].append(r["catchup_s"])
                print(f"  round {rnd + 1} {tree:>8} {mode:<5}: caught up in "
                      f"{r['catchup_s']:.2f} s, {len(r['busy'])} searches, p99 "
                      f"{pct(r['busy'], 99):.1f} ms, max {max(r['busy']):.1f} ms;"
                      f" load {loads[-1]:.1f}"
                      + (f"; {len(r['failed'])} searches failed"
                         f" ({', '.join(sorted(set(r['failed'])))})" if r["failed"] else ""),
                      flush=True)
                if r["locked"]:
                    spans = sorted(ms for _, ms in r["locked"])
                    print(f"    locked {len(spans)} times, {sum(spans):.0f} ms in all, longest"
                          f" {', '.join(f'{ms:.0f}' for ms in spans[-5:])} ms")
    print(f"needle search latency, ms ({args.rounds} rounds of {burst} events, "
          f"{size / 1e6:.1f} MB; load average {min(loads):.1f}–{max(loads):.1f}):")
    for (tree, mode), acc in got.items():
        for label in ("idle", "busy"):
            xs = acc[label]
            what = "idle" if label == "idle" else f"catch-up {statistics.median(acc['s']):.1f} s"
            print(f"  {tree:>8} {mode:<5} {what:<16} n={len(xs):>6}  p50"
                  f" {statistics.median(xs):6.2f}  p99 {pct(xs, 99):7.2f}  max {max(xs):8.2f}")


if __name__ == "__main__":
    main()
