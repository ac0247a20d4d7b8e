"""Issue 27: team search's first pages against local search's over the same data.

Both shared corpora are captured into one temporary home (tests/corpus_home.py), history.db
is rebuilt from the log, and the same log is synced to a throwaway PostgreSQL server
(tests/pgserver.py) and projected. The queries: words spread evenly over history.db's
vocabulary among those in at least 50 documents (one word each), and pairs of them whose
AND still has 50 matches (`--queries` in all). For each query, the first 50 hits of local
search (`projections.query.search`) against:
- `team`: `projections.pg.query.search` of this tree (bm25 × role weight from the stored
  statistics, projections/pg/bm25.py; before schema step 5, ts_rank × role weight);
- `bm25-sql`: FTS5's bm25 × role weight computed in SQL over the server's tsvector
  (tests/test_team_parity.py `BM25`, the prototype of issue 27's score).
Prints, per engine, how many top-50 pages equal the local one, the mean and minimum number
of documents the two top-10s share, and the top-50s' mean shared documents.
Usage: .venv/bin/python bench/pg_parity.py [--queries N] [--url URL] [--keep]
"""

from __future__ import annotations

import argparse
import importlib.util
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # first: bench/eventlog.py is a bench, not the package

from common import pg_start, pg_stop  # noqa: E402

from eventlog import EventLog  # noqa: E402
from projections import query as local  # noqa: E402
from projections.pg import query as pgq  # noqa: E402
from projections.pg.project import project  # noqa: E402
from projections.pg.sync import sync  # noqa: E402
from projections.rebuild import rebuild  # noqa: E402
from tests.test_team_parity import bm25_page  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_MORE = ROOT.parent / "shared" / "corpus-more"
HOST = "home"


