"""Benchmark of peak memory: every heavy `agentlog` command as a whole process, on a
synthetic three-agent home (bench/capture.py's writer: ~1 GB, or ~30 MB with --quick).

For each command it prints the peak resident set of the agentlog process (VmHWM, read by
the process itself at exit, else the highest polled value), split into anonymous memory
(Python objects, SQLite's page cache and sorter, FTS5's term hash, msgspec buffers) and
file-backed pages (shared libraries, and LMDB's read-only mapping of data.mdb, whose touched
pages count in RSS until released: the `of which log` column), polled from /proc every
20 ms; the whole process tree's peak (verify's checker children, the rebuild's builder and
parse processes), as summed RSS and as summed PSS (shared pages counted once), and each
process's own peak;
wall time and CPU time (the child and the children it reaped). Baselines in the same run:
`python -c pass`, the import of the modules the heavy commands load, and the sizes of the
log and history.db. Goal (issue 13): every peak <= 200 MB.

Commands, in this order: cold `capture` (empty -> searchable: capture with indexing), two
searches, `reindex`, `verify`, `export` of the biggest project, of the biggest session and
of the whole log, `conversation` of the biggest session, `history`, `archive` (everything:
--after-days 0), then `mcp` capturing the same sources into an empty home by itself and
then new sessions arriving over time, and `serve` with searches and an HTTP export while
new sessions arrive.

    .venv/bin/python bench/memory.py --quick
    .venv/bin/python bench/memory.py --src /tmp/memory-gb/src   # write once, keep, reuse
    .venv/bin/python bench/memory.py --src /tmp/memory-gb/src --only capture  # cold only

The last lines give the worst single process and the worst process tree (goal: the summed
RSS of every process of a command <= 200 MB, i.e. 190.7 MiB).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/http.py and bench/mcp.py are named like the standard library and the SDK
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402
import urllib.request  # noqa: E402
from typing import Any  # noqa: E402

ROOT = HERE.parent
MiB = 1 << 20
# `agentlog` itself; at exit it writes its VmHWM (peak RSS, exact) to $BENCH_HWM. ru_maxrss
# would not do: Linux carries the parent's high-water mark across exec.
PROBE = (
    "import atexit, os, sys\n"
    "def _hwm():\n"
    "    with open('/proc/self/status') as f:\n"
    "        kb = [x.split()[1] for x in f if x.startswith('VmHWM')][0]\n"
    "    with open(os.environ['BENCH_HWM'], 'w') as f:\n"
    "        f.write(kb)\n"
    "atexit.register(_hwm)\n"
    "from cli.main import main\n"
    "main(sys.argv[1:])\n"
)
IMPORTS = ("import cli.main, cli.group, cli.commands.capture, cli.commands.search, "
           "projections.apply, projections.rebuild, projections.query, readers.capture, "
           "readers.parse, eventlog.store, eventlog.verify")


def _status(pid: int) -> dict[str, int] | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            out = {}
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(rest.split()[0]) * 1024
            return out
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None


def _tree(pid: int) -> list[int]:
    """The processes of the tree, less forks that have not exec'd yet: Python's subprocess
    starts a child with vfork, which runs in its parent's memory until exec (it reports the
    parent's RSS, but holds no page of its own), so it is left out of the sums; so is a
    process already gone."""
    out, todo = [], [(pid, None)]
    while todo:
        p, parent_cmd = todo.pop()
        cmd = _cmdline(p)
        if cmd is None or (parent_cmd is not None and cmd == parent_cmd):
            continue
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend((int(c), cmd) for c in f.read().split())
        except OSError:
            pass
    return out


def _log_rss(pid: int) -> int:
    """Resident bytes of this process's mappings of a data.mdb (LMDB's map)."""
    total, inside = 0, False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if line[0] in "0123456789abcdef" and "-" in line.split(None, 1)[0]:
                    inside = line.rstrip().endswith("/data.mdb")
                elif inside and line.startswith("Rss:"):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return 0
    return total


def _rollup(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process read together from /proc/PID/smaps_rollup: PSS divides each
    shared page among the processes mapping it, so a tree's summed PSS counts a shared
    library page once while its summed RSS counts it in every process."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return rss, pss


def _role(pid: int) -> str:
    """A short name for a process of the tree (the agentlog command or helper module)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(a.decode(errors="replace") for a in args)
    for key in ("pipeline import produce", "follow import run", "eventlog.verify", "lmdb"):
        if key in text:
            return key.split()[-1].replace("produce", "parse").replace("run", "builder")
    return "child"


