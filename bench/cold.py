"""Empty -> searchable on a synthetic three-agent home, with its baselines in the same run.

Columns (whole processes, interleaved when `--reps` > 1; the best of each is compared):
- agentlog: `agentlog capture` (which indexes) into an empty home, then the first
  `agentlog search --json`; wall time, CPU time of the process tree (user + system of every
  child waited for, so a pipeline's worker counts) and CPU / wall (goal >= 1.6: both cores
  busy), and the tree's peak RSS;
- claude-session-search `--reindex` of the same home's Claude files (installed from PyPI into a
  temporary venv; skipped, saying so, when it cannot be installed), then its first search of
  the same probe (a whole process, as agentlog's) -- it indexes only the Claude files,
  agentlog all three agents. Two ratios, goal <= 1.0x each: searchable (agentlog's capture
  against the `--reindex` alone, the issue's words) and first answer (each side's build plus
  its first search: like for like; until session 24 agentlog's first search was counted
  against a `--reindex` without one);
- the single-thread floor, in this process: read every file, SHA-256 it, append it to an
  LMDB environment, parse it with agentlog's own parsers and insert the texts into a bare
  FTS5 table (then 'optimize') -- what any design has to do once (goal: agentlog <= 1.15x).

- with `--baseline REV` (run this file directly): git revision REV's agentlog, exported to a
  temporary tree, in the same run, interleaved with this one: its wall and CPU, and the
  ratios of this tree's to it.

Each column starts from the same state (`settle`, untimed): earlier writes flushed, the
sources read once into the page cache.

Disk (issue 32's goal: history.db + log <= 85 % of the source bytes): the blocks each
agentlog home (this tree's, a baseline's) holds in history.db and the log after the capture,
against the bytes captured; claude-session-search's index against its Claude bytes.

Sizes (the synthetic home `bench/capture.write_home` writes into --src when it is missing):
small ~30 MB in 150 files (a first weeks' home, issue 32); quick ~47 MB in 6,000 files;
mid ~317 MB (`write_home(src, 6000, 250 << 20, 50)`: the home of issue 13's quiet figures in
docs/performance.md and docs/history/performance-journal.md); gb ~1 GB. A --src written with
another size is used as it is (the size is printed).

`--redaction`: a column more, interleaved (before the agentlog column every other round):
agentlog with secret redaction off (a `sitecustomize` on PYTHONPATH, bench/noredact/, in every
process of the column; agentlog has no such switch), and redaction's share of the wall and CPU
time. Each of the two columns first removes its home of the round before, as the other does.

`--sparse`: the text-sparse home beside the bench home (issue 32): Claude lines with the
API's metadata, tool calls and each tool output twice (content and `toolUseResult`), Codex
rollouts with encrypted reasoning — ~30 % of the Claude bytes are text against ~70 % on the
bench home (`bench/capture.write_home`; its share is printed).

`--corpus`: a home of real text instead of a synthetic one: the Claude and Codex session files
of ../shared/corpus (people's published transcripts, read from there at bench time and copied
only into the work folder) copied as many times as the size's bytes need, each copy's UUIDs
(session, message, tool ids: in its paths and its lines) replaced by others of the same length,
so every copy is its own sessions with the same bytes (a hard link, or a copy keeping its ids,
would be one session to both tools). The synthetic homes' text is a 25-word vocabulary; this
one's is code, prose, CJK and base64 as people's agents wrote them (session 38). The corpus's
`history.jsonl` files and its opencode database are left out (one per home, not copies).

`--claude-only`: agentlog and the floor capture only the home's Claude files, the bytes
claude-session-search indexes (the other agents' roots are an empty folder): the ratio on the
same input, beside the issue's (three agents against one).

Usage: .venv/bin/python bench/search.py --capture quick|mid|gb [--src DIR] [--keep DIR] [--reps N]
       .venv/bin/python bench/cold.py small|quick|mid|gb [--src DIR] [--keep DIR] [--reps N]
                                        [--baseline REV] [--claude-only] [--redaction] [--sparse]
                                        [--corpus]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, children, css_query, export_rev, install_css, load_average, workdir
from size import allocated  # (what `du` counts)

AGENTS = ("claude", "codex", "opencode")
# write_home's (files, target bytes, big session MB); "small" is a first weeks' home: a few
# hundred KB per file (issue 32's 32 MB home), not 6,000 small files
SIZES = {"small": (150, 30 << 20, 0), "quick": (6000, 12 << 20, 20),
         "mid": (6000, 250 << 20, 50), "gb": (6000, 800 << 20, 200)}
PROBE = "refactor parser"
CORPUS = ROOT.parent / "shared" / "corpus"
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def corpus_home(dst: Path, target: int) -> None:
    """`--corpus`'s home under `dst` (its `claude`, `codex` and an empty `opencode` root): the
    corpus's Claude and Codex session files (`tests/corpus_home.corpus_files`: the paths
    PROVENANCE.json gives, the newest of a file's growth snapshots), copied until `target`
    bytes, each copy with new UUIDs; the agents' `history.jsonl` left out."""
    from tests.corpus_home import corpus_files

    files = {(agent, rel): path for (agent, _, rel), path in corpus_files(CORPUS).items()
             if not rel.endswith("history.jsonl")}
    per_copy = sum(path.stat().st_size for path in files.values())
    for k in range(max(1, round(target / per_copy))):
        def fresh(m: re.Match[bytes], k: int = k) -> bytes:
            h = hashlib.blake2b(m.group(0) + b"/%d" % k, digest_size=16).hexdigest()
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}".encode()

        for (agent, rel), path in files.items():
            out = dst / agent / _UUID.sub(fresh, rel.encode()).decode()
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(_UUID.sub(fresh, path.read_bytes()))
    (dst / "opencode").mkdir(parents=True, exist_ok=True)


