"""history.db catch-up and rebuild keep memory bounded on a log of many large chunks.

Peak RSS is VmHWM of a fresh child process (ru_maxrss would carry the parent's peak across
exec), measured against a child that only imports the same modules and opens the log.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog import EventLog
from eventlog.events import ChunkCaptured, Event
from projections import query
from projections.catchup import BATCH_BYTES, catch_up
from projections.rebuild import build
from tests.conftest import ROOT
from tests.test_projections_support import CLAUDE_SRC, append, broker_events, claude_line, seen

CHUNK = 1 << 20
CHUNKS = 150  # 150 MiB of stored chunk bytes: far more than a batch may hold

_CHILD = """
import sys
from pathlib import Path
from eventlog import EventLog
from projections.catchup import catch_up
from projections.rebuild import rebuild
import projections.catchup as c, projections.pipeline as p, projections.rebuild as r
log = EventLog(Path(sys.argv[1]), readonly=True)
mode = sys.argv[3]
if sys.argv[4] == "sequential":
    r.PARALLEL_BYTES = 1 << 60
if len(sys.argv) > 5:  # the test's own check that it can fail: no byte bound, no release
    c.BATCH_BYTES = r.BATCH_BYTES = c.RELEASE_BYTES = r.RELEASE_BYTES = 1 << 40
if mode == "catch-up":
    catch_up(Path(sys.argv[2]), log)
elif mode == "rebuild":
    rebuild(Path(sys.argv[2]), log)
log.close()
hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0]
print(int(hwm.split()[1]) * 1024, p.last_peak)  # this process, its parse process (if any)
"""


def _big_chunks() -> list[Event]:
    """Chunks of ~1 MiB: a long record the parser skips plus a short searchable line."""
    out: list[Event] = []
    offset = 0
    for i in range(CHUNKS):
        pad = json.dumps({"type": "bench-padding", "blob": "x" * (CHUNK - 200)}).encode() + b"\n"
        data = pad + claude_line(f"u{i}", "user", f"needle{i} in chunk {i}")
        out.append(ChunkCaptured(source=CLAUDE_SRC, generation=0, offset=offset,
                                 size=len(data), data=data, at=5))
        offset += len(data)
    return out


def _peak(log_dir: Path, db_path: Path, mode: str, how: str = "sequential") -> tuple[int, int]:
    """Peak RSS bytes of a process doing `mode`, and of its parse process (0: none)."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(log_dir), str(db_path), mode, how],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    own, child = proc.stdout.strip().splitlines()[-1].split()
    return int(own), int(child)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("biglog") / "log"
    log = EventLog(path)
    append(log, [*broker_events(), seen(CLAUDE_SRC, "claude", "claude.session")])
    chunks = _big_chunks()
    for i in range(0, len(chunks), 10):
        append(log, chunks[i:i + 10], prefix=f"c{i}")
    log.close()
    return path


@pytest.mark.parametrize(("mode", "how"), [("catch-up", "sequential"), ("rebuild", "sequential"),
                                          ("rebuild", "parallel")])
def test_peak_rss_of_catch_up_over_large_chunks_is_bounded(
    big_log: Path, tmp_path: Path, mode: str, how: str
) -> None:
    db_path = tmp_path / "history.db"
    if mode == "catch-up":  # an existing history.db at seq 1: the rest is caught up
        log = EventLog(big_log, readonly=True)
        build(db_path, log, upto=1)
        log.close()
    base, _ = _peak(big_log, tmp_path / "unused.db", "none")
    peak, parse = _peak(big_log, db_path, mode, how)
    grown = peak - base
    # one batch of stored bytes, one decoded chunk and its lines, SQLite's page cache
    assert grown < 4 * BATCH_BYTES + (32 << 20), (mode, grown >> 20, base >> 20)
    if how == "parallel":  # the parse process holds one batch and one part on the pipe
        assert parse, "the rebuild did not run its parse process"
        assert parse - base < 4 * BATCH_BYTES + (32 << 20), (parse >> 20, base >> 20)
    log = EventLog(big_log, readonly=True)
    assert not catch_up(db_path, log).events  # the child caught up to the head
    log.close()
    assert len(query.search(db_path, "needle149")["hits"]) == 1


