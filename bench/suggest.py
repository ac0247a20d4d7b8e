"""Search's "did you mean" (projections/suggest.py) on a large vocabulary.

Builds a history.db-shaped full-text index (the schema of projections.db; documents_fts
filled directly, `rank_terms` with every word in more than 5,000 documents, as a rebuild
leaves it): DOCS documents of 60 words drawn Zipf-like (s = 1.05) from a vocabulary of
400,000 random words, plus 3 hex ids and 2 numbered words each (rare terms: 300,000
documents hold ~1.85M distinct terms). Then times `suggest.suggest` for misspelt words
(a character changed after the second place, in the commonest words and in rare ones; and
words near nothing), cold (first call) and warm (best of 3), and, as the design's
baseline, the scan of one first letter's share of the vocabulary.

Usage: .venv/bin/python bench/suggest.py [--docs N] [--file PATH]   (default 300,000;
       an existing PATH is reused)
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from projections import db, suggest


def build(path: Path, ndocs: int) -> None:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"

    def word() -> str:
        n = min(14, max(2, int(rng.gauss(7, 2.5))))
        return "".join(rng.choice(letters) for _ in range(n))

    common = list(dict.fromkeys(word() for _ in range(400_000)))
    cum = list(itertools.accumulate(1 / (i + 1) ** 1.05 for i in range(len(common))))
    con = db.connect(path)
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA journal_mode = OFF")
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for start in range(0, ndocs, 2000):
        rows = []
        for i in range(start, min(ndocs, start + 2000)):
            words = rng.choices(common, cum_weights=cum, k=60)
            words += [f"{rng.getrandbits(40):x}" for _ in range(3)]
            words += [word() + str(rng.randrange(100)) for _ in range(2)]
            rows.append((i + 1, " ".join(words)))
        con.executemany("INSERT INTO documents_fts(rowid, text) VALUES (?, ?)", rows)
    con.execute("COMMIT")
    con.execute("INSERT INTO documents_fts(documents_fts) VALUES ('optimize')")
    con.execute("INSERT INTO rank_terms(term, df)"
                " SELECT term, doc FROM documents_fts_terms WHERE doc > 5000")
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=300_000)
    ap.add_argument("--file", type=Path, default=Path("/tmp/agentlog-bench-suggest.db"))
    args = ap.parse_args()
    if not args.file.exists():
        t0 = time.perf_counter()
        build(args.file, args.docs)
        print(f"built {args.file} in {time.perf_counter() - t0:.0f} s")
    con = db.connect(args.file, readonly=True)
    terms = con.execute("SELECT count(*) FROM documents_fts_terms").fetchone()[0]
    print(f"{terms:,} distinct terms")
    rng = random.Random(1)
    hot = [str(r[0]) for r in con.execute("SELECT term FROM rank_terms ORDER BY df DESC"
                                           " LIMIT 3")]
    rare = [str(r[0]) for r in con.execute(
        "SELECT term FROM documents_fts_terms WHERE term >= 'm' LIMIT 4 OFFSET 30000")]

    def typo(w: str) -> str:
        i = rng.randrange(2, len(w)) if len(w) > 2 else len(w) - 1
        return w[:i] + ("q" if w[i] != "q" else "z") + w[i + 1:]

    probes = [typo(w) for w in hot + rare] + [c + "qqqqzz" for c in "aest"]
    warm = []
    for w in probes:
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            got = suggest.suggest(con, [w])
            runs.append((time.perf_counter() - t0) * 1000)
        warm.append(min(runs))
        print(f"{w:>14}: cold {runs[0]:6.1f} ms, warm {min(runs):6.1f} ms -> {got.get(w, [])}")
    print(f"warm: max {max(warm):.1f} ms; median {sorted(warm)[len(warm) // 2]:.1f} ms")
    for first in "as":
        t0 = time.perf_counter()
        n = len(suggest._terms(con, first))
        print(f"baseline: one first letter's share ('{first}', {n:,} terms) read in "
              f"{(time.perf_counter() - t0) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