def _run(cmd: list[str], env: dict[str, str], what: str,
         cwd: Path = ROOT) -> tuple[float, float, str]:
    """(wall s, CPU s of the process tree, stdout) of one process run to its end."""
    cpu0, _ = children()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    cpu1, _ = children()
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed: {proc.stderr[-2000:]}")
    return wall, cpu1 - cpu0, proc.stdout


def child_env(user: Path) -> dict[str, str]:
    """This environment for an agentlog child, without the agents' folder variables and with
    HOME at `user` (the other registered agents' default roots live under HOME)."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_DIR", "_HOME")) or k in ("VIRTUAL_ENV",)}
    env["HOME"] = str(user)
    return env


def settle(roots: dict[str, Path]) -> None:
    """Before each column, untimed: the previous column's writes flushed (their write-back
    would slow the next column) and every source file read once, so each column starts
    from the same page cache (the kernel may have evicted the sources meanwhile; whichever
    column ran first after that paid for the disk)."""
    from capture import all_files  # the capture bench's walk of the roots

    os.sync()
    for p in all_files(roots):
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def agentlog_column(work: Path, roots: dict[str, Path], env: dict[str, str],
                    extra: list[str], tree: Path = ROOT, name: str = "home") -> dict[str, Any]:
    """`tree`: the source tree whose agentlog runs (a baseline's export, or this one)."""
    home = work / name
    shutil.rmtree(home, ignore_errors=True)
    flags = [f"--{a}-dir={r}" for a, r in roots.items()] + [f"--runs-dir={work / 'no-runs'}"]
    cli = [sys.executable, "-m", "cli.main", "--home", str(home)]
    cap_s, cap_cpu, out = _run([*cli, "capture", "--json", *extra, *flags], env, "capture",
                               tree)
    s_s, s_cpu, found = _run([*cli, "search", PROBE, "--json"], env, "search", tree)
    return {"wall": cap_s + s_s, "cpu": cap_cpu + s_cpu, "capture": cap_s, "search": s_s,
            "hits": len(json.loads(found)["hits"]), "events": json.loads(out)["appended"],
            "db_mb": (home / "history.db").stat().st_size / 1e6,
            "disk": (allocated((home / "history.db").resolve()), allocated(home / "log"))}


def redaction_off(work: Path, roots: dict[str, Path], env: dict[str, str],
                  col: list[dict[str, Any]]) -> None:
    """The agentlog column with redaction off (bench/noredact/sitecustomize.py on
    PYTHONPATH, in every process of it)."""
    settle(roots)
    off = {**env, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "bench" / "noredact"), *filter(None, [env.get("PYTHONPATH")])])}
    col.append(agentlog_column(work, roots, off, [], name="home-off"))  # removes the last one