def test_the_bound_is_what_keeps_it_low(big_log: Path, tmp_path: Path) -> None:
    """Without the byte budget and the page release, the same catch-up grows far more."""
    db_path = tmp_path / "history.db"
    log = EventLog(big_log, readonly=True)
    build(db_path, log, upto=1)
    log.close()
    base, _ = _peak(big_log, tmp_path / "unused.db", "none")
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(big_log), str(db_path),
                           "catch-up", "sequential", "unbounded"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[-2]) - base > 4 * BATCH_BYTES + (32 << 20)


def test_read_raw_stops_at_its_byte_budget(big_log: Path) -> None:
    log = EventLog(big_log, readonly=True)
    first = log.read_raw(1, 1000)
    chunk_seq = next(r.seq for r in first if len(r.value) > CHUNK // 2)
    got = log.read_raw(chunk_seq, 1000, max_bytes=3 * CHUNK)
    assert len(got) == 3 and all(len(r.value) > CHUNK // 2 for r in got)
    assert len(log.read_raw(chunk_seq, 1000, max_bytes=1)) == 1  # always at least one
    assert len(log.read_raw(1, 5, max_bytes=1 << 40)) == 5  # the count still bounds it
    streamed = list(log.iter_raw(1, 1000, max_bytes=4 * CHUNK))
    assert [r.seq for r in streamed] == list(range(1, log.head().seq + 1))
    log.close()


def test_batch_memos_see_writes_made_earlier_in_the_same_batch(tmp_path: Path) -> None:
    """Lookups of runs/sessions are memoized per batch: a run bound later in the batch must
    still reach the session's later records (one batch = one rebuild here)."""
    from eventlog.events import RunStarted

    log = EventLog(tmp_path / "log")
    first = claude_line("a1", "user", "before the run")
    second = claude_line("a2", "user", "after the run")
    append(log, [
        seen(CLAUDE_SRC, "claude", "claude.session"),
        ChunkCaptured(source=CLAUDE_SRC, generation=0, offset=0, size=len(first), data=first),
        RunStarted(job="nightly", run="r1", started_at=9, agent="claude", session="s1"),
        ChunkCaptured(source=CLAUDE_SRC, generation=0, offset=len(first), size=len(second),
                      data=second),
    ])
    built = tmp_path / "built.db"
    build(built, log)
    hits = query.search(built, "run", {"job": "nightly"})["hits"]
    assert sorted(h["id"] for h in hits) == ["transcript:claude:a1", "transcript:claude:a2"]
    log.close()


def test_a_backlog_larger_than_the_rest_is_rebuilt_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projections import catchup, db

    log = EventLog(tmp_path / "log")
    append(log, broker_events()[:3])
    path = tmp_path / "history.db"
    catch_up(path, log)
    append(log, broker_events()[3:], prefix="more")
    monkeypatch.setattr(catchup, "FAST_PATH_BYTES", 1)
    res = catch_up(path, log)
    assert res.rebuilt and res.last_seq == log.head().seq
    con = db.connect(path, readonly=True)
    try:
        ids = sorted(r[0] for r in con.execute("SELECT id FROM documents"))
    finally:
        con.close()
    fresh = tmp_path / "fresh.db"
    build(fresh, log)
    con = db.connect(fresh, readonly=True)
    try:
        assert ids == sorted(r[0] for r in con.execute("SELECT id FROM documents"))
    finally:
        con.close()
    append(log, broker_events()[:1], prefix="one")  # a small backlog: caught up in place
    assert not catch_up(path, log).rebuilt
    monkeypatch.setattr(catchup, "FAST_PATH_BYTES", 1 << 40)
    append(log, broker_events() * 3, prefix="many")  # most of the log, but few bytes
    assert not catch_up(path, log).rebuilt
    log.close()