def _helper() -> Any:
    spec = importlib.util.spec_from_file_location("parity_corpus_home",
                                                  ROOT / "tests" / "corpus_home.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ids(res: dict[str, Any]) -> list[str]:
    return [str(h["id"]) for h in res["hits"]]


def queries(db: Path, n: int) -> list[str]:
    con = sqlite3.connect(db)
    terms = [str(r[0]) for r in con.execute(
        "SELECT term FROM documents_fts_terms WHERE doc >= 50 AND term GLOB '[a-z]*'"
        " AND length(term) > 2 ORDER BY doc DESC, term")]
    con.close()
    singles = n - n // 4
    step = max(1, len(terms) // singles)
    out = terms[::step][:singles]
    pairs = []
    for i in range(0, min(len(terms), 200), 3):  # pairs of common words with >= 50 matches
        q = f"{terms[i]} {terms[i + 1]}" if i + 1 < len(terms) else None
        if q and len(local.search(db, q, limit=50)["hits"]) == 50:
            pairs.append(q)
        if len(pairs) >= n - len(out):
            break
    return out + pairs


def _varints(blob: bytes) -> list[int]:
    """FTS5's averages record (documents_fts_data id 1): SQLite varints (rows, tokens)."""
    out, v = [], 0
    for b in blob:
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            out.append(v)
            v = 0
    return out


def _disk(url: str, db: Path, log: EventLog) -> None:
    """The team store's size on real transcripts (issue 27's goal: <= 3x the text), vacuumed
    (GIN pending lists merged), by relation, beside history.db and the log holding the same
    documents."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("VACUUM ANALYZE")
        rels = con.execute(
            "SELECT c.relname, pg_relation_size(c.oid)"
            " + coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'agentlog' AND c.relkind IN ('r', 'i')"
            " ORDER BY 2 DESC").fetchall()
        got = con.execute("SELECT sum(octet_length(text)), sum(pg_column_size(text)),"
                          " pg_total_relation_size('agentlog.records'),"
                          " pg_relation_size('agentlog.documents_tsv')"
                          " FROM agentlog.documents").fetchone()
    assert got is not None and got[0] is not None, "no documents were projected"
    text, stored, records, gin = (int(v) for v in got)
    total = sum(int(r[1]) for r in rels)
    big = ", ".join(f"{name} {size / 1e6:.1f}" for name, size in rels[:8])
    print(f"disk: the team schema {total / 1e6:.1f} MB = {total / text:.1f}x the documents'"
          f" text ({text / 1e6:.1f} MB; largest relations with their TOAST, MB: {big});"
          f" local history.db {db.stat().st_size / 1e6:.1f} MB + log"
          f" {log.size_bytes() / 1e6:.1f} MB")
    print(f"disk: floor of this layout = records {records / 1e6:.1f} + the text as stored"
          f" {stored / 1e6:.1f} + tsv GIN {gin / 1e6:.1f} MB ="
          f" {(records + stored + gin) / text:.2f}x the text (nothing else counted)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=47)
    ap.add_argument("--url", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    ch = _helper()
    url, server = pg_start(args.url, "pg_parity")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            t0 = time.perf_counter()
            log = EventLog(work / "log")
            ch.capture_all(log, ch.corpus_roots(CORPUS.resolve(), CORPUS_MORE, work / "stage"))
            db = work / "history.db"
            rebuild(db, log)
            sync(log, url, HOST)
            project(url, work / "scratch")
            ndocs = sqlite3.connect(db).execute("SELECT count(*) FROM document_rows").fetchone()
            print(f"home: {ndocs[0]} documents, built in {time.perf_counter() - t0:.0f} s")
            qs = queries(db, args.queries)
            import psycopg

            stats: dict[str, list[tuple[bool, int, int]]] = {"team": [], "bm25-sql": []}
            from tests.test_team_parity import STATS

            with psycopg.connect(url) as con:
                row = con.execute(STATS, {"host": HOST}).fetchone()
                assert row is not None
                host_stats = (float(row[0]), float(row[1]))
                blob = sqlite3.connect(db).execute(
                    "SELECT block FROM documents_fts_data WHERE id = 1").fetchone()[0]
                nrow, ntok = _varints(blob)[:2]
                print(f"statistics: local {nrow} rows, {ntok / nrow:.2f} tokens a row;"
                      f" server tsvector {host_stats[0]:.0f} rows, {host_stats[1]:.2f}"
                      " positions a row")
                kept = con.execute("SELECT sum(docs), sum(tokens) FROM agentlog.bm25_hosts"
                                   ).fetchone()
                exc = con.execute("SELECT count(*) FILTER (WHERE tfx IS NOT NULL),"
                                  " coalesce(sum((SELECT count(*) FROM jsonb_object_keys(tfx))),"
                                  " 0) FROM agentlog.documents WHERE host = %s",
                                  (HOST,)).fetchone()
                print(f"server bm25 statistics (schema step 5): {kept[0]} rows,"
                      f" {int(kept[1]) / int(kept[0]):.2f} tokens a row; {exc[0]} documents"
                      f" whose tsvector's positions differ from FTS5's counts ({exc[1]}"
                      " terms kept in tfx)")
                cut = con.execute(  # what the tsvector loses or adds against FTS5's tokens
                    "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM unnest(tsv) u"
                    " WHERE 16383 = ANY(u.positions) OR array_length(u.positions, 1) = 256)),"
                    " count(*) FILTER (WHERE text ~ '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]')"
                    " FROM agentlog.documents WHERE host = %s", (HOST,)).fetchone()
                print(f"server documents: {cut[0]} with positions cut (256 a word, or past"
                      f" 16,383), {cut[1]} holding CJK (bigrams in the tsvector)")
                _disk(url, db, log)
                for q in qs:
                    want = _ids(local.search(db, q, limit=50))
                    got = {"team": _ids(pgq.search(url, q, {"host": HOST}, limit=50)),
                           "bm25-sql": bm25_page(con, HOST, q, None, 50, host_stats)}
                    for k, page in got.items():
                        stats[k].append((page == want, len(set(page[:10]) & set(want[:10])),
                                         len(set(page) & set(want))))
            print(f"{len(qs)} queries ({sum(' ' in q for q in qs)} of two words), each with"
                  " >= 50 matches")
            for k, rows in stats.items():
                top10 = [r[1] for r in rows]
                print(f"{k:9} top-50 pages equal {sum(r[0] for r in rows)}/{len(rows)};"
                      f" top-10 shared mean {sum(top10) / len(top10):.1f} min {min(top10)};"
                      f" top-50 shared mean {sum(r[2] for r in rows) / len(rows):.1f}")
    finally:
        pgq.close_connections()
        pg_stop(server, args.keep)


if __name__ == "__main__":
    main()