def rebuild_modes(home: Path) -> dict[str, dict[str, float]]:
    """The rebuild alone from the captured log, sequential and parallel (in this process;
    CPU includes the parse process)."""
    sys.path.insert(0, str(ROOT))
    from eventlog import EventLog
    from projections.rebuild import build

    out: dict[str, dict[str, float]] = {}
    log = EventLog(home / "log", readonly=True)
    try:
        for mode in ("sequential", "parallel"):
            path = home / f"bench-{mode}.db"
            path.unlink(missing_ok=True)
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            c0, _ = children()
            t0 = time.perf_counter()
            build(path, log, parallel=mode == "parallel")
            wall = time.perf_counter() - t0
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            c1, _ = children()
            own = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
            out[mode] = {"wall": wall, "cpu": own + c1 - c0, "own": own}
            path.unlink()
    finally:
        log.close()
    return out


def css_column(work: Path, py: Path, claude: Path) -> dict[str, Any]:
    fake = work / "css-home"
    shutil.rmtree(fake, ignore_errors=True)
    (fake / ".claude").mkdir(parents=True)
    (fake / ".claude" / "projects").symlink_to(claude / "projects")
    env = {**os.environ, "HOME": str(fake)}
    wall, cpu, _ = _run([str(py), "-m", "cc_search", "--reindex"], env, "cc_search --reindex")
    # its first answer, as agentlog's column has one: the same probe, a whole process
    s_s, s_cpu, found = _run([str(py), "-c", css_query(), PROBE], env, "cc_search query")
    return {"wall": wall, "cpu": cpu, "search": s_s, "search_cpu": s_cpu,
            "hits": int(json.loads(found)["total"]), "disk": allocated(fake / ".cc-search")}


def floor_column(work: Path, roots: dict[str, Path]) -> dict[str, Any]:
    """Read + SHA-256 + LMDB append + parse + bare FTS5 insert, one thread, this process."""
    import lmdb

    from readers import discovery, parse
    from readers.records import SourceInfo

    env_dir = work / "floor-lmdb"
    shutil.rmtree(env_dir, ignore_errors=True)
    db_path = work / "floor.db"
    db_path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    c0 = time.process_time()
    env = lmdb.open(str(env_dir), map_size=8 << 30, sync=True, metasync=True)
    con = sqlite3.connect(db_path, isolation_level=None)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    con.execute("BEGIN")
    seq, pending, txn_bytes = 0, [], 0
    texts: list[str] = []
    for agent, root in roots.items():
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            layout = discovery.classify(agent, rel) if p.is_file() else None
            if layout is None:
                continue
            data = p.read_bytes()
            hashlib.sha256(data).digest()
            seq += 1
            pending.append((seq.to_bytes(8, "big"), data))
            txn_bytes += len(data)
            if txn_bytes >= 16 << 20:
                _put(env, pending)
                pending, txn_bytes = [], 0
            info = SourceInfo(source=f"{agent}:x:{rel}", agent=agent, root=str(root), path=rel,
                              layout=layout)
            state: dict[str, Any] = {}
            if discovery.kind_of(layout) == "snapshot":
                results = [parse.parse_snapshot(info, state, data)]
            else:
                results = []
                pos = 0
                for line in data.split(b"\n"):
                    if line.strip():
                        results.append(parse.parse_line(info, state, line, pos, 0))
                    pos += len(line) + 1
            texts.extend(r.text for res in results for r in res.records)
            if len(texts) >= 5000:
                con.executemany("INSERT INTO t(text) VALUES (?)", ((t,) for t in texts))
                texts = []
    _put(env, pending)
    con.executemany("INSERT INTO t(text) VALUES (?)", ((t,) for t in texts))
    con.execute("COMMIT")
    con.execute("INSERT INTO t(t) VALUES ('optimize')")
    con.close()
    env.close()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    shutil.rmtree(env_dir, ignore_errors=True)
    db_path.unlink(missing_ok=True)
    return {"wall": wall, "cpu": cpu}


