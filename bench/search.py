"""Benchmark of history.db: reindex and queries, against baselines measured in the same run.

Prints:
- reindex (`projections.rebuild.rebuild` from a synthetic log of broker messages) against a
  bare FTS5 bulk insert of the same texts (same tokenizer, one transaction, optimize),
  interleaved rounds: best and median wall time and CPU time of each (the rebuild's: every
  thread and its full-text child process), the ratios (goal: reindex <= 2.0x the bare
  insert, wall) and the load average;
- p50/p99 latency of rare-token, two-term and very-common-term searches through
  `projections.query.search` (goals at 1M docs: rare p50 <= 5 ms, common p99 <= 100 ms),
  and of the plain engine for the rare query (a small sample: it scans);
- ranking (`--rank` alone skips the rest): for rare, mid (two words), common (one word of
  rank 3..300), hot (one of the 3 most common words) and several common words (2 hot: two of
  the 10 most common; 2 common: two of rank 3..300; 3 common: three of the 50 most common)
  queries, p50/p99 of the former bounded ranking (newest 5,000 matches), FTS5's own full
  bm25, the full bm25 x role weight without champion lists (on a thread per CPU when the
  matches are many, projections.rank.split, and on one), and agentlog's ranking (lists +
  certificate, else the full one); how many answers differ from the full ranking (must be
  0); the time to make the lists. The file with every list made is kept under `--cache`
  (default $TMPDIR/agentlog-bench-cache, keyed by documents, schema and list settings): a
  later `--rank` run of the same size skips the build (~25 min at 1M) and measures only
  "all lists"; `--no-cache` builds afresh;
- the ratio to `rg --hidden` over the same text as files, when rg is installed;
- history.db size against the size of the indexed text;
- `agentlog search --json` whole-process p50, next to `python -c pass` as the floor;
- with `--capture quick|mid|gb` instead: empty -> searchable on a synthetic home of all three
  agents (bench/capture.py writes it) next to claude-session-search `--reindex` and the
  single-thread floor, with CPU / wall (see bench/cold.py).

Usage: .venv/bin/python bench/search.py [--quick] [--docs N] [--queries Q] [--keep DIR] [--rank]
         [--cache DIR | --no-cache]
       .venv/bin/python bench/search.py --capture quick|mid|gb [--src DIR] [--keep DIR] [--reps N]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from common import pct  # noqa: E402

from eventlog.events import MessageSent  # noqa: E402
from eventlog.store import EventLog  # noqa: E402
from projections import query  # noqa: E402
from projections.rebuild import rebuild  # noqa: E402

VOCAB = 50_000
FRAGMENTS = 20_000


def _vocab(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    out = sorted(words)
    rng.shuffle(out)
    # a few accented words, so diacritic folding is exercised
    for i in range(0, VOCAB, 50):
        out[i] = out[i].replace("e", "é", 1)
    return out


def make_texts(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """`n` texts (~60 Zipf-distributed words, plus one unique token each) and the vocab."""
    rng = random.Random(seed)
    vocab = _vocab(rng)
    weights = [1.0 / (r + 1) for r in range(VOCAB)]
    cum = []
    total = 0.0
    for w in weights:
        total += w
        cum.append(total)
    frags = [" ".join(rng.choices(vocab, cum_weights=cum, k=15)) for _ in range(FRAGMENTS)]
    texts = []
    for i in range(n):
        picks = rng.sample(range(FRAGMENTS), 4)
        texts.append(f"{frags[picks[0]]} {frags[picks[1]]} uniq{i:08d} {frags[picks[2]]}."
                     f" {frags[picks[3]]}")
    return texts, vocab


def cache_path(n: int, cache: Path) -> Path:
    """Where `--rank` keeps the synthetic `n`-document history.db with every champion list
    made, keyed by what shapes it (documents, text seed, schema, rank format and settings),
    so later runs skip the build (~25 min at 1M). Delete it to force a fresh build."""
    from projections import db as dbm
    from projections.rank import champions, deep

    return cache / (f"search-n{n}-seed7-schema{dbm.SCHEMA_VERSION}-rankwas-hot{champions.HOT_DF}"
                    f"-ch{champions.CHAMPIONS}-deep{deep.DEEP_MAX}s{deep.DEEP_SHARE}"
                    f"x{deep.CROSS}"
                    ) / "history.db"


def make_log(path: Path, texts: list[str]) -> EventLog:
    log = EventLog(path, command="bench")
    batch = 5000
    for start in range(0, len(texts), batch):
        items = []
        for i in range(start, min(len(texts), start + batch)):
            ev = MessageSent(id=f"b{i}", sender=f"peer{i % 7}", to=["x"],
                             kind=("message", "report", "progress", "approval")[i % 4],
                             body=texts[i], at=1_700_000_000_000 + i * 1000,
                             project=f"/proj/{i % 13}")
            items.append((f"message\x1fb{i}".encode(), ev))
        log.append(items)
    return log


def bare_fts(path: Path, texts: list[str]) -> float:
    """The baseline: the same texts into one FTS5 table with the same tokenizer as
    documents_fts (it stores the text too), in one transaction, then 'optimize'."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA cache_size = -262144")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(text,"
                " tokenize='unicode61 remove_diacritics 2')")
    t0 = time.perf_counter()
    con.execute("BEGIN")
    con.executemany("INSERT INTO t(text) VALUES (?)", ((t,) for t in texts))
    con.execute("COMMIT")
    con.execute("INSERT INTO t(t) VALUES ('optimize')")
    dt = time.perf_counter() - t0
    con.close()
    return dt