class Watch:
    """Polls a process tree: peaks of RSS (per process and summed over the tree), of the
    tree's summed PSS, anon, file, log map. Every tick reads each process's RSS and PSS
    together (smaps_rollup), so `tree` (the peak of the summed RSS), `tree_pss` (the summed
    PSS at that same tick) and `pss` (the peak of the summed PSS) are sums of one instant;
    `at_peak` is each process's RSS at the tree's peak."""

    def __init__(self, pid: int, every: float = 0.02, trace: Path | None = None) -> None:
        self.pid, self.every, self.trace = pid, every, trace
        self.peak = self.anon = self.file = self.log = self.tree = self.now = self.pss = 0
        self.tree_pss = 0
        self.procs: dict[int, list[Any]] = {}  # pid -> [role, peak RSS]
        self.at_peak: list[tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n, t0 = 0, time.perf_counter()
        out = open(self.trace, "a") if self.trace is not None else None  # noqa: SIM115
        while not self._stop.is_set():
            total = pss = 0
            parts: list[tuple[str, int]] = []
            for p in _tree(self.pid):
                st = _status(p)
                if not st:
                    continue
                rss, p_pss = _rollup(p)
                rss = rss or st.get("VmRSS", 0)
                total += rss
                pss += p_pss
                entry = self.procs.setdefault(p, ["main" if p == self.pid else _role(p), 0])
                entry[1] = max(entry[1], st.get("VmHWM", 0))
                parts.append((entry[0], rss))
                self.peak = max(self.peak, st.get("VmHWM", 0))
                self.anon = max(self.anon, st.get("RssAnon", 0))
                self.file = max(self.file, st.get("RssFile", 0) + st.get("RssShmem", 0))
                if n % 10 == 0:
                    self.log = max(self.log, _log_rss(p))
                if p == self.pid:
                    self.now = st.get("VmRSS", 0)
            if total > self.tree:
                self.tree, self.tree_pss, self.at_peak = total, pss, parts
            self.pss = max(self.pss, pss)
            if out is not None and parts and n % 5 == 0:  # every 0.1 s: t, sum, PSS, each
                out.write(f"{time.perf_counter() - t0:.1f} {total / MiB:.0f} {pss / MiB:.0f} "
                          + " ".join(f"{r}={x / MiB:.0f}" for r, x in parts) + "\n")
            n += 1
            self._stop.wait(self.every)
        if out is not None:
            out.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Bench:
    def __init__(self, work: Path, env: dict[str, str], trace: Path | None = None) -> None:
        self.work, self.env, self.trace = work, env, trace
        self.rows: list[tuple[str, dict[str, float]]] = []

    def watch(self, pid: int, label: str) -> Watch:
        """A Watch of `pid`; with --trace its ticks go to TRACE/<step>.txt."""
        if self.trace is None:
            return Watch(pid)
        self.trace.mkdir(parents=True, exist_ok=True)
        name = "".join(c if c.isalnum() else "-" for c in label.split(" (")[0]).strip("-")
        return Watch(pid, trace=self.trace / f"{name}.txt")

    def popen(self, args: list[str], *, agentlog: bool = True, **kw: Any) -> subprocess.Popen[
            bytes]:
        hwm = self.work / f"hwm-{len(self.rows)}-{time.monotonic_ns()}"
        env = dict(self.env, BENCH_HWM=str(hwm))
        cmd = [sys.executable, "-c", PROBE, *args] if agentlog else [sys.executable, *args]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, **kw)
        proc.hwm_file = hwm  # type: ignore[attr-defined]
        return proc

    def finish(self, label: str, proc: subprocess.Popen[bytes], watch: Watch, t0: float,
               rusage: Any) -> dict[str, float]:
        watch.stop()
        wall = time.perf_counter() - t0
        hwm = watch.peak
        path = getattr(proc, "hwm_file", None)
        if path is not None and path.exists():
            hwm = max(hwm, int(path.read_text()) * 1024)
            path.unlink()
        cpu = (rusage.ru_utime + rusage.ru_stime) if rusage is not None else float("nan")
        fig = {"peak": hwm, "anon": watch.anon, "file": watch.file, "log": watch.log,
               "tree": max(watch.tree, hwm), "tree_pss": watch.tree_pss, "pss": watch.pss,
               "wall": wall, "cpu": cpu}
        self.rows.append((label, fig))
        print(f"  {label:<44} peak {hwm / MiB:6.0f} MiB (anon {watch.anon / MiB:5.0f}, file "
              f"{watch.file / MiB:5.0f}, of which log {watch.log / MiB:5.0f}); tree: summed "
              f"RSS peak {fig['tree'] / MiB:5.0f} (PSS then {watch.tree_pss / MiB:5.0f}), "
              f"summed PSS peak {watch.pss / MiB:5.0f}; {wall:6.1f} s wall, {cpu:6.1f} s CPU",
              flush=True)
        if len(watch.procs) > 1:
            print("      per process peak: " + ", ".join(
                f"{role} {peak / MiB:.0f}" for role, peak in
                sorted(watch.procs.values(), key=lambda x: -x[1])[:4])
                + "; at the tree's peak: " + " + ".join(
                f"{role} {rss / MiB:.0f}" for role, rss in watch.at_peak), flush=True)
        return fig

    def run(self, label: str, args: list[str], *, agentlog: bool = True,
            check: bool = True) -> tuple[dict[str, float], bytes]:
        t0 = time.perf_counter()
        out_path = self.work / "stdout"
        with open(out_path, "wb") as out:
            proc = self.popen(args, agentlog=agentlog, stdout=out, stderr=subprocess.PIPE)
            watch = self.watch(proc.pid, label)
            err = proc.stderr.read() if proc.stderr else b""
            _, status, rusage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        fig = self.finish(label, proc, watch, t0, rusage)
        if check and proc.returncode != 0:
            raise SystemExit(f"{label} failed ({proc.returncode}): {err.decode()[-2000:]}")
        return fig, out_path.read_bytes()


