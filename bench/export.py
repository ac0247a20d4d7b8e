"""Benchmark of export and import of a project's turns, with baselines from the same run.

For each size (turns in one project, sessions of 1,000 turns, ~300 characters each):
- import: envelope validation alone (MB/s), then `import --apply` end to end (turns/s: plan,
  TurnsImported events appended, history.db caught up), and the log part alone;
- export, in a fresh child process: MB/s of the streamed envelope and the child's peak RSS;
  baseline, also in a fresh child: the naive export (all rows in a list, one json.dumps) —
  its MB/s and peak RSS;
- the ratio of peak RSS between the largest and smallest size (goal: streamed export stays
  flat, ~1.0, while the naive baseline grows with the size);
- the whole-log copy (`export --log` / `import --log`, chain re-verified) in MB/s.

Usage: .venv/bin/python bench/export.py [--quick] [--sizes 25000,100000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.services import archive_ops  # noqa: E402
from cli.services.config import Home  # noqa: E402
from projections.envelope import read_envelope  # noqa: E402

WORDS = [
    "settings", "screen", "migration", "rollback", "database", "index", "query", "export",
    "import", "archive", "session", "project", "turn", "assistant", "user", "tool", "result",
    "thinking", "system", "agent", "search", "cursor", "snapshot", "chunk", "offset",
    "generation", "writer", "chain", "verify", "audit", "backup",
]
T0 = 1_767_225_600_000

CHILD_EXPORT = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from cli.services import archive_ops
from cli.services.config import Home
t = time.perf_counter()
s = archive_ops.export_file(Home(Path({home!r})), "bench", Path({out!r}))
dt = time.perf_counter() - t
print(dt, s["bytes"], s["turns"], {hwm})
"""

CHILD_NAIVE = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from projections import db
t = time.perf_counter()
con = db.connect(Path({db!r}), readonly=True)
rows = con.execute("SELECT session, at, role, text, id, agent FROM documents"
                   " WHERE kind = 'transcript' AND project = 'bench'"
                   " ORDER BY session, at, ord").fetchall()
turns = [{{"sessionId": r[0], "turnIdx": i, "ts": r[1], "role": r[2], "content": r[3],
          "id": r[4], "agent": r[5]}} for i, r in enumerate(rows)]
data = json.dumps({{"schemaVersion": 1, "projectId": "bench", "turnCount": len(turns),
                   "turns": turns}}).encode()