def bare_queries(con: sqlite3.Connection, queries: list[str]) -> list[float]:
    """The baseline: quoted-AND MATCH, bm25 over the newest 5,000 matches, top 10."""
    out = []
    for q in queries:
        expr = " AND ".join(f'"{w}"' for w in q.split())
        t0 = time.perf_counter()
        rows = con.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY rowid DESC"
                           " LIMIT 5000", (expr,)).fetchall()
        top = sorted(rows, key=lambda r: r[1])[:10]
        con.execute(f"SELECT text FROM t WHERE rowid IN ({','.join('?' * len(top))})",
                    [r[0] for r in top]).fetchall()
        out.append((time.perf_counter() - t0) * 1000)
    return out



def time_queries(db: Path, queries: list[str], engine: str | None = None,
                 limit: int = 10) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        query.search(db, q, limit=limit, engine=engine)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="20k docs, fewer queries")
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    ap.add_argument("--rank", action="store_true", help="only the ranking figures")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir())
                    / "agentlog-bench-cache", help="with --rank: keep/reuse the built"
                    " history.db here (keyed by its parameters)")
    ap.add_argument("--no-cache", action="store_true", help="with --rank: build afresh")
    ap.add_argument("--capture", choices=("quick", "mid", "gb"), default=None,
                    help="only time `capture` from empty until searchable on a synthetic home"
                         " of all three agents (quick: ~47 MB; mid: ~317 MB; gb: ~1 GB)")
    ap.add_argument("--reps", type=int, default=None,
                    help="interleaved repetitions of each column (with --capture: default 1,"
                         " best kept; reindex vs bare FTS5: default 5 up to 100,000 docs,"
                         " else 1; best and median)")
    ap.add_argument("--src", type=Path, default=None,
                    help="with --capture: use (or write once and keep) the synthetic home here")
    args = ap.parse_args()
    if args.capture:
        import cold

        work = args.keep or Path(tempfile.mkdtemp(prefix="agentlog-bench-capture-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            cold.run(work, args.capture, args.src, args.reps or 1)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
        return
    n = args.docs or (20_000 if args.quick else 1_000_000)
    nq = args.queries or (50 if args.quick else 200)
    work = args.keep or Path(tempfile.mkdtemp(prefix="agentlog-bench-search-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        reps = args.reps or (5 if n <= 100_000 else 1)
        run(work, n, nq, rank_only=args.rank, reps=reps,
            cache=None if args.no_cache else args.cache)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def run(work: Path, n: int, nq: int, *, rank_only: bool = False, reps: int = 1,
        cache: Path | None = None) -> None:
    print(f"agentlog search bench: {n:,} docs, {nq} queries per kind, SQLite "
          f"{sqlite3.sqlite_version}, Python {sys.version.split()[0]}")
    kept = cache_path(n, cache) if rank_only and cache is not None else None
    if kept is not None and kept.exists():
        print(f"  cached history.db (lists made): {kept}")
        ranking(kept, _vocab(random.Random(7)), n, nq, cached=True)
        return
    t0 = time.perf_counter()
    texts, vocab = make_texts(n)
    text_bytes = sum(len(t.encode()) for t in texts)
    print(f"  generated {text_bytes / 1e6:.1f} MB of text in {time.perf_counter() - t0:.1f} s")
    home = work / "home"
    t0 = time.perf_counter()
    log = make_log(home / "log", texts)
    print(f"  log of {log.head().seq:,} events in {time.perf_counter() - t0:.1f} s")

    # The machine may be shared: alternate the two builds (the bare one first in each round)
    # and report the best and the median of each, wall and CPU (CPU time of this process,
    # every thread and the full-text child process), with the load average.
    db = home / "history.db"
    walls: dict[str, list[float]] = {"bare": [], "reindex": []}
    cpus: dict[str, list[float]] = {"bare": [], "reindex": []}  # reindex: with its child
    main_cpu: list[float] = []  # the building thread alone (full-text work may be elsewhere)
    def children() -> float:  # the rebuild's full-text child process, once it has ended
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    for rep in range(reps):
        c0 = time.process_time()
        walls["bare"].append(bare_fts(work / f"bare{rep}.db", texts))
        cpus["bare"].append(time.process_time() - c0)
        if rep:
            (work / f"bare{rep}.db").unlink()
        c0, m0, k0 = time.process_time(), time.thread_time(), children()
        walls["reindex"].append(rebuild(db, log).seconds)
        cpus["reindex"].append(time.process_time() - c0 + children() - k0)
        main_cpu.append(time.thread_time() - m0)
    bare, reindex_s = min(walls["bare"]), min(walls["reindex"])
    med = {k: statistics.median(v) for k, v in walls.items()}
    cpu = {k: min(v) for k, v in cpus.items()}
    print(f"reindex: best {reindex_s:.2f} s = {n / reindex_s:,.0f} docs/s (median"
          f" {med['reindex']:.2f} s, CPU {cpu['reindex']:.2f} s); bare FTS5 insert best"
          f" {bare:.2f} s (median {med['bare']:.2f} s, CPU {cpu['bare']:.2f} s); {reps}"
          f" interleaved rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"  reindex / bare FTS5 insert: best {reindex_s / bare:.2f}x, median"
          f" {med['reindex'] / med['bare']:.2f}x, CPU {cpu['reindex'] / cpu['bare']:.2f}x;"
          f" the building thread's CPU {min(main_cpu):.2f} s = {min(main_cpu) / cpu['bare']:.2f}x"
          " (goal <= 2.0x, wall)")
    if rank_only:
        ranking(db, vocab, n, nq)
        log.close()
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(db, kept)
            print(f"  kept history.db for later runs: {kept}")
        return

    rng = random.Random(11)
    rare = [f"uniq{rng.randrange(n):08d}" for _ in range(nq)]
    mid = vocab[300:3000]
    two = [f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(nq)]
    common = [vocab[rng.randrange(0, 3)] for _ in range(nq)]
    time_queries(db, rare[:5] + common[:5])  # warm the page cache and connection
    bare_con = sqlite3.connect(work / "bare0.db")
    for name, qs in (("rare token", rare), ("two terms", two), ("very common", common)):
        ms = time_queries(db, qs)
        base = bare_queries(bare_con, qs)
        print(f"query {name:<12} p50 {pct(ms, 50):7.2f} ms  p99 {pct(ms, 99):7.2f} ms   (bare"
              f" FTS5 bounded bm25: p50 {pct(base, 50):.2f} ms, p99 {pct(base, 99):.2f} ms)")
    bare_con.close()
    plain_q = rare[: max(3, nq // 20)]
    ms = time_queries(db, plain_q, engine="plain")
    print(f"query plain rare   p50 {pct(ms, 50):7.2f} ms  (plain engine scans; {len(plain_q)}"
          " queries)")

    rg = shutil.which("rg")
    if rg:
        tdir = work / "text"
        tdir.mkdir(exist_ok=True)
        per = 10_000
        for i in range(0, n, per):
            (tdir / f".part{i // per:05d}.txt").write_text("\n".join(texts[i : i + per]))
        rg_ms = []
        for q in rare[:10]:
            t0 = time.perf_counter()
            subprocess.run([rg, "--hidden", "-c", "-F", q, str(tdir)], capture_output=True)
            rg_ms.append((time.perf_counter() - t0) * 1000)
        fts_ms = time_queries(db, rare[:10])
        print(f"rg --hidden rare p50 {pct(rg_ms, 50):.1f} ms; agentlog {pct(fts_ms, 50):.2f} ms;"
              f" ratio {pct(rg_ms, 50) / max(pct(fts_ms, 50), 1e-6):.0f}x")
    else:
        print("rg: not installed (skipped)")

    size = db.stat().st_size
    print(f"history.db {size / 1e6:.1f} MB for {text_bytes / 1e6:.1f} MB of text"
          f" ({size / text_bytes:.2f}x)")

    def proc_ms(cmd: list[str], reps: int = 15) -> float:
        out = []
        for _ in range(reps):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
            out.append((time.perf_counter() - t0) * 1000)
        return statistics.median(out)

    floor = proc_ms([sys.executable, "-c", "pass"])
    cli_floor = proc_ms([sys.executable, "-m", "cli.main", "--help"])
    whole = proc_ms([sys.executable, "-m", "cli.main", "--home", str(home), "search", rare[0],
                     "--json"])
    print(f"agentlog search --json whole process p50 {whole:.0f} ms (python -m cli.main; the"
          f" goal against claude-session-search is bench/startup.py's); floors:"
          f" python -c pass {floor:.0f} ms, agentlog --help {cli_floor:.0f} ms")
    log.close()


def _timed(fn: Any, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def ranking(db_path: Path, vocab: list[str], n: int, nq: int, *, cached: bool = False) -> None:
    """Ranking every match: agentlog against the former bounded ranking, FTS5's full bm25
    and the full bm25 x weight, on the same file; answers compared with the full ranking.
    `cached`: the file has every list already (only the "all lists" figures)."""
    from projections import db as dbm
    from projections import rank, ranking, search
    from projections.filters import Filters
    from projections.rank import champions, deep, multi, split

    con = dbm.connect(db_path, readonly=True)
    rng = random.Random(13)
    lists = con.execute("SELECT count(*), count(tau) FROM rank_terms").fetchone()
    made = "made (cached file)" if cached else (
        f"made by the rebuild (budget {champions.BUILD_BUDGET} x documents matches)")
    held = con.execute("SELECT count(*), coalesce(sum(n), 0), (SELECT coalesce(sum(length("
                       "data)), 0) FROM rank_deep_blob) FROM rank_deep").fetchone() \
        if deep.has_deep(con) else (0, 0, 0)
    cross = con.execute("SELECT count(DISTINCT term), coalesce(sum(length(data)), 0)"
                        " FROM rank_deep_cross").fetchone() if con.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'rank_deep_cross'").fetchone() else (0, 0)
    print(f"ranking: {lists[0]} words in > {champions.HOT_DF:,} documents, {lists[1]} lists {made};"
          f" {held[0]} deep lists ({held[1]:,} documents, {held[2] / 1e6:.1f} MB), {cross[0]}"
          f" with cross columns ({cross[1] / 1e6:.1f} MB)")
    sets = {
        "rare": [f"uniq{rng.randrange(n):08d}" for _ in range(nq)],
        "mid": [f"{rng.choice(vocab[300:3000])} {rng.choice(vocab[300:3000])}"
                for _ in range(nq)],
        "common": [vocab[rng.randrange(3, 300)] for _ in range(nq)],
        "hot": [vocab[rng.randrange(0, 3)] for _ in range(nq)],
    }
    def distinct(lo: int, hi: int, m: int) -> str:
        return " ".join(vocab[r] for r in rng.sample(range(lo, hi), m))

    # several common words (rank.multi): two of the 10 most common (each in 38-99 % of the
    # documents), two of rank 3..300, three of the 50 most common
    sets["2 hot"] = [distinct(0, 10, 2) for _ in range(nq)]
    sets["2 common"] = [distinct(3, 300, 2) for _ in range(nq)]
    sets["3 common"] = [distinct(0, 50, 3) for _ in range(nq)]
    w = ranking.WEIGHT_SQL
    bounded = (f"SELECT r FROM (SELECT d.rowid AS r, bm25(documents_fts) * {w} AS s"
               " FROM documents_fts JOIN documents d ON d.rowid = documents_fts.rowid"
               " WHERE documents_fts MATCH ? ORDER BY documents_fts.rowid DESC LIMIT 5000)"
               " ORDER BY s, r DESC LIMIT 10")
    full = ("SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?"
            " ORDER BY bm25(documents_fts) LIMIT 10")

    def expr(q: str) -> str:
        return " AND ".join(f'"{t}"' for t in q.split())

    def toks(q: str) -> list[str]:
        return q.split()

    def from_lists(q: str) -> bool:
        """Whether agentlog answers `q` from champion lists (certified)."""
        def accept(scored: list[tuple[float, int]], bound: float) -> Any:
            return rank.certify(10, search.take(con, 10, "1", []))(scored, bound)

        if len(q.split()) > 1:
            return multi.search(con, toks(q), accept) is not None
        got = champions.candidates(con, q)
        return got is not None and accept(got[0], got[1]) is not None

    def measure(label: str, only: tuple[str, ...] = ()) -> None:
        for name, qs in sets.items():
            qs_slow = qs if name in ("rare", "mid") else qs[: max(5, nq // 10)]
            if only and name not in only:
                continue
            old = _timed(lambda q: con.execute(bounded, (expr(q),)).fetchall(), qs)
            fts = _timed(lambda q: con.execute(full, (expr(q),)).fetchall(), qs_slow)
            every = _timed(lambda q: search.fts_search(con, toks(q), Filters(), 10,
                                                        lists=False), qs_slow)
            split.THREADS = 1  # the same ranking as one statement on one thread
            try:
                single = _timed(lambda q: search.fts_search(con, toks(q), Filters(), 10,
                                                             lists=False), qs_slow)
            finally:
                split.THREADS = None
            ours = _timed(lambda q: query.search(db_path, q, limit=10), qs)
            listed = sum(1 for q in qs if from_lists(q))
            differ = sum(
                [r[0] for r in search.fts_search(con, toks(q), Filters(), 10)]
                != [r[0] for r in search.fts_search(con, toks(q), Filters(), 10, lists=False)]
                for q in qs_slow)
            print(f"  {label} {name:<8} agentlog p50 {pct(ours, 50):7.2f} p99 {pct(ours, 99):8.2f}"
                  f" ms | bounded (newest 5,000) p50 {pct(old, 50):7.2f} p99 {pct(old, 99):7.2f}"
                  f" | FTS5 full bm25 p50 {pct(fts, 50):7.2f} p99 {pct(fts, 99):8.2f}"
                  f" | full bm25 x weight p50 {pct(every, 50):7.2f} p99 {pct(every, 99):8.2f}"
                  f" (one thread p50 {pct(single, 50):7.2f} p99 {pct(single, 99):8.2f})"
                  f" ({len(qs_slow)} q) | answered from a list {listed}/{len(qs)}"
                  f" | answers differing from the full ranking: {differ}/{len(qs_slow)}")

    query.search(db_path, sets["hot"][0])  # warm the page cache and connections
    if cached:
        measure("all lists:    ")
        con.close()
        return
    measure("after reindex:", ("rare", "mid", "common", "hot"))
    con.close()
    wcon = dbm.connect(db_path)
    t0 = time.perf_counter()
    wcon.execute("BEGIN")
    built = champions.build(wcon, budget=champions.BUILD_BUDGET * n)
    wcon.execute("ROLLBACK")
    wcon.close()
    print(f"ranking: the rebuild's share (champions.build with its budget, {built} lists) took"
          f" {time.perf_counter() - t0:.1f} s")
    con = dbm.connect(db_path, readonly=True)
    con.close()
    wcon = dbm.connect(db_path)
    t0 = time.perf_counter()
    wcon.execute("BEGIN")
    others = champions.make_wanted(wcon, None)
    wcon.execute("COMMIT")
    size = wcon.execute("SELECT count(*) FROM rank_champions").fetchone()[0]
    held = wcon.execute("SELECT count(*), coalesce(sum(n), 0), (SELECT coalesce(sum(length("
                        "data)), 0) FROM rank_deep_blob) FROM rank_deep").fetchone() \
        if deep.has_deep(wcon) else (0, 0, 0)
    wcon.close()
    print(f"ranking: made the other {others} lists in {time.perf_counter() - t0:.1f} s"
          f" ({size:,} champion rows; {held[0]} deep lists, {held[1]:,} documents,"
          f" {held[2] / 1e6:.1f} MB)")
    wcon = dbm.connect(db_path)
    t0, c0 = time.perf_counter(), time.process_time()
    crossed = 0
    while (wanted := deep.cross_wanted(wcon, champions.CHAMPIONS)) and deep.make_cross(
            wcon, wanted[0], champions.CHAMPIONS):
        crossed += 1
    cross = wcon.execute("SELECT count(*), coalesce(sum(length(data)), 0)"
                         " FROM rank_deep_cross").fetchone() if crossed else (0, 0)
    wcon.close()
    print(f"ranking: cross columns of {crossed} deep lists in {time.perf_counter() - t0:.1f} s"
          f" (CPU {time.process_time() - c0:.1f} s; {cross[0]:,} columns,"
          f" {cross[1] / 1e6:.1f} MB)")
    con = dbm.connect(db_path, readonly=True)
    measure("all lists:    ")
    con.close()


if __name__ == "__main__":
    main()
