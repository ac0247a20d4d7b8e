"""Throughput of secret redaction (`projections.redact`) over the texts agentlog really redacts.

The texts are collected, not made up: both shared corpora (../shared/corpus and
../shared/corpus-more, staged as tests/corpus_home.py does) and the synthetic bench home
(`bench/capture.write_home`, the cold bench's home) are captured into a temporary log and
history.db is rebuilt from it sequentially, with `Redactor.redact` wrapped to keep every
text it is handed: the record texts, tool inputs, titles and documents of a real build.

Then each tree (this one, and `--baseline REV`'s export, in the same run: child processes,
interleaved rounds, the best of each kept; CPU time of the child, so the other users of the
machine count less) measures, per text set:
- MB/s (UTF-8 bytes) of `redact.redact` over every text, and once, on the real texts, of the
  plain per-line application of every rule (`redact(text, gated=False)`, the answer the fast
  path must equal);
- where the time goes: the gate (the texts holding none of `GATE`'s characters), then for a
  tree with hints (`Redactor.hinted`) the one RE2 pass and each rule's lines + regex, for one
  with needles each rule's needle test and its `_line_matches`;
- a +1 capture: in a fresh process that has imported `cli.main` and `cli.services.config` (as
  every +1 has; bytecode written, as an installed agentlog has it), the import
  of `projections.redact`, its first `redactor()` and the redaction of ~40 KB of the real texts
  (consecutive texts of the corpus: a session's worth), best of 5 processes;
and the time 480 MB of text (the text of the 1 GB bench home) would take at each rate; and,
when the real corpora are there, a sequential rebuild of their log (the projection half of a
cold build, on real text) with redaction on and off (`Redactor.redact` the identity), CPU.

Usage: .venv/bin/python bench/redact.py [--quick] [--reps N] [--keep DIR] [--baseline REV]
  --keep: the work folder is kept, with the texts collected (a later run with the same
          --keep reuses them: the collection takes longer than the measurement)
  --quick: the quick synthetic home (~47 MB) and 3 rounds; without it the mid home (~317 MB)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

CORPUS = ROOT.parent / "shared" / "corpus"
CORPUS_MORE = ROOT.parent / "shared" / "corpus-more"
COLD_TEXT_MB = 480  # the text of the 1 GB bench home
ONE_SESSION = 40_000  # a +1 capture's new text, characters


def _corpus_home() -> Any:
    spec = importlib.util.spec_from_file_location("redact_corpus_home",
                                                  ROOT / "tests" / "corpus_home.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def collect(work: Path, roots: list[Any]) -> list[str]:
    """Every text a sequential rebuild of these roots' capture hands to the redactor."""
    sys.path.insert(0, str(ROOT))
    from eventlog import EventLog
    from projections import redact
    from projections.rebuild import rebuild

    ch = _corpus_home()
    log = EventLog(work / "log")
    ch.capture_all(log, roots)
    texts: list[str] = []
    original = redact.Redactor.redact

    def keep(self: Any, text: str, **kw: Any) -> Any:
        texts.append(text)
        return original(self, text, **kw)

    redact.Redactor.redact = keep  # type: ignore[method-assign]
    try:
        rebuild(work / "history.db", log, parallel=False)
    finally:
        redact.Redactor.redact = original  # type: ignore[method-assign]
        log.close()
    return texts


def texts(work: Path, quick: bool) -> Path:
    """The pickle of (real texts, synthetic texts), collected once per work folder."""
    cached = work / f"texts-{'quick' if quick else 'mid'}.pickle"
    if cached.is_file():
        return cached
    real: list[str] = []
    if CORPUS.is_dir():
        roots = _corpus_home().corpus_roots(CORPUS, CORPUS_MORE, work / "stage")
        real = collect(work / "real", roots)
    else:
        print(f"real corpus: not present at {CORPUS}, skipped")
    from capture import write_home

    sys.path.insert(0, str(ROOT))
    from readers.roots import Root

    size = (12 << 20, 20) if quick else (250 << 20, 50)  # bench/cold.py's quick and mid
    paths = write_home(work / "src", 6000, *size)
    synthetic = collect(work / "synthetic",
                        [Root(agent, path, "flag", True) for agent, path in paths.items()])
    cached.write_bytes(pickle.dumps((real, synthetic)))
    return cached


# --- in a child process, in the tree measured ---------------------------------------------

def _cpu(fn: Any, items: list[Any]) -> float:
    t0 = time.process_time()
    for item in items:
        fn(item)
    return time.process_time() - t0