def _put(env: Any, items: list[tuple[bytes, bytes]]) -> None:
    with env.begin(write=True) as txn:
        for k, v in items:
            if not txn.put(k, v, append=True):
                raise SystemExit("LMDB append refused")


def run(work: Path, size: str, src: Path | None, reps: int = 1,
        baseline: str | None = None, claude_only: bool = False,
        redaction: bool = False, sparse: bool = False, corpus: bool = False) -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from capture import all_files, write_home  # the capture bench's synthetic home

    src = src or work / ("src-corpus" if corpus else "src-sparse" if sparse else "src")
    roots = {a: src / a for a in AGENTS}
    if not all(r.is_dir() for r in roots.values()):
        t0 = time.perf_counter()
        if corpus:
            if not (CORPUS / "PROVENANCE.json").is_file():
                raise SystemExit(f"--corpus needs the shared corpus at {CORPUS}")
            corpus_home(src, SIZES[size][1])
        else:
            write_home(src, *SIZES[size], sparse=sparse)
        print(f"  wrote the {'corpus' if corpus else 'synthetic'} home in"
              f" {time.perf_counter() - t0:.1f} s")
    if claude_only:  # the other agents' roots empty: the same bytes as claude-session-search
        empty = work / "empty-root"
        empty.mkdir(exist_ok=True)
        roots = {a: r if a == "claude" else empty for a, r in roots.items()}
    sizes = {a: sum(p.stat().st_size for p in all_files({a: r})) / 1e6 for a, r in roots.items()}
    user = work / "user"  # the other registered agents' default roots live under HOME
    user.mkdir(parents=True, exist_ok=True)
    env = child_env(user)
    share = ""
    if (src / "text-share.json").exists():
        text = json.loads((src / "text-share.json").read_text())
        share = (f"; text {100 * text['claude'] / 1e6 / max(sizes['claude'], 1e-9):.0f} %"
                 " of the Claude bytes")
    kind = "home of the corpus's real text" if corpus else (
        f"{'text-sparse ' if sparse else ''}synthetic home")
    print(f"empty -> searchable: {kind} of"
          f" {sum(sizes.values()):.0f} MB (" + ", ".join(
              f"{a} {mb:.0f} MB" for a, mb in sizes.items()) + f"{share}), {reps} rep(s),"
          f" load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    css_py = install_css(work / "css-venv")
    cols: dict[str, list[dict[str, Any]]] = {"agentlog": [], "css": [], "floor": [], "base": [],
                                             "off": []}
    tree = None
    if baseline is not None:
        tree = export_rev(baseline, work / "base-tree")
    for rep in range(reps):
        if tree is not None:
            settle(roots)
            cols["base"].append(agentlog_column(work, roots, env, [], tree, "home-base"))
            shutil.rmtree(work / "home-base", ignore_errors=True)
        if redaction and rep % 2:  # the same with redaction off, first every other round
            redaction_off(work, roots, env, cols["off"])
        settle(roots)
        cols["agentlog"].append(agentlog_column(work, roots, env, []))
        if redaction and not rep % 2:
            redaction_off(work, roots, env, cols["off"])
        if css_py is not None:
            settle(roots)
            cols["css"].append(css_column(work, css_py, roots["claude"]))
        settle(roots)
        cols["floor"].append(floor_column(work, roots))
    best = {k: min(v, key=lambda r: r["wall"]) for k, v in cols.items() if v}
    a = best["agentlog"]
    print(f"  agentlog capture + first search: {a['wall']:.1f} s (capture {a['capture']:.1f} s,"
          f" search {a['search']:.1f} s), CPU {a['cpu']:.1f} s, CPU/wall"
          f" {a['cpu'] / a['wall']:.2f} (goal >= 1.6); {a['events']:,} events,"
          f" {a['hits']} hits, history.db {a['db_mb']:.0f} MB")
    if "off" in best:
        o = best["off"]
        print(f"  the same with redaction off: {o['wall']:.1f} s, CPU {o['cpu']:.1f} s; redaction"
              f" adds {a['wall'] - o['wall']:+.1f} s wall ({100 * (a['wall'] / o['wall'] - 1):+.1f}"
              f" %), {a['cpu'] - o['cpu']:+.1f} s CPU ({100 * (a['cpu'] / o['cpu'] - 1):+.1f} %)"
              " (goal <= +10 %)")
    if "base" in best:
        b = best["base"]
        print(f"  baseline {baseline} (same run, interleaved): {b['wall']:.1f} s, CPU"
              f" {b['cpu']:.1f} s, CPU/wall {b['cpu'] / b['wall']:.2f}; this tree / baseline:"
              f" wall {a['wall'] / b['wall']:.2f}x, CPU {a['cpu'] / b['cpu']:.2f}x")
    if "css" in best:
        c = best["css"]
        print(f"  claude-session-search --reindex (Claude files only, {sizes['claude']:.0f} MB):"
              f" {c['wall']:.1f} s, CPU/wall {c['cpu'] / c['wall']:.2f}; then its first search"
              f" of the same probe {c['search']:.1f} s ({c['hits']:,} matches)")
        print(f"    agentlog / claude-session-search, searchable (agentlog capture / --reindex):"
              f" {a['capture'] / c['wall']:.2f}x (goal <= 1.0)")
        print(f"    agentlog / claude-session-search, first answer (each + its first search):"
              f" {a['wall'] / (c['wall'] + c['search']):.2f}x (goal <= 1.0)")
    else:
        print("  claude-session-search: skipped (not installed)")
    source = sum(sizes.values()) * 1e6
    for name, col in (("agentlog", a), (f"baseline {baseline}", best.get("base"))):
        if col is not None:
            db_b, log_b = col["disk"]
            print(f"  disk, {name}: history.db {db_b / 1e6:.1f} MB + log {log_b / 1e6:.1f} MB ="
                  f" {100 * (db_b + log_b) / source:.1f} % of the {source / 1e6:.0f} MB captured"
                  f" ({100 * db_b / source:.1f} + {100 * log_b / source:.1f}; goal <= 85 %)")
    if "css" in best:
        print(f"  disk, claude-session-search's index: {best['css']['disk'] / 1e6:.1f} MB ="
              f" {100 * best['css']['disk'] / (sizes['claude'] * 1e6):.1f} % of its Claude bytes")
    f = best["floor"]
    print(f"  single-thread floor (read + SHA-256 + LMDB append + parse + bare FTS5 insert):"
          f" {f['wall']:.1f} s (CPU {f['cpu']:.1f} s)")
    print(f"    agentlog / floor: {a['wall'] / f['wall']:.2f}x (goal <= 1.15)")
    modes = rebuild_modes(work / "home")
    for mode, r in modes.items():
        print(f"  rebuild alone from that log, {mode}: {r['wall']:.1f} s, CPU {r['cpu']:.1f} s"
              f" (this process {r['own']:.1f} s), CPU/wall {r['cpu'] / r['wall']:.2f}")
    shutil.rmtree(work / "home-off", ignore_errors=True)
    par, seq = modes["parallel"], modes["sequential"]
    print(f"    parallel / sequential: {par['wall'] / seq['wall']:.2f}x wall; critical path"
          f" (this process's CPU) {par['own'] / seq['own']:.2f}x")
    print(f"  load average at the end: {load_average()}")


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("size", choices=tuple(SIZES))
    ap.add_argument("--src", type=Path, default=None, help="the synthetic home (written once)")
    ap.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    ap.add_argument("--reps", type=int, default=1, help="interleaved repetitions (best kept)")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also time git revision REV's agentlog in the same run")
    ap.add_argument("--claude-only", action="store_true",
                    help="capture only the home's Claude files (claude-session-search's input)")
    ap.add_argument("--redaction", action="store_true",
                    help="also time agentlog with secret redaction off (its share)")
    ap.add_argument("--sparse", action="store_true",
                    help="the text-sparse home (bench/capture.write_home(sparse=True))")
    ap.add_argument("--corpus", action="store_true",
                    help="a home of real text: ../shared/corpus's sessions, copied to size")
    args = ap.parse_args()
    with workdir(args.keep, "agentlog-bench-capture-") as work:
        run(work, args.size, args.src, args.reps, args.baseline, args.claude_only,
            args.redaction, args.sparse, args.corpus)


if __name__ == "__main__":
    main()
