"""Team search ranking (PostgreSQL): every match ranked, against the old newest-5,000 query.

N synthetic broker messages (bench/search.py's Zipf texts, one unique token each) are loaded
straight into `agentlog.documents` (COPY, then the tsvector and the indexes exactly as
`projections.pg.schema`/`project` make them; the search reads only that table, and the
real projection would take ~20 min at 1M). Then, interleaved query by query in one run:
- `projections.pg.query.search` of this tree (ranks every match: one word from its
  champion list, made here by `projections.pg.rank.make_lists` as the projector does;
  from schema step 5 the score is bm25 from stored statistics, which the load fills as the
  projector keeps them);
- the same function of a baseline revision (`--baseline REV`, default 404202f: ranks the
  newest `CANDIDATES` = 5,000 matches only; c2f93fb: `ts_rank` over every match, the score
  before step 5 — its one-word list path then reads bm25's lists, so time it, not its
  answers), loaded from `git show REV:…`;
for one rare token, one common word, two common words. Prints p50/p99 wall ms of each, how
many answers differ between the two (the baseline's answer is wrong when an older document
outranks the newest 5,000) and how many the lists answered.

A throwaway server is started with initdb + pg_ctl (tests/pgserver.py), unless --url.
With `--fold N`, also the projection (`project()`) of N new documents with the lists kept
in step (`rank.fold`) against the same without lists, best of 3 alternating rounds.
Usage: .venv/bin/python bench/pg_search.py [--quick] [--docs N] [--queries Q] [--url URL]
       [--baseline REV] [--fold N]
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import load_average, pct, pg_parser, pg_start, pg_stop  # noqa: E402
from search import make_texts  # noqa: E402

from projections.pg import query as pgq  # noqa: E402
from projections.pg import rank, schema  # noqa: E402
from projections.pg.project import words  # noqa: E402

KINDS = ("message", "report", "progress", "approval")


def _rev_module(rev: str, path: str, name: str) -> ModuleType:
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
                         check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, f"{rev}:{path}", "exec"), mod.__dict__)
    return mod


def baseline_module(rev: str) -> ModuleType:
    """REV's projections/pg/query.py, with REV's own `bm25` and `rank` where it has them
    (their statements' signatures change between revisions)."""
    mod = _rev_module(rev, "projections/pg/query.py", "pg_query_baseline")
    for name in ("bm25", "rank"):
        if hasattr(mod, name):
            setattr(mod, name, _rev_module(rev, f"projections/pg/{name}.py",
                                           f"pg_{name}_baseline"))
    return mod


def load(url: str, n: int) -> list[str]:
    """Fill agentlog.documents with `n` documents (ids b0.., newest = highest i)."""
    import psycopg

    texts, vocab = make_texts(n)
    with psycopg.connect(url) as con:
        schema.ensure_schema(con)
        con.execute("TRUNCATE agentlog.documents")
        for ix in ("documents_tsv", "documents_at"):
            con.execute(f"DROP INDEX IF EXISTS agentlog.{ix}")
        con.execute("CREATE TEMP TABLE docs_in(id text, kind text, at int8, project text,"
                    " text text, words text)")
        with con.cursor() as cur, cur.copy(
                "COPY docs_in FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "text", "int8", "text", "text", "text"])
            for i, t in enumerate(texts):
                cp.write_row((f"message:b{i}", KINDS[i % 4], 1_700_000_000_000 + i * 1000,
                              f"/proj/{i % 13}", t, words(t)))
        con.execute("INSERT INTO agentlog.documents(host, id, kind, agent, at, project,"
                    " message, conversation, text, tsv) SELECT 'host' || (substr(id, 10)::int"
                    " % 4), id, kind, 'other', at, project, substr(id, 9), 'thread:' || id,"
                    " text, to_tsvector('simple', words) FROM docs_in ORDER BY at")
        if con.execute("SELECT to_regclass('agentlog.bm25_hosts')").fetchone()[0] is not None:
            # bm25's statistics as the projector keeps them (projections.pg.bm25): the
            # texts are ASCII words, so the tsvector's positions are FTS5's counts (no tfx)
            con.execute("UPDATE agentlog.documents SET lrow = rid, dl = (SELECT"
                        " coalesce(sum(array_length(u.positions, 1)), 0) FROM unnest(tsv) u)")
            con.execute("INSERT INTO agentlog.bm25_hosts(host, docs, tokens) SELECT host,"
                        " count(*), sum(dl) FROM agentlog.documents GROUP BY host")
            con.execute("INSERT INTO agentlog.bm25_df(term, host, df) SELECT u.lexeme, d.host,"
                        " count(*) FROM agentlog.documents d, unnest(d.tsv) u"
                        " GROUP BY u.lexeme, d.host")
        con.commit()
        # the indexes dropped above, as the schema's step 1 makes them (ensure_schema would
        # not: the database is at the latest version already)
        for ix in ("documents_tsv", "documents_at"):
            con.execute(next(s for s in schema.DDL.split(";")
                             if f"INDEX IF NOT EXISTS {ix} " in s))
        con.commit()
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("VACUUM ANALYZE agentlog.documents")
    t0 = time.perf_counter()
    made = 1
    with psycopg.connect(url) as con:
        while made:  # what the projector does after each pass, until none is left
            made = rank.make_lists(con)
        lists = con.execute("SELECT count(*) FROM agentlog.rank_terms").fetchone()
        size = con.execute(
            "SELECT count(*), pg_total_relation_size('agentlog.rank_champions'),"
            " pg_database_size(current_database()), (SELECT count(*) FROM"
            " agentlog.rank_cross) FROM agentlog.rank_champions").fetchone()
    print(f"champion lists: {lists[0] if lists else 0} made in {time.perf_counter() - t0:.1f} s;"
          f" {size[0]:,} members ({size[3]} deep lists) in {size[1] / 1e6:.1f} MB of the"
          f" database's {size[2] / 1e6:.1f} MB")
    return vocab


def timed(fn: Any, q: str) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    hits = fn(q)["hits"]
    return (time.perf_counter() - t0) * 1000, [h["id"] for h in hits]


def fold_cost(url: str, texts: list[str], work: Path) -> None:
    """Seconds of `project()` for the same new documents with the lists kept (fold) and
    without (rank.ready patched false), one host each, alternating, 3 rounds."""
    from eventlog.events import MessageSent
    from eventlog.store import EventLog
    from projections.pg.project import project
    from projections.pg.sync import sync

    times: dict[bool, list[float]] = {True: [], False: []}
    real = rank.ready
    for r in range(3):
        for keep in (r % 2 == 0, r % 2 == 1):
            host = f"fold{r}{int(keep)}"
            log = EventLog(work / host, command="bench")
            log.append([(f"m{i}".encode(), MessageSent(
                id=f"{host}-{i}", sender="peer", to=["x"], kind=KINDS[i % 4], body=t,
                at=1_800_000_000_000 + i, project="/fold")) for i, t in enumerate(texts)])
            sync(log, url, host)
            rank.ready = real if keep else (lambda con, write=False: False)  # type: ignore
            try:
                t0 = time.perf_counter()
                project(url, work / "scratch", hosts=[host])
                times[keep].append(time.perf_counter() - t0)
            finally:
                rank.ready = real  # type: ignore[method-assign]
    best = {k: min(v) for k, v in times.items()}
    print(f"projection of {len(texts):,} new documents: with the lists folded"
          f" {best[True]:.2f} s, without {best[False]:.2f} s (best of 3; ratio"
          f" {best[True] / best[False]:.2f})")


def main() -> None:
    ap = pg_parser()
    ap.add_argument("--baseline", default="404202f", help="revision ranking the newest 5,000")
    ap.add_argument("--no-load", action="store_true", help="--url already holds the documents")
    ap.add_argument("--fold", type=int, default=0, metavar="N",
                    help="also time project() of N new documents with and without the lists")
    args = ap.parse_args()
    n = args.docs or (100_000 if args.quick else 1_000_000)
    nq = args.queries or (30 if args.quick else 100)
    base = baseline_module(args.baseline)
    url, server = pg_start(args.url, "bench/pg_search.py")
    try:
        t0 = time.perf_counter()
        vocab = make_texts(1)[1] if args.no_load else load(url, n)
        print(f"{n:,} documents loaded in {time.perf_counter() - t0:.0f} s; {nq} queries a"
              f" kind; baseline {args.baseline}; load average {load_average()}")
        rng = random.Random(11)
        kinds = {
            "rare token": [f"uniq{rng.randrange(n):08d}" for _ in range(nq)],
            "common word": [vocab[rng.randrange(0, 3)] for _ in range(nq)],
            "two common": [f"{vocab[a]} {vocab[b]}" for a, b in
                           (rng.sample(range(6), 2) for _ in range(nq))],
        }
        import psycopg

        with psycopg.connect(url, autocommit=True) as con:
            for q in (vocab[0], vocab[5]):
                df = con.execute("SELECT count(*) FROM agentlog.documents WHERE tsv @@"
                                 " plainto_tsquery('simple', %s)", (q,)).fetchone()
                print(f"  '{q}' matches {df[0] if df else 0:,} documents")
        for q in (kinds["rare token"][:3] + kinds["common word"][:3]):  # warm both
            pgq.search(url, q)
            base.search(url, q)
        for name, qs in kinds.items():
            new_ms: list[float] = []
            old_ms: list[float] = []
            differ = listed = 0
            for i, q in enumerate(qs):  # interleaved: the same load for both; which goes
                # first alternates, since the first brings a cold document into the cache
                if i % 2:
                    t_old, ids_old = timed(lambda q: base.search(url, q), q)
                t_new, ids_new = timed(lambda q: pgq.search(url, q), q)
                listed += pgq.last_path() == "lists"
                if not i % 2:
                    t_old, ids_old = timed(lambda q: base.search(url, q), q)
                new_ms.append(t_new)
                old_ms.append(t_old)
                differ += ids_new != ids_old
            print(f"{name:<12} this tree p50 {pct(new_ms, 50):8.1f} ms p99"
                  f" {pct(new_ms, 99):8.1f} ms | baseline p50 {pct(old_ms, 50):7.1f} ms"
                  f" p99 {pct(old_ms, 99):7.1f} ms | p50 ratio"
                  f" {pct(new_ms, 50) / pct(old_ms, 50):5.1f}x | answers differing"
                  f" {differ}/{len(qs)} | from the lists {listed}/{len(qs)}")
        if args.fold:
            import shutil
            import tempfile

            work = Path(tempfile.mkdtemp(prefix="agentlog-bench-pgfold-"))
            try:
                fold_cost(url, make_texts(args.fold, seed=9)[0], work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        pgq.close_connections()
        base.close_connections()
        pg_stop(server, args.keep)


if __name__ == "__main__":
    main()