def _gated(gate: tuple[str, ...], text: str) -> bool:
    for c in gate:  # as `Redactor.redact` tests it  # noqa: SIM110 (its speed)
        if c in text:
            return True
    return False


def _parts(redact: Any, r: Any, texts: list[str]) -> dict[str, float]:
    """Seconds of each part of `r.redact` over the texts (the tree's own design)."""
    gate = r.gate
    passed = [t for t in texts if _gated(gate, t)]
    parts = {"gate": _cpu(lambda t: _gated(gate, t), texts)}
    if hasattr(r, "hinted"):  # hints: one RE2 pass, then the rules hinted, on their lines
        parts["RE2 pass (hints)"] = _cpu(r.hinted, passed)
        for t in passed:
            for i in r.hinted(t):
                rx = r.regex(i)
                t0 = time.process_time()
                _ = [m for a, b in r.lines(i, t) for m in rx.finditer(t, a, b)]
                key = f"rule {r.rules[i][0]} (lines + regex)"
                parts[key] = parts.get(key, 0.0) + time.process_time() - t0
        return parts
    low = [t.lower() for t in passed]  # needles: a test per rule, then _line_matches
    parts["lower()"] = _cpu(str.lower, passed)
    for kind, needles, lower, regex, _group in r.rules:
        t0 = time.process_time()
        hit = [t for t, lo in zip(passed, low, strict=True)
               if any(n in (lo if lower else t) for n in needles)]
        parts["needle tests"] = parts.get("needle tests", 0.0) + time.process_time() - t0
        key = f"rule {kind} (_line_matches)"
        t0 = time.process_time()
        for t in hit:
            redact._line_matches(regex, t)
        parts[key] = parts.get(key, 0.0) + time.process_time() - t0
    return parts


def child(pickled: str, reference: bool) -> None:
    """Prints one round's figures (JSON) of the tree on sys.path[0]."""
    from projections import redact

    real, synthetic = pickle.loads(Path(pickled).read_bytes())
    r = redact.redactor()
    out: dict[str, Any] = {}
    for name, items in (("real", real), ("synthetic", synthetic)):
        if not items:
            continue
        r.redact(items[0])  # compiled
        out[name] = {"redact": _cpu(r.redact, items), "parts": _parts(redact, r, items),
                     "found": sum(1 for t in items if r.redact(t)[1])}
        if reference and name == "real":
            out[name]["reference"] = _cpu(lambda t: r.redact(t, gated=False), items)
    print(json.dumps(out))


def rebuild_share(log_dir: str, db: str, off_first: bool) -> None:
    """Prints (JSON) the CPU seconds of a sequential rebuild of the log, redaction on and off
    (`Redactor.redact` replaced by the identity), in this process, in either order."""
    from eventlog import EventLog
    from projections import redact
    from projections.rebuild import rebuild

    original = redact.Redactor.redact
    out = {}
    for mode in ("off", "on") if off_first else ("on", "off"):
        redact.Redactor.redact = original if mode == "on" else (  # type: ignore[method-assign]
            lambda self, text, gated=True: (text, None))
        path = Path(db)
        for old in path.parent.glob(path.name + "*"):
            old.unlink()
        log = EventLog(Path(log_dir), readonly=True)
        t0 = time.process_time()
        rebuild(path, log, parallel=False)
        out[mode] = time.process_time() - t0
        log.close()
    redact.Redactor.redact = original  # type: ignore[method-assign]
    print(json.dumps(out))


PLUS_ONE = """
import sys, time, pickle
sys.path.insert(0, {tree!r})
import cli.main, cli.services.config  # every +1 has them (and json, which config reads)
texts = pickle.load(open({session!r}, "rb"))
w0, c0 = time.perf_counter(), time.process_time()
from projections import redact
w1, c1 = time.perf_counter(), time.process_time()
r = redact.redactor()
for t in texts:
    r.redact(t)
w2, c2 = time.perf_counter(), time.process_time()
print(w1 - w0, c1 - c0, w2 - w1, c2 - c1)
"""