Path({out!r}).write_bytes(data)
dt = time.perf_counter() - t
print(dt, len(data), len(turns), {hwm})
"""

CHILD_IDLE = """
import sys
sys.path.insert(0, {root!r})
from cli.services import archive_ops
from projections import db, export
print(0, 0, 0, {hwm})
"""


# VmHWM (peak RSS of this process image, in KiB): unlike ru_maxrss it does not carry over
# the forking parent's footprint across exec.
HWM = ("int(next(l.split()[1] for l in open('/proc/self/status') "
       "if l.startswith('VmHWM')))")


def make_envelope(n: int, rng: random.Random) -> bytes:
    roles = ("user", "assistant", "tool_use", "tool_result", "thinking")
    turns = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(40))
        turns.append({"sessionId": f"s{i // 1000:05d}", "turnIdx": i % 1000,
                      "ts": _iso(T0 + i * 1000), "role": roles[i % len(roles)],
                      "content": text})
    return json.dumps({"schemaVersion": 1, "projectId": "bench",
                       "exportedAt": "2026-02-01T00:00:00Z", "turnCount": n,
                       "turns": turns}).encode()


def _iso(ms: int) -> str:
    from projections.envelope import format_ts

    return format_ts(ms) or ""


def child(code: str) -> tuple[float, int, int, int]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    dt, size, turns, rss = out.stdout.split()
    return float(dt), int(size), int(turns), int(rss)


def run(n: int, work: Path, rng: random.Random) -> dict[str, float]:
    home = Home(work / f"home-{n}")
    home.root.mkdir(parents=True)
    data = make_envelope(n, rng)
    mb = len(data) / 1e6

    t = time.perf_counter()
    read_envelope(data, sha256=hashlib.sha256(data).hexdigest())
    t_validate = time.perf_counter() - t

    orig_after = archive_ops.after_append
    archive_ops.after_append = lambda h: None  # time the log part alone first
    t = time.perf_counter()
    res = archive_ops.import_envelope(home, data, apply=True)
    t_log = time.perf_counter() - t
    archive_ops.after_append = orig_after
    assert res["turnsToInsert"] == n
    t = time.perf_counter()
    con = archive_ops.open_history(home)  # catch-up: index the imported turns
    assert con is not None
    con.close()
    t_index = time.perf_counter() - t
    log_mb_s = _log_transfer(home, work / f"copy-{n}")
    home.log().close()

    out = work / f"export-{n}.json"
    e_dt, e_size, e_turns, e_rss = child(CHILD_EXPORT.format(root=str(ROOT), home=str(home.root),
                                                             out=str(out), hwm=HWM))
    assert e_turns == n
    assert json.loads(out.read_bytes())["turnCount"] == n
    b_dt, b_size, _, b_rss = child(CHILD_NAIVE.format(root=str(ROOT), db=str(home.history_db),
                                                      out=str(work / "naive.json"), hwm=HWM))
    return {
        "turns": n, "envelope_mb": mb,
        "validate_mb_s": mb / t_validate,
        "import_log_turns_s": n / t_log, "import_index_turns_s": n / t_index,
        "import_total_turns_s": n / (t_log + t_index),
        "export_mb_s": e_size / 1e6 / e_dt, "export_turns_s": n / e_dt,
        "export_rss_mb": e_rss / 1024,
        "naive_mb_s": b_size / 1e6 / b_dt, "naive_rss_mb": b_rss / 1024,
        "log_export_mb_s": log_mb_s[0], "log_import_mb_s": log_mb_s[1],
    }


def _log_transfer(home: Home, dest: Path) -> tuple[float, float]:
    """MB/s of `export --log` (write) and of `import --log --apply` (verify + append)."""
    from eventlog import EventLog
    from eventlog.transfer import StoredAppender, TransferRecord, parse_jsonl, write_jsonl

    dump = dest.with_suffix(".jsonl")
    t = time.perf_counter()
    with dump.open("wb") as f:
        write_jsonl(home.log(), f)
    t_out = time.perf_counter() - t
    size = dump.stat().st_size / 1e6
    target = EventLog(dest)
    t = time.perf_counter()
    with dump.open("rb") as f, StoredAppender(target) as app:
        for item in parse_jsonl(f):
            if isinstance(item, TransferRecord):
                app.add(item)
    t_in = time.perf_counter() - t
    assert target.head() == home.log().head()
    target.close()
    return size / t_out, size / t_in


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (5k and 20k turns)")
    ap.add_argument("--sizes", default=None, help="comma-separated turn counts")
    args = ap.parse_args()
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [5_000, 20_000] if args.quick else [25_000, 100_000])
    rng = random.Random(7)
    work = Path(tempfile.mkdtemp(prefix="agentlog-bench-export-"))
    try:
        _, _, _, idle = child(CHILD_IDLE.format(root=str(ROOT), hwm=HWM))
        print(f"child baseline RSS (imports only): {idle / 1024:.1f} MB")
        rows = [run(n, work, rng) for n in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in rows:
        print(f"\n{int(r['turns']):,} turns, envelope {r['envelope_mb']:.1f} MB")
        print(f"  import: validate {r['validate_mb_s']:.0f} MB/s; apply "
              f"{r['import_total_turns_s']:,.0f} turns/s end to end "
              f"(log {r['import_log_turns_s']:,.0f} turns/s, "
              f"index {r['import_index_turns_s']:,.0f} turns/s)")
        print(f"  export (streamed): {r['export_mb_s']:.1f} MB/s, "
              f"{r['export_turns_s']:,.0f} turns/s, peak RSS {r['export_rss_mb']:.1f} MB")
        print(f"  whole log (JSON Lines, base64): export --log {r['log_export_mb_s']:.0f} MB/s,"
              f" import --log {r['log_import_mb_s']:.0f} MB/s (same head)")
        ratio = r["export_mb_s"] / r["naive_mb_s"]
        print(f"  baseline naive export: {r['naive_mb_s']:.1f} MB/s, peak RSS "
              f"{r['naive_rss_mb']:.1f} MB; streamed/naive speed {ratio:.2f}")
    if len(rows) > 1:
        lo, hi = rows[0], rows[-1]
        print(f"\npeak RSS growth {int(lo['turns']):,} -> {int(hi['turns']):,} turns "
              f"(x{hi['turns'] / lo['turns']:.0f} size): streamed "
              f"x{hi['export_rss_mb'] / lo['export_rss_mb']:.2f} (goal ~1), "
              f"naive x{hi['naive_rss_mb'] / lo['naive_rss_mb']:.2f}")


if __name__ == "__main__":
    main()
