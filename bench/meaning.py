"""Search by meaning on the real corpora: recall of paraphrase queries and of exact needles in
each mode, the cost of embedding, of a query and of the projection's bytes.

The shared corpora (../shared/corpus and ../shared/corpus-more) are captured in place into a
temporary home (tests/corpus_home.py), history.db is built, then the embedding projection
(`projections.meaning.step`). Then:

- paraphrase recall@10: bench/meaning_queries.json, each query describing one session in
  other words; found when a hit of the first 10 belongs to one of its sessions. Before
  measuring, every query is checked to share no content word with its sessions (folded,
  a small stop list); a query that does is named and left out;
- needles: tokens that occur in exactly one document (read from FTS5's own vocabulary), each
  must be in the first 10 hits of that document in every mode;
- the two-pass search (sign bits, then int8 cosine) against the exact scan, on these chunks:
  the share of the exact top 10 it keeps, by the share of rows its first pass shortlists;
- figures: embedding chunks/s (one thread, niced like the capture loop's), query latency
  (in process, model loaded; and whole `agentlog search` processes against words mode), the
  projection's bytes against the captured source bytes, peak RSS of the embedding process.

Usage: .venv/bin/python bench/meaning.py [--keep DIR] [--json]
       .venv/bin/python bench/meaning.py --embed-home HOME   (a whole home embedded, timed)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, pct, random_projection, workdir

# bench/http.py would shadow the standard library's http (usearch imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

sys.path.insert(0, str(ROOT))
from eventlog import EventLog  # noqa: E402
from projections import meaning, query  # noqa: E402
from projections.catchup import catch_up  # noqa: E402
from projections.db import connect  # noqa: E402
from tests.corpus_home import capture_all, corpus_roots, source_bytes  # noqa: E402

STOP = frozenset((
    "a", "an", "the", "s", "t", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and",
    "or", "not", "no", "is", "are", "be", "been", "was", "were", "it", "its", "this",
    "that", "these", "those", "my", "me", "i", "you", "your", "we", "our", "they", "their",
    "he", "she", "his", "her", "do", "does", "did", "can", "could", "would", "should",
    "will", "shall", "may", "might", "must", "have", "has", "had", "get", "got", "make",
    "made", "into", "over", "under", "up", "down", "out", "off", "so", "as", "if", "then",
    "than", "too", "very", "just", "only", "also", "any", "some", "all", "each", "every",
    "which", "who", "whom", "what", "when", "where", "why", "how", "there", "here", "about",
    "after", "before", "while", "during", "without", "within", "between", "through", "two",
    "one",
))
MODES = ("words", "meaning", "hybrid")


def fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold())
                   if not unicodedata.combining(c))


def words_of(text: str) -> set[str]:
    return set(re.findall(r"\w+", fold(text)))


def build(work: Path) -> tuple[Path, int]:
    corpus, more = ROOT.parent / "shared" / "corpus", ROOT.parent / "shared" / "corpus-more"
    roots = corpus_roots(corpus, more, work / "stage")
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    log = EventLog(home / "log")
    capture_all(log, roots)
    catch_up(home / "history.db", log)
    log.close()
    return home, source_bytes(home / "history.db")


def session_text(db: Path) -> dict[str, set[str]]:
    con = connect(db, readonly=True)
    out: dict[str, set[str]] = {}
    for session, text in con.execute("SELECT session, text FROM documents"):
        out.setdefault(str(session), set()).update(words_of(text or ""))
    con.close()
    return out


def check_queries(queries: list[dict[str, Any]], vocab: dict[str, set[str]]
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    good, bad = [], []
    for q in queries:
        content = words_of(q["q"]) - STOP
        shared: set[str] = set()
        for session, words in vocab.items():
            if any(session.startswith(p) for p in q["sessions"]):
                shared |= content & words
        (bad if shared else good).append(q)
        if shared:
            bad[-1] = f"{q['q']!r} shares {sorted(shared)}"  # type: ignore[call-overload]
    return good, bad  # type: ignore[return-value]


def needles(db: Path, n: int = 40) -> list[tuple[str, str]]:
    """(token, document id) of tokens in exactly one document, spread over the vocabulary."""
    con = connect(db)
    con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, documents_fts, 'row')")
    terms = [t for (t,) in con.execute(
        "SELECT term FROM temp.v WHERE doc = 1 AND length(term) >= 6"
        " AND term GLOB '*[a-z]*' ORDER BY term")]
    step = max(1, len(terms) // n)
    out = []
    for term in terms[::step][:n]:
        row = con.execute("SELECT d.id FROM documents_fts f JOIN documents d ON d.rowid = f.rowid"
                          " WHERE documents_fts MATCH ?", ('"' + term + '"',)).fetchone()
        if row:
            out.append((term, str(row[0])))
    con.close()
    return out


def recall(db: Path, queries: list[dict[str, Any]], mode: str, group: str | None = None
           ) -> tuple[float, dict[str, list[int]]]:
    found = 0
    by_lang: dict[str, list[int]] = {}
    for q in queries:
        hits = query.search(db, q["q"], limit=10, mode=mode, group=group)["hits"]
        ok = any(any(str(h["session"]).startswith(p) for p in q["sessions"]) for h in hits)
        found += ok
        by_lang.setdefault(q["lang"], [0, 0])
        by_lang[q["lang"]][0] += ok
        by_lang[q["lang"]][1] += 1
    return found / max(1, len(queries)), by_lang


def needle_recall(db: Path, pairs: list[tuple[str, str]], mode: str) -> float:
    ok = 0
    for term, doc in pairs:
        hits = query.search(db, term, limit=10, mode=mode)["hits"]
        ok += any(h["id"] == doc for h in hits)
    return ok / max(1, len(pairs))


def cli_p50(home: Path, text: str, mode: str, reps: int = 7, env: dict[str, str] | None = None
            ) -> float:
    exe = Path(sys.executable).parent / "agentlog"
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run([str(exe), "--home", str(home), "search", text, "--mode", mode, "--json"],
                       check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cli_figures(home: Path, out: dict[str, Any]) -> None:
    """Whole `agentlog search` processes: words; hybrid loading the model itself (no query
    server: AGENTLOG_EMBED=0); hybrid asking the query server (started and waited for)."""
    from projections.meaning.client import serving

    quiet = {**os.environ, "AGENTLOG_EMBED": "0"}
    text = "translation file"
    words = cli_p50(home, text, "words", env=quiet)
    alone = cli_p50(home, text, "hybrid", env=quiet)
    exe = Path(sys.executable).parent / "agentlog"
    server = subprocess.Popen([str(exe), "--home", str(home), "embed", "--serve", "--idle", "120"],
                              stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not serving(home / "meaning") and time.monotonic() < deadline:
            time.sleep(0.1)
        served = cli_p50(home, text, "hybrid", env=quiet)
    finally:
        server.terminate()
        server.wait()
    out["cli_words_p50_s"] = round(words, 3)
    out["cli_hybrid_no_server_p50_s"] = round(alone, 3)
    out["cli_hybrid_p50_s"] = round(served, 3)
    out["cli_hybrid_vs_words"] = round(served / words, 2)
    out["cli_hybrid_no_server_vs_words"] = round(alone / words, 2)


def export(db: Path, queries: list[dict[str, Any]], dest: Path) -> None:
    from projections.meaning.build import chunk_rows

    con = connect(db, readonly=True)
    rows = con.execute("SELECT rowid, id, kind, role, session, text FROM documents"
                       " ORDER BY rowid").fetchall()
    session = {int(r[0]): str(r[4]) for r in rows}
    owners, texts = chunk_rows(con, rows, {})
    con.close()
    chunks = [{"session": session[o[0]], "text": t} for o, t in zip(owners, texts, strict=True)]
    dest.write_text(json.dumps({"chunks": chunks, "queries": queries}, ensure_ascii=False),
                    encoding="utf-8")


def two_pass_agreement(folder: Path, queries: list[str], out: dict[str, Any]) -> None:
    """How much of the exact scan's top 10 the two-pass search keeps, by the share of the rows
    its sign-bit pass shortlists (on these real chunks: the bits' quality is the model's
    vectors'; `find.SHORTLIST_SHARE` = 50 is the 2 % row, 2,000 rows of 1M the 0.2 % one)."""
    from projections.meaning import find
    from projections.meaning.model import load
    from projections.meaning.store import Store

    store = Store.reader(folder)
    rows = store.count if store is not None else 0
    if store is not None:
        store.close()
    if rows < 100:
        return
    model = load()
    exact = [{d for _, d, _ in find.scan(folder, q, 10, model)} for q in queries]
    saved = find.EXACT_ROWS, find.SHORTLIST, find.SHORTLIST_SHARE
    try:
        for share in (0.002, 0.01, 0.02, 0.05):
            find.EXACT_ROWS, find.SHORTLIST = 0, 1
            find.SHORTLIST_SHARE = round(1 / share)
            kept = sum(len(e & {d for _, d, _ in find.scan(folder, q, 10, model)})
                       for q, e in zip(queries, exact, strict=True))
            out[f"two_pass_top10_kept_shortlist_{share:.1%}"] = round(
                kept / max(1, sum(map(len, exact))), 3)
    finally:
        find.EXACT_ROWS, find.SHORTLIST, find.SHORTLIST_SHARE = saved


def scale_figure(work: Path, rows: int, out: dict[str, Any]) -> None:
    """`nearest` with the model loaded (what `mcp`, `serve` and the query server do) on a
    projection of `rows` random unit vectors: the exact scan and the two-pass search."""

    from projections.meaning import find
    from projections.meaning.model import load

    folder = work / f"scale-{rows}"
    random_projection(folder, rows, [(i + 1, f"x:{i}") for i in range(rows)])
    model = load()
    texts = ["video game translation", "terminal multiplexer settings", "flaky test fixture"]
    for label, exact_rows in (("exact", rows + 1), ("two_pass", find.EXACT_ROWS)):
        find.EXACT_ROWS = exact_rows
        times = []
        for i in range(15):
            t = time.perf_counter()
            find.scan(folder, texts[i % 3], 10, model)
            times.append((time.perf_counter() - t) * 1000)
        out[f"nearest_{rows}_rows_{label}_p50_ms"] = round(pct(times, 50), 1)
    meaning.drop(folder)


def embed_home(home: Path) -> None:
    """`agentlog embed --again --json` of `home`, timed as a whole process (os.wait4)."""
    db = home / "history.db"
    src = source_bytes(db)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "--home", str(home), "embed",
                             "--again", "--json"], cwd=ROOT, stdout=subprocess.PIPE)
    out_bytes = proc.stdout.read() if proc.stdout is not None else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"agentlog embed failed ({status})")
    res = json.loads(out_bytes)
    folder = home / "meaning"
    size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    cpu = usage.ru_utime + usage.ru_stime
    print(f"embedded {res['documents']} documents of {home} ({src / 1e6:.0f} MB captured):"
          f" {res['chunks']} chunks in {wall:.0f} s wall ({wall / 60:.1f} min; goal <= 10),"
          f" {cpu:.0f} CPU s ({res['chunks'] / max(cpu, 1e-9):.0f} chunks per CPU s,"
          f" CPU/wall {cpu / wall:.2f}), load {os.getloadavg()[0]:.1f} at the end")
    print(f"projection {size / 1e6:.0f} MB = {size / max(1, src):.1%} of the source bytes"
          f" (goal <= 25 %); peak RSS {usage.ru_maxrss / 1024:.0f} MB (goal <= 300)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rows", type=int, default=1_000_000,
                    help="rows of the synthetic projection the search latency is timed on")
    ap.add_argument("--export", type=Path, metavar="FILE",
                    help="also write the chunks (session, text) and the queries as JSON, for"
                         " bench/meaning_models.py (other models, in another venv)")
    ap.add_argument("--embed-home", type=Path, metavar="HOME",
                    help="only embed HOME's history.db from nothing (its meaning/ is dropped)"
                         " with `agentlog embed`, a whole process on every CPU, and print its"
                         " wall and CPU time, chunks, bytes and peak RSS (issue 28: the 1 GB"
                         " home within 10 minutes on 2 cores, the projection <= 25 %% of the"
                         " source bytes)")
    args = ap.parse_args()
    if args.embed_home:
        embed_home(args.embed_home)
        return
    spec = json.loads((ROOT / "bench" / "meaning_queries.json").read_text(encoding="utf-8"))
    with workdir(args.keep, "agentlog-bench-meaning-") as work:
        home = work / "home"
        if (home / "history.db").is_file():  # --keep of an earlier run: the same capture
            src = source_bytes(home / "history.db")
        else:
            home, src = build(work)
        db = home / "history.db"
        folder = home / "meaning"
        meaning.drop(folder)
        os.nice(10)
        t = time.perf_counter()
        cpu0 = time.process_time()
        step = meaning.step(db, folder)
        embed_s, embed_cpu = time.perf_counter() - t, time.process_time() - cpu0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        good, bad = check_queries(spec["queries"], session_text(db))
        out: dict[str, Any] = {
            "documents": step.documents, "chunks": step.chunks,
            "embed_s": round(embed_s, 1), "embed_cpu_s": round(embed_cpu, 1),
            "chunks_per_cpu_s": round(step.chunks / max(embed_cpu, 1e-9), 1),
            "projection_bytes": size, "source_bytes": src,
            "projection_vs_source": round(size / max(1, src), 3),
            "peak_rss_mb": round(rss), "queries": len(good), "queries_left_out": bad,
        }
        pairs = needles(db)
        for mode in MODES:
            r, langs = recall(db, good, mode)
            out[f"recall10_{mode}"] = round(r, 3)
            out[f"recall10_{mode}_by_lang"] = {k: f"{v[0]}/{v[1]}"
                                                for k, v in sorted(langs.items())}
            out[f"needles_{mode}"] = round(needle_recall(db, pairs, mode), 3)
            out[f"recall10_{mode}_per_conversation"] = round(
                recall(db, good, mode, "conversation")[0], 3)
        lat = []
        for q in good:
            t = time.perf_counter()
            query.search(db, q["q"], limit=10, mode="hybrid")
            lat.append((time.perf_counter() - t) * 1000)
        out["hybrid_in_process_p50_ms"] = round(pct(lat, 50), 1)
        out["needles"] = len(pairs)
        two_pass_agreement(folder, [q["q"] for q in good] + [t for t, _ in pairs[:10]], out)
        cli_figures(home, out)
        if args.rows:
            scale_figure(work, args.rows, out)
        if args.export:
            export(db, good, args.export)
        if args.json:
            print(json.dumps(out, indent=1, ensure_ascii=False))
        else:
            for k, v in out.items():
                print(f"{k:32} {v}")


if __name__ == "__main__":
    main()