def plus_one(tree: Path, session: Path, pycache: Path) -> tuple[float, float, float, float]:
    """(wall, CPU of the import; wall, CPU of redactor() + the session's texts), seconds.
    With bytecode, as an installed agentlog has it (written under `pycache` by the first)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    proc = subprocess.run([sys.executable, "-c", PLUS_ONE.format(tree=str(tree),
                                                                 session=str(session))],
                          cwd=tree, capture_output=True, text=True, check=True, env=env)
    a, b, c, d = (float(x) for x in proc.stdout.split())
    return a, b, c, d


def export(rev: str, work: Path) -> Path:
    dest = work / f"tree-{rev.replace('/', '-')}"
    if not dest.is_dir():
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=0, help="rounds (default 3 quick, 5 else)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also measure git revision REV's redaction, interleaved")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rebuild", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--off-first", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child or args.rebuild:
        sys.path.insert(0, args.tree)
        if args.rebuild:
            rebuild_share(args.rebuild, args.child, args.off_first)
        else:
            child(args.child, args.reference)
        return
    from common import load_average, workdir

    reps = args.reps or (3 if args.quick else 5)
    with workdir(args.keep, "agentlog-bench-redact-") as work:
        pickled = texts(work, args.quick)
        real, synthetic = pickle.loads(pickled.read_bytes())
        session: list[str] = []
        for t in real:
            if sum(map(len, session)) >= ONE_SESSION:
                break
            session.append(t)
        session_file = work / "session.pickle"
        session_file.write_bytes(pickle.dumps(session))
        trees = {"this tree": ROOT}
        if args.baseline:
            trees = {args.baseline: export(args.baseline, work), **trees}
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in trees}
        plus: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in trees}
        builds: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
        for tree in trees.values():  # the bytecode written
            plus_one(tree, session_file, work / "pycache")
        for rnd in range(reps):
            for name, tree in trees.items():
                cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(pickled),
                       "--tree", str(tree), *(["--reference"] if rnd == 0 else [])]
                proc = subprocess.run(cmd, cwd=tree, check=True, capture_output=True, text=True)
                runs[name].append(json.loads(proc.stdout.splitlines()[-1]))
                plus[name].append(plus_one(tree, session_file, work / "pycache"))
                if (work / "real" / "log").is_dir():
                    proc = subprocess.run([*cmd[:2], "--rebuild", str(work / "real" / "log"),
                                           "--child", str(work / "rebuild.db"), "--tree",
                                           str(tree), *(["--off-first"] if rnd % 2 else [])],
                                          cwd=tree, check=True,
                                          capture_output=True, text=True)
                    builds[name].append(json.loads(proc.stdout.splitlines()[-1]))
        for set_name, items in (("real", real), ("synthetic", synthetic)):
            if not items:
                continue
            mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in items) / 1e6
            print(f"\n== {set_name} texts: {len(items):,} texts, {mb:.1f} MB "
                  f"(CPU seconds, best of {reps} interleaved rounds)")
            for name in trees:
                rows = [r[set_name] for r in runs[name]]
                best = min(r["redact"] for r in rows)
                line = f"  {name:12s} redact {best:7.3f} s {mb / best:8.1f} MB/s"
                ref = [r["reference"] for r in rows if "reference" in r]
                if ref:
                    line += f"  (every rule on every line: {mb / ref[0]:.1f} MB/s)"
                print(line + f"; {rows[0]['found']} texts with a secret; "
                      f"{COLD_TEXT_MB} MB of text: {COLD_TEXT_MB / mb * best:.1f} s")
                parts = {k: min(r["parts"][k] for r in rows if k in r["parts"])
                         for k in rows[0]["parts"]}
                for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:8]:
                    print(f"      {k:44s} {v:7.3f} s")
        if any(builds.values()):
            print(f"\n== a sequential rebuild of the real corpora's log (the cold build's "
                  f"projection), CPU, best of {reps}, redaction on and off")
            for name in trees:
                on = min(b["on"] for b in builds[name])
                off = min(b["off"] for b in builds[name])
                print(f"  {name:12s} on {on:6.2f} s, off {off:6.2f} s: redaction "
                      f"{on - off:+.2f} s ({100 * (on / off - 1):+.1f} %; goal <= +10 %)")
        kb = sum(len(t.encode("utf-8", "surrogatepass")) for t in session) / 1e3
        print(f"\n== a +1 capture: after `import cli.main, cli.services.config`, import "
              f"projections.redact, then "
              f"redactor() and {len(session)} texts ({kb:.0f} KB); best of {reps} processes")
        for name in trees:
            b = [min(p[i] for p in plus[name]) for i in range(4)]
            print(f"  {name:12s} import {1000 * b[0]:5.1f} ms wall ({1000 * b[1]:5.1f} CPU);"
                  f" redactor + redaction {1000 * b[2]:5.1f} ms wall ({1000 * b[3]:5.1f} CPU);"
                  f" total {1000 * (b[0] + b[2]):5.1f} ms wall")
        print(f"\nload average at the end: {load_average()}")


if __name__ == "__main__":
    main()