def _mb(path: Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6
    return path.stat().st_size / 1e6 if path.exists() else 0.0


def _new_session(claude: Path, k: int, lines: int = 300) -> None:
    """One new Claude session (~100 KB) in `claude`, a root of its own (sources stay as
    written)."""
    sys.path.insert(0, str(HERE))
    from capture import _claude_line

    rng = random.Random(1000 + k)
    sid = f"00000000-0000-4000-8000-{k:012d}"
    p = claude / "projects" / "-w-arrivals" / f"{sid}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"".join(_claude_line(rng, sid, j, 80) for j in range(lines)))


def _note(home: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((home / "log" / "capture.lock").read_bytes() or b"{}"))
    except (OSError, ValueError):
        return {}


def _applied(home: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{home / 'history.db'}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT last_seq FROM checkpoint").fetchone()[0])
        finally:
            con.close()
    except (sqlite3.Error, TypeError):
        return -1


def _wait_caught_up(home: Path, deadline_s: float) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < deadline_s:
        note = _note(home)
        if note.get("caughtUp") and note.get("head") and _applied(home) == note.get("head"):
            return time.perf_counter() - t0
        time.sleep(0.25)
    raise SystemExit(f"never caught up: {_note(home)}")


def live(b: Bench, label: str, args: list[str], home: Path, claude: Path, *, arrivals: int,
         first: int, http: bool = False) -> None:
    """A long-running front end: until it has captured and indexed everything, then
    `arrivals` new sessions one a second, each waited for until indexed."""
    t0 = time.perf_counter()
    proc = b.popen(["--home", str(home), *args], stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    watch = b.watch(proc.pid, label)
    assert proc.stdin is not None
    if not http:  # initialize, so the SDK's session is live like a client's
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}
        proc.stdin.write(json.dumps(init).encode() + b"\n" + json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        proc.stdin.flush()
    took = _wait_caught_up(home, 3600)
    print(f"    {label}: caught up in {took:.1f} s, RSS then {watch.now / MiB:.0f} MiB",
          flush=True)
    url = token = None
    if http:
        info = json.loads((home / "server.json").read_text())
        url, token = info["url"].split("?")[0].rstrip("/"), info["token"]
    for k in range(arrivals):
        _new_session(claude, first + k)
        time.sleep(1.0)
        if url:
            req = urllib.request.Request(f"{url}/api/search?q=refactor+parser",
                                         headers={"Authorization": f"Bearer {token}"})
            urllib.request.urlopen(req, timeout=60).read()
    if url:
        pid = urllib.parse.quote("/w/p", safe="")
        req = urllib.request.Request(f"{url}/api/projects/{pid}/history/export",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=600) as r:
            while r.read(1 << 20):
                pass
    _wait_caught_up(home, 600)
    print(f"    {label}: {arrivals} arrivals indexed, RSS now {watch.now / MiB:.0f} MiB",
          flush=True)
    if http:
        proc.terminate()
    else:
        proc.stdin.close()
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    b.finish(label, proc, watch, t0, rusage)


STEPS = ("search", "reindex", "verify", "export", "conversation", "history", "live", "archive")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="~30 MB home instead of ~1 GB")
    ap.add_argument("--src", type=Path, help="the synthetic sources (written when missing)")
    ap.add_argument("--keep", type=Path, help="work in DIR and keep it")
    ap.add_argument("--skip", default="", help="comma-separated: " + ", ".join(STEPS))
    ap.add_argument("--trace", type=Path, help="write each step's tree every 0.1 s (seconds, "
                    "summed RSS, summed PSS, each process's RSS in MiB) to TRACE/STEP.txt")
    ap.add_argument("--only", default="", help="comma-separated steps to run (the cold "
                    "capture always runs: every other step needs its home)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if args.only:
        skip |= set(STEPS) - set(args.only.split(","))
    sys.path.insert(0, str(HERE))  # bench/ again: what it shadows is imported by now
    from common import workdir

    with workdir(args.keep, "agentlog-bench-memory-") as work:
        run(work, args.src or work / "src", args.quick, skip, args.trace)


def run(work: Path, src: Path, quick: bool, skip: set[str], trace: Path | None = None) -> None:
    from capture import write_home
    from common import load_average

    roots = {a: src / a for a in ("claude", "codex", "opencode")}
    if not all(r.is_dir() for r in roots.values()):
        t = time.perf_counter()
        write_home(src, 6000, (12 << 20) if quick else (800 << 20), 20 if quick else 200)
        print(f"  wrote the synthetic home in {time.perf_counter() - t:.1f} s")
    user = work / "user"  # HOME: no default root of any other agent exists
    user.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
                        "CLAUDE_CONFIG_DIR", "CODEX_HOME") and not k.startswith("AGENTLOG_")}
    env.update(HOME=str(user), PYTHONPYCACHEPREFIX=str(work / "pycache"))
    b = Bench(work, env, trace)
    print(f"agentlog memory bench: {_mb(src):.0f} MB of sources (claude, codex, opencode); "
          f"load average {load_average()}; goal: peak <= 200 MB", flush=True)
    b.run("baseline: python -c pass", ["-c", "pass"], agentlog=False)
    b.run("baseline: import of the heavy modules", ["-c", IMPORTS], agentlog=False)

    arrive = work / "arrivals"  # new sessions over time: a second Claude root
    shutil.rmtree(arrive, ignore_errors=True)
    arrive.mkdir()

    def home_with_config(name: str) -> Path:
        h = work / name
        shutil.rmtree(h, ignore_errors=True)
        h.mkdir()
        (h / "config.json").write_text(json.dumps({
            "claude_dir": [str(roots["claude"]), str(arrive)], "codex_dir": str(roots["codex"]),
            "opencode_dir": str(roots["opencode"]), "runs_dir": str(work / "no-runs")}))
        return h

    home = home_with_config("home")
    h = ["--home", str(home)]
    b.run("capture (cold, indexing: empty -> searchable)", [*h, "capture", "--json"])
    print(f"    log {_mb(home / 'log' / 'data.mdb'):.0f} MB, history.db "
          f"{_mb(home / 'history.db'):.0f} MB", flush=True)
    session = "big"
    if "search" not in skip:
        _, out = b.run("search --json 'refactor parser'",
                       [*h, "search", "refactor parser", "--json"])
        hits = json.loads(out)["hits"]
        big = next((x for x in hits if "big" in json.dumps(x)), None)
        session = str(big["session"]) if big and big.get("session") else "big"
        b.run("search --json the (every document matches)", [*h, "search", "the", "--json"])
    if "reindex" not in skip:
        b.run("reindex", [*h, "reindex", "--json"])
    if "verify" not in skip:
        b.run("verify (chain, structure, drift = a rebuild)", [*h, "verify", "--json"])
    out_file = work / "export.json"
    if "export" not in skip:
        b.run("export -p /w/p (the biggest project)", [*h, "export", "-p", "/w/p", "-o",
                                                         str(out_file), "--json"])
        print(f"    export {_mb(out_file):.0f} MB", flush=True)
        b.run(f"export -p /w/p -s {session[:12]} (biggest session)",
              [*h, "export", "-p", "/w/p", "-s", session, "-o", str(out_file), "--json"])
        out_file.unlink(missing_ok=True)
        b.run("export --log (whole log)", [*h, "export", "--log", str(out_file), "--json"])
        out_file.unlink(missing_ok=True)
    if "conversation" not in skip:
        b.run("conversation (biggest session, 100 items)",
              [*h, "conversation", session, "--limit", "100", "--json"])
    if "history" not in skip:
        b.run("history -p /w/p", [*h, "history", "-p", "/w/p", "--json"])
    if "live" not in skip:
        arrivals = 5 if quick else 20
        mhome = home_with_config("home-mcp")
        live(b, "mcp (capturing from empty, then arrivals)", ["mcp"], mhome, arrive,
             arrivals=arrivals, first=0)
        live(b, "serve (arrivals, searches, HTTP export)", ["serve", "--port", "0"], home,
             arrive, arrivals=arrivals, first=arrivals, http=True)
    if "archive" not in skip:
        b.run("archive --after-days 0 (every session)", [*h, "archive", "--after-days", "0",
                                                         "--json"])
    rows = [(name, f) for name, f in b.rows if not name.startswith("baseline")]
    worst = max((f["peak"], name) for name, f in rows)
    tree = max((f["tree"], name) for name, f in rows)
    pss = max((f["pss"], name) for name, f in rows)
    verdict = {True: "met", False: "missed"}
    print(f"worst peak of one process: {worst[0] / MiB:.0f} MiB ({worst[1]}); goal <= 200 MB "
          f"({verdict[worst[0] <= 200e6]})")
    print(f"worst summed RSS of a process tree: {tree[0] / MiB:.0f} MiB ({tree[1]}); goal "
          f"<= 200 MB = 190.7 MiB ({verdict[tree[0] <= 200e6]}); worst summed PSS "
          f"{pss[0] / MiB:.0f} MiB ({pss[1]}); load average now {load_average()}")

if __name__ == "__main__":
    main()
