"""Benchmark of the team server (PostgreSQL), against baselines measured in the same run.

N synthetic broker messages (bench/search.py's Zipf texts, one unique token each) are split
over 4 simulated hosts, each with its own LMDB log. Prints:
- sync: records/s and MB/s of `projections.pg.sync.sync` over the 4 hosts, against one bare
  binary COPY of the same record bytes into an unindexed table (the floor);
- projection: docs/s of `projections.pg.project.project` (all hosts), against the local
  SQLite `rebuild` of one log holding the same documents;
- search p50/p99 of rare-token, two-term, very-common-term and two-character CJK queries
  (one text in ten holds a run of CJK words; a trigram cannot serve two characters) through
  `projections.pg.query.search`, against `projections.query.search` on that history.db;
- disk: the server's records and documents (with indexes) against LMDB and history.db, the
  database's size over the text's, every table (its TOAST apart) and index of the schema, what
  a document holds (text, stored tsvector, row), the statistics' rows of words in one document,
  and the layout's floor: records + the text as stored + the tsvector's GIN index.

A throwaway server is started with initdb + pg_ctl (tests/pgserver.py), unless --url.
Usage: .venv/bin/python bench/postgres.py [--quick] [--docs N] [--queries Q] [--url URL]
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import pct, pg_parser, pg_start, pg_stop  # noqa: E402
from search import make_texts  # noqa: E402

from eventlog.events import MessageSent  # noqa: E402
from eventlog.store import EventLog  # noqa: E402
from projections import query  # noqa: E402
from projections.pg import query as pgq  # noqa: E402
from projections.pg.project import project  # noqa: E402
from projections.pg.sync import sync  # noqa: E402
from projections.rebuild import rebuild  # noqa: E402

HOSTS = 4


# two-character CJK words: ordered pairs of 44 common characters (1,892 words, each in about
# one CJK text in 300), so a query's matches are few, as a real word's are
_CJK_CHARS = ("数据迁移计划中文搜索测试件错误修复部署日志接口配置"
              "用户缓存索引表单模型服务器网络安全性能")
CJK_WORDS = [a + b for a in _CJK_CHARS for b in _CJK_CHARS if a != b]


def fill(log: EventLog, texts: list[str], idx: list[int]) -> None:
    for start in range(0, len(idx), 5000):
        items = []
        for i in idx[start : start + 5000]:
            ev = MessageSent(id=f"b{i}", sender=f"peer{i % 7}", to=["x"],
                             kind=("message", "report", "progress", "approval")[i % 4],
                             body=texts[i], at=1_700_000_000_000 + i * 1000,
                             project=f"/proj/{i % 13}")
            items.append((f"message\x1fb{i}".encode(), ev))
        log.append(items)



def timed(fn: object, qs: list[str]) -> list[float]:
    out = []
    for q in qs:
        t0 = time.perf_counter()
        fn(q)  # type: ignore[operator]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def bare_copy(url: str, logs: dict[str, EventLog]) -> tuple[float, int]:
    import psycopg

    with psycopg.connect(url) as con:
        con.execute("CREATE UNLOGGED TABLE IF NOT EXISTS bare(host text, seq bigint, hash bytea,"
                    " value bytea)")
        con.execute("TRUNCATE bare")
        con.commit()
        con.execute("ALTER TABLE bare SET LOGGED")  # same durability as agentlog.records
        con.commit()
        t0 = time.perf_counter()
        nbytes = 0
        with con.cursor() as cur, cur.copy(
                "COPY bare (host, seq, hash, value) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "int8", "bytea", "bytea"])
            for host, log in logs.items():
                for r in log.iter_raw(1, 1000):
                    nbytes += len(r.value)
                    cp.write_row((host, r.seq, r.value[1:33], r.value))
        con.commit()
        dt = time.perf_counter() - t0
        con.execute("DROP TABLE bare")
        con.commit()
    return dt, nbytes


def main() -> None:
    ap = pg_parser()
    args = ap.parse_args()
    n = args.docs or (20_000 if args.quick else 1_000_000)
    nq = args.queries or (50 if args.quick else 200)
    work = Path(tempfile.mkdtemp(prefix="agentlog-bench-pg-"))
    url, server = pg_start(args.url, "bench/postgres.py")
    try:
        t0 = time.perf_counter()
        texts, vocab = make_texts(n)
        crng = random.Random(5)  # one text in ten also holds a run of CJK words (no spaces)
        for i in range(0, n, 10):
            texts[i] += " " + "".join(crng.choice(CJK_WORDS) for _ in range(6))
        logs = {}
        for h in range(HOSTS):
            logs[f"host{h}"] = EventLog(work / f"log{h}", command="bench")
            fill(logs[f"host{h}"], texts, list(range(h, n, HOSTS)))
        combined = EventLog(work / "combined", command="bench")
        fill(combined, texts, list(range(n)))
        print(f"{n:,} documents over {HOSTS} hosts, {nq} queries a kind"
              f" (made in {time.perf_counter() - t0:.0f} s)")

        bare_s, nbytes = bare_copy(url, logs)
        records = sum(log.head().seq for log in logs.values())
        t0 = time.perf_counter()
        for host, log in logs.items():
            sync(log, url, host)
        sync_s = time.perf_counter() - t0
        mb = nbytes / 1e6
        print(f"sync: {records:,} records, {mb:.1f} MB in {sync_s:.1f} s = "
              f"{records / sync_s:,.0f} records/s, {mb / sync_s:.1f} MB/s; bare COPY "
              f"{bare_s:.1f} s = {records / bare_s:,.0f} records/s, {mb / bare_s:.1f} MB/s;"
              f" ratio {bare_s / sync_s:.2f}")

        t0 = time.perf_counter()
        result = project(url, work / "scratch", batch=2000)
        proj_s = time.perf_counter() - t0
        db = work / "history.db"
        local = rebuild(db, combined)
        print(f"projection: {n:,} docs in {proj_s:.1f} s = {n / proj_s:,.0f} docs/s"
              f" ({result.events:,} events); local SQLite rebuild {local.seconds:.1f} s ="
              f" {n / local.seconds:,.0f} docs/s; ratio {local.seconds / proj_s:.2f}")

        import psycopg

        with psycopg.connect(url, autocommit=True) as con:
            con.execute("VACUUM ANALYZE agentlog.documents")
            con.execute("VACUUM ANALYZE agentlog.records")
            sizes = con.execute(
                "SELECT pg_total_relation_size('agentlog.records'),"
                " pg_total_relation_size('agentlog.documents'),"
                " pg_relation_size('agentlog.documents'),"
                " pg_relation_size('agentlog.documents_tsv'),"
                " pg_relation_size('agentlog.documents_cjk_trgm'),"
                " pg_database_size(current_database())"
            ).fetchone()
            # every relation of the schema: heap, its TOAST (with the TOAST index), each index
            breakdown = con.execute(
                "SELECT c.relname, c.relkind::text, pg_relation_size(c.oid),"
                " coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)"
                " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'agentlog' AND c.relkind IN ('r', 'i')"
                " ORDER BY pg_relation_size(c.oid) DESC").fetchall()
            # what one document holds (the text, its stored tsvector, the whole row) and the
            # statistics' rows of words in one document only: the size floor (printed below)
            per_doc = con.execute(
                "SELECT sum(pg_column_size(d.text)), avg(pg_column_size(d.text)),"
                " avg(pg_column_size(d.tsv)), avg(pg_column_size(d.*))"
                " FROM agentlog.documents d").fetchone()
            df_rows = con.execute("SELECT count(*), count(*) FILTER (WHERE df = 1)"
                                  " FROM agentlog.bm25_df").fetchone()

        rng = random.Random(11)
        rare = [f"uniq{rng.randrange(n):08d}" for _ in range(nq)]
        mid = vocab[300:3000]
        two = [f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(nq)]
        common = [vocab[rng.randrange(0, 3)] for _ in range(nq)]
        for q in rare[:5] + common[:5]:  # warm caches and connections
            pgq.search(url, q)
            query.search(db, q)
        cjk2 = [rng.choice(CJK_WORDS) for _ in range(nq)]  # two characters: no trigram
        for name, qs in (("rare token", rare), ("two terms", two), ("very common", common),
                         ("CJK 2-char", cjk2)):
            pg_ms = timed(lambda q: pgq.search(url, q), qs)
            lo_ms = timed(lambda q: query.search(db, q), qs)
            print(f"search {name:<12} postgres p50 {pct(pg_ms, 50):7.2f} ms p99"
                  f" {pct(pg_ms, 99):7.2f} ms | local SQLite p50 {pct(lo_ms, 50):7.2f} ms p99"
                  f" {pct(lo_ms, 99):7.2f} ms | p50 ratio {pct(pg_ms, 50) / pct(lo_ms, 50):.1f}x")
        # the same two-character CJK queries without the bigram condition: the plan before
        # schema 2 (only the CJK-partial trigram index, which cannot serve two characters)
        with_grams = pgq._all_have_grams
        pgq._all_have_grams = lambda con: False  # type: ignore[assignment]
        try:
            old_ms = timed(lambda q: pgq.search(url, q), cjk2)
        finally:
            pgq._all_have_grams = with_grams  # type: ignore[assignment]
        print(f"search CJK 2-char without the bigrams (before): postgres p50"
              f" {pct(old_ms, 50):7.2f} ms p99 {pct(old_ms, 99):7.2f} ms")
        hits = pgq.search(url, rare[0])["hits"]
        assert hits and hits[0]["host"], "the rare token must be found"

        lmdb = sum(log.size_bytes() for log in logs.values())
        text_mb = sum(len(t.encode()) for t in texts) / 1e6
        print(f"disk: server records {sizes[0] / 1e6:.1f} MB (LMDB logs {lmdb / 1e6:.1f} MB);"
              f" documents {sizes[1] / 1e6:.1f} MB = table {sizes[2] / 1e6:.1f} + tsv GIN"
              f" {sizes[3] / 1e6:.1f} + CJK trigram GIN {sizes[4] / 1e6:.1f} + other indexes"
              f" (history.db {db.stat().st_size / 1e6:.1f} MB; text {text_mb:.1f} MB);"
              f" database {sizes[5] / 1e6:.1f} MB")
        print(f"disk: database / text = {sizes[5] / 1e6 / text_mb:.1f}x; by relation (MB):")
        for name, kind, main, toast in breakdown:
            if main + toast >= 100_000:
                print(f"  {name:<32} {'index' if kind == 'i' else 'table'} {main / 1e6:8.1f}"
                      + (f" + TOAST {toast / 1e6:.1f}" if toast else ""))
        stored_text, text_b, tsv_b, row_b = (float(v) for v in per_doc)
        floor = sizes[0] + stored_text + sizes[3]
        print(f"disk: a document holds {text_b:.0f} B of text, {tsv_b:.0f} B of tsvector, a"
              f" {row_b:.0f} B row; bm25_df {df_rows[0]:,} rows, {df_rows[1]:,} of words in one"
              f" document ({df_rows[1] / max(1, df_rows[0]):.0%})")
        print(f"disk: floor of this layout = records {sizes[0] / 1e6:.1f} + the text as stored"
              f" {stored_text / 1e6:.1f} + tsv GIN {sizes[3] / 1e6:.1f} MB ="
              f" {floor / 1e6 / text_mb:.2f}x the text (nothing else counted)")
    finally:
        pgq.close_connections()
        query.close_connections()
        pg_stop(server, args.keep)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
