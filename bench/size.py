"""Benchmark of history.db's size on the shared real corpora, against a baseline revision.

Captures ../shared/corpus and ../shared/corpus-more (read in place, never copied: Claude and
Codex files hard-linked at their original paths, see tests/corpus_home.py) into a temporary
home and prints, for this tree and, with `--baseline REV`, for that git revision (its tree
exported next to the work folder and run with this venv), interleaved round by round (the
order alternating):
- history.db bytes / source bytes (the bytes captured from every source), log bytes / source
  bytes, and the dbstat breakdown of history.db by table and index;
- CPU seconds (user + system of the worker: a loaded machine inflates the wall clock) to
  capture, to rebuild history.db from the log (`reindex`), and to apply the same log through
  the incremental path (catch-up in batches of 64, via the triggers);
- in-process search CPU time over the fixed query set of tests/corpus_home.py, both engines
  (mean over the queries of each query's best time);
- whether the two trees answer alike (the fingerprint of tests/test_size.py).

Usage: .venv/bin/python bench/size.py [--quick] [--rounds N] [--baseline REV]
       [--only-corpus] [--keep DIR] [--fingerprint]
`--fingerprint` prints this tree's fingerprint as tests/fixtures/corpus_fingerprint.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HELPER = ROOT / "tests" / "corpus_home.py"
CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_MORE = ROOT.parent / "shared" / "corpus-more"


def _helper() -> Any:
    """tests/corpus_home.py of THIS tree, loaded by path (a baseline tree lacks it)."""
    spec = importlib.util.spec_from_file_location("size_corpus_home", HELPER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cpu() -> float:
    """CPU seconds of this process (user + system): on a shared, loaded machine the wall
    clock mostly measures the neighbours; this counts the work done."""
    return time.process_time()


def allocated(path: Path) -> int:
    """Bytes a file or folder occupies on disk (what `du` counts)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def worker(work: Path, corpus: Path, corpus_more: Path, reps: int) -> dict[str, Any]:
    """Everything measured for the tree on sys.path (this tree or a baseline's)."""
    from eventlog import EventLog
    from projections import db, query
    from projections.catchup import catch_up
    from projections.rebuild import rebuild

    ch = _helper()
    roots = ch.corpus_roots(corpus, corpus_more, work / "stage")
    log = EventLog(work / "log")
    t0 = _cpu()
    ch.capture_all(log, roots)
    capture_s = _cpu() - t0
    path = work / "history.db"
    rebuilds = []
    for _ in range(reps):
        t0 = _cpu()
        rebuild(path, log)
        rebuilds.append(_cpu() - t0)
    inc = work / "incremental.db"
    con = db.connect(inc)
    db.create_schema(con)
    con.close()
    t0 = _cpu()
    while catch_up(inc, log, batch=64, max_events=10_000).events:
        pass
    incremental_s = _cpu() - t0
    log.close()
    con = db.connect(path, readonly=True)
    try:
        stat = {str(n): int(s) for n, s in con.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name")}
        docs = int(con.execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        con.close()
    source = ch.source_bytes(path)
    latency: dict[str, float] = {}
    for engine in ("fts5", "plain"):
        best = dict.fromkeys(ch.QUERIES, float("inf"))
        for _ in range(reps + 1):  # the first pass also warms the page cache
            for q in ch.QUERIES:
                t0 = _cpu()
                query.search(path, q, limit=50, engine=engine)
                best[q] = min(best[q], _cpu() - t0)
        latency[engine] = sum(best.values()) / len(best) * 1000
    fp = ch.fingerprint(path, ch.normalizer(roots, [corpus.parent, work / "stage"]))
    return {
        "source": source, "db": path.stat().st_size, "log": allocated(work / "log"),
        "documents": docs, "dbstat": stat, "capture_s": capture_s,
        "rebuild_s": min(rebuilds), "incremental_s": incremental_s,
        "search_ms": latency, "fingerprint": fp,
    }


def run_tree(tree: Path, work: Path, args: argparse.Namespace, reps: int) -> dict[str, Any]:
    """One worker process with `tree` first on sys.path (-P: bench/ itself is not)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    out = work / "result.json"
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run([sys.executable, "-P", str(Path(__file__).resolve()), "--worker", str(work),
                    "--reps", str(reps), *(["--only-corpus"] if args.only_corpus else [])],
                   env=env, check=True, cwd=tree)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


_SAME = {"document_rows": "documents (rows)", "documents": "documents (rows)",
         "sqlite_autoindex_document_rows_1": "documents id UNIQUE index",
         "sqlite_autoindex_documents_1": "documents id UNIQUE index"}


def _groups(stat: dict[str, int]) -> dict[str, int]:
    """dbstat rows folded: each FTS5 index's shadow tables together, the documents table (a
    view over `document_rows` since schema 9) under one name, other names as they are."""
    out: dict[str, int] = {}
    for name, size in stat.items():
        key = _SAME.get(name, name)
        for fts in ("documents_fts", "documents_cjk"):
            if name.startswith(fts + "_") and not name.endswith("_terms"):
                key = fts + " (all shadow tables)"
        out[key] = out.get(key, 0) + size
    return out


def report(results: dict[str, list[dict[str, Any]]]) -> None:
    def best(label: str, key: str) -> float:
        return float(min(r[key] for r in results[label]))

    labels = list(results)
    first = results[labels[0]][0]
    src = first["source"]
    print(f"source bytes captured: {src:,} ({first['documents']:,} documents)")
    for label in labels:
        r = results[label][0]
        print(f"{label:>10}: history.db {r['db']:,} B = {r['db'] / r['source']:.1%} of source;"
              f" log {r['log']:,} B = {r['log'] / r['source']:.1%}")
    print("\ndbstat (bytes, % of source bytes):")
    groups = {label: _groups(results[label][0]["dbstat"]) for label in labels}
    names = sorted({n for g in groups.values() for n in g},
                   key=lambda n: -max(g.get(n, 0) for g in groups.values()))
    print(f"{'table / index':44}" + "".join(f"{label:>22}" for label in labels))
    for n in names:
        if max(g.get(n, 0) for g in groups.values()) < src / 500:
            continue
        print(f"{n:44}" + "".join(
            f"{groups[label].get(n, 0):>13,} {groups[label].get(n, 0) / src:>7.1%}"
            for label in labels))
    rounds = len(results[labels[0]])
    print(f"\ntimes (the best of {rounds} round(s); a shared machine only ever adds time):")
    for key, what in (("capture_s", "capture, CPU s"), ("rebuild_s", "rebuild (reindex), CPU s"),
                      ("incremental_s", "catch-up via triggers, CPU s")):
        vals = [best(label, key) for label in labels]
        ratio = f"   ratio {vals[0] / vals[1]:.2f}x" if len(vals) > 1 and vals[1] else ""
        print(f"{what:32}" + "".join(f"{v:>12.2f}" for v in vals) + ratio)
    for engine in ("fts5", "plain"):
        vals = [min(r["search_ms"][engine] for r in results[label]) for label in labels]
        ratio = f"   ratio {vals[0] / vals[1]:.2f}x" if len(vals) > 1 and vals[1] else ""
        print(f"{'search ' + engine + ', CPU ms/query':32}" + "".join(f"{v:>12.2f}" for v in vals)
              + ratio)
    if len(labels) > 1:
        a, b = (results[label][0]["fingerprint"] for label in labels)
        differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        print("\nanswers identical (documents + query set, both engines):",
              "yes" if not differ else f"NO: {differ}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one round, one repetition")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--baseline", default=None, metavar="REV")
    ap.add_argument("--only-corpus", action="store_true",
                    help="../shared/corpus alone (Claude, Codex, opencode)")
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--fingerprint", action="store_true")
    ap.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    more = Path("/nonexistent") if args.only_corpus else CORPUS_MORE
    if args.worker is not None:
        res = worker(args.worker, CORPUS.resolve(), more, args.reps)
        (args.worker / "result.json").write_text(json.dumps(res))
        return
    if not CORPUS.is_dir():
        sys.exit(f"bench/size.py: the shared corpus is missing at {CORPUS}")
    # here, not at the top: a worker runs with -P and another tree first on its path
    from common import workdir

    with workdir(args.keep, "agentlog-size-") as work:
        compare(work, args)


def compare(work: Path, args: argparse.Namespace) -> None:
    """This tree (and the baseline's) round by round, the order alternating; the report."""
    from common import export_rev

    rounds, reps = (1, 1) if args.quick else (args.rounds, args.reps)
    trees = {"this tree": ROOT}
    if args.baseline:
        trees[args.baseline[:10]] = export_rev(args.baseline, work / "baseline-src")
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for i in range(rounds):
        order = list(trees.items())
        for j, (label, tree) in enumerate(order if i % 2 == 0 else order[::-1]):
            results[label].append(run_tree(tree, work / f"home-{i}-{j}", args, reps))
    if args.fingerprint:
        fp = results["this tree"][0]["fingerprint"]
        lines = [f"  {json.dumps(k, ensure_ascii=False)}: [{n}, \"{h}\"]"
                 for k, (n, h) in sorted(fp.items())]
        print("{\n" + ",\n".join(lines) + "\n}")
        return
    report(results)


if __name__ == "__main__":
    main()
