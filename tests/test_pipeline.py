"""The parallel rebuild (parse process + SQL here) gives the sequential build's answers,
also when it follows a log still being appended to (`projections.follow`).

Every table's canonical rows (the drift check's digests), the full-text shadow tables and
search answers are compared; batches and pipe parts are made tiny so the logs below cross
many boundaries. Crash cases: a killed parse process fails the build and the old file keeps
serving; a killed building process takes its parse process with it.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard

from eventlog import CorruptRecord, EventLog
from eventlog.events import ChunkCaptured, Event, FileSnapshotted, MessageSent
from projections import db, follow, frames, pipeline, query, rebuild
from projections.drift import digests
from projections.errors import ProjectionError
from tests.conftest import ROOT
from tests.test_projections_support import (
    CLAUDE_SRC,
    append,
    chunks_of,
    claude_line,
    mixed_events,
    seen,
)

FTS_SHADOWS = ("documents_fts_data", "documents_fts_idx", "documents_fts_docsize",
               "documents_cjk_data", "documents_cjk_idx")


def _answers(path: Path) -> tuple[object, ...]:
    con = sqlite3.connect(path)
    db.register_functions(con)  # the `documents` view decodes bodies
    try:
        shadows = tuple(tuple(con.execute(f"SELECT * FROM {t} ORDER BY 1")) for t in FTS_SHADOWS)
        rowids = tuple(con.execute("SELECT rowid, id FROM documents ORDER BY rowid"))
        dig = digests(con)
    finally:
        con.close()
    hits = tuple(tuple((h["id"], h.get("snippet")) for h in query.search(path, q)["hits"])
                 for q in ("zebra", "café", "中文", "giraffe", "plugh", "okapi", "migration"))
    return dig, shadows, rowids, hits


def _both(tmp: Path, log: EventLog) -> tuple[tuple[object, ...], tuple[object, ...]]:
    seq, par = tmp / f"seq-{time.monotonic_ns()}.db", tmp / f"par-{time.monotonic_ns()}.db"
    rebuild.build(seq, log, parallel=False)
    rebuild.build(par, log, parallel=True)
    return _answers(seq), _answers(par)


def _awkward() -> list[Event]:
    """Beyond mixed_events: zstd chunks, an overlapping and a repeated chunk, a gap, a chunk
    of an older generation, an undecodable chunk, an unannounced source, a snapshot."""
    zc = zstandard.ZstdCompressor()
    src2 = "claude:r1:projects/-proj/s2.jsonl"
    data = b"".join(claude_line(f"z{i}", "user", f"giraffe number {i} " * 20, session="s2")
                    for i in range(6))
    parts = chunks_of(src2, data, [300, 900, 1500])
    packed = [ChunkCaptured(source=c.source, generation=c.generation, offset=c.offset,
                            size=c.size, data=zc.compress(c.data), codec="zstd", at=c.at)
              for c in parts]
    line = claude_line("g1", "user", "after a gap okapi", session="s2")
    return [
        seen(src2, "claude", "claude.session"), *packed, packed[1], parts[0],
        ChunkCaptured(source=src2, generation=0, offset=len(data) + 50, size=len(line),
                      data=line, at=9),
        ChunkCaptured(source=CLAUDE_SRC, generation=0, offset=0, size=3, data=b"old", at=9),
        ChunkCaptured(source=src2, generation=0, offset=len(data) + 50 + len(line), size=9,
                      data=b"not zstd!", codec="zstd", at=9),
        *chunks_of("claude:r9:projects/-x/unseen.jsonl",
                   claude_line("n1", "user", "unannounced zebra", session="s9"), [20]),
        seen("opencode:r4:storage/session/global/ses_1.json", "opencode", "opencode.json"),
        FileSnapshotted(source="opencode:r4:storage/session/global/ses_1.json", blake3="b1",
                        size=40, data=b'{"id": "ses_1", "title": "migration plan"}'[:40], at=9),
        MessageSent(id="late", sender="peer-a", to=["peer-b"], kind="message",
                    body="zebra at the end", at=9),
    ]


@pytest.mark.parametrize("pack_fill", [pipeline.PACK_FILL, -1.0, float("inf")])
def test_parallel_build_equals_sequential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          pack_fill: float) -> None:
    monkeypatch.setattr(rebuild, "BATCH", 3)  # many log batches ...
    monkeypatch.setattr(pipeline, "PART_BYTES", 64)  # ... each in several parts
    # who packs the bodies: steered by the pipe's backlog, always the parse process, never
    monkeypatch.setattr(pipeline, "PACK_FILL", pack_fill)
    log = EventLog(tmp_path / "log")
    append(log, mixed_events() + _awkward())
    seq, par = _both(tmp_path, log)
    assert seq == par
    assert any(seq[3])  # the queries found something: the comparison is not of empties


def test_parallel_build_equals_sequential_on_random_logs(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    every = mixed_events() + _awkward()
    rng = random.Random(13)
    for round_ in range(4):  # any sub-sequence (orphans, gaps), any batch size
        monkeypatch.setattr(rebuild, "BATCH", rng.randint(1, 9))
        monkeypatch.setattr(pipeline, "PART_BYTES", rng.choice((1, 200, 1 << 20)))
        monkeypatch.setattr(pipeline, "STATE_BYTES", rng.choice((1, 300, 2 << 20)))
        events = [ev for ev in every if rng.random() < 0.7]
        log = EventLog(tmp_path / f"log{round_}")
        append(log, events)
        seq, par = _both(tmp_path, log)
        assert seq == par, f"round {round_}"
        log.close()


def test_a_batch_touching_much_parser_state_ends_early(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The parse process closes a log batch once its records touched `STATE_BYTES` of parser
    state; the batches it sends still cover every record once, in order, and build the
    sequential build's rows."""
    log = EventLog(tmp_path / "log")
    append(log, mixed_events() + _awkward())
    records = log.read_raw(1, 10_000)
    sent: list[list[pipeline.Op]] = []
    pipeline.Parser(state_bytes=1).batch(records, sent.append)
    ends = [op for ops in sent for op in ops if op[0] == "end"]
    assert len(ends) > 2  # one batch became several
    assert sum(op[3] for op in ends) == len(records)
    assert [op[1] for op in ends] == sorted({op[1] for op in ends})
    assert ends[-1][1] == records[-1].seq
    whole: list[list[pipeline.Op]] = []
    pipeline.Parser().batch(records, whole.append)
    assert [op[0] for ops in whole for op in ops].count("end") == 1
    monkeypatch.setattr(pipeline, "STATE_BYTES", 1)
    seq, par = _both(tmp_path, log)
    assert seq == par
    log.close()


def test_a_damaged_record_stops_the_parallel_build(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    log = EventLog(log_dir)
    append(log, mixed_events())
    path = tmp_path / "history.db"
    rebuild.rebuild(path, log, parallel=True)
    before = _answers(path)
    log.close()
    raw = bytearray((log_dir / "data.mdb").read_bytes())
    at = raw.find(b"quartz answer")
    assert at > 0
    while at > 0:  # every stored copy (LMDB keeps stale ones on free pages)
        raw[at + 3] ^= 0x01
        at = raw.find(b"quartz answer", at + 1)
    (log_dir / "data.mdb").write_bytes(bytes(raw))
    log = EventLog(log_dir, readonly=True)
    with pytest.raises(CorruptRecord):
        rebuild.rebuild(path, log, parallel=True)
    assert _answers(path) == before
    assert not list(tmp_path.glob("history.db.reindex-*"))


def _big_log(path: Path, n: int) -> EventLog:
    log = EventLog(path)
    src = "claude:r1:projects/-p/big.jsonl"
    append(log, [seen(src, "claude", "claude.session")])
    data = b"".join(claude_line(f"u{i}", "user", f"token{i} " + "filler text " * 30)
                    for i in range(n))
    append(log, chunks_of(src, data, range(4000, len(data), 4000)))
    return log


def _parse_processes(log_dir: Path) -> list[int]:
    """Pids of parse processes reading `log_dir` (their arguments name it)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes()
            except OSError:
                continue
            if b"projections.pipeline" in cmd and str(log_dir).encode() in cmd:
                out.append(int(p.name))
    return out


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has finished


def test_a_killed_parse_process_fails_the_build_and_the_old_file_serves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _big_log(tmp_path / "log", 3000)
    path = tmp_path / "history.db"
    rebuild.rebuild(path, log, parallel=False)
    before = _answers(path)
    monkeypatch.setattr(rebuild, "BATCH", 20)

    def kill_it(seq: int, stop: int) -> None:
        for pid in _parse_processes(tmp_path / "log"):
            os.kill(pid, signal.SIGKILL)

    with pytest.raises(ProjectionError, match="parse process"):
        rebuild.rebuild(path, log, parallel=True, progress=kill_it)
    assert _answers(path) == before
    assert not list(tmp_path.glob("history.db.reindex-*"))
    rebuild.rebuild(path, log, parallel=True)  # the next run recovers
    assert _answers(path) == before


def test_a_killed_build_takes_its_parse_process_along(tmp_path: Path) -> None:
    log = _big_log(tmp_path / "log", 20000)
    path = tmp_path / "history.db"
    rebuild.rebuild(path, log, parallel=False)
    before = _answers(path)
    log.close()
    code = ("import sys; from pathlib import Path; from eventlog import EventLog;"
            " from projections import rebuild; rebuild.BATCH = 50;"
            " rebuild.rebuild(Path(sys.argv[1]) / 'history.db',"
            " EventLog(Path(sys.argv[1]) / 'log', readonly=True), parallel=True)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT)
    deadline = time.monotonic() + 60
    children: list[int] = []
    while not children and time.monotonic() < deadline and proc.poll() is None:
        children = _parse_processes(tmp_path / "log")
        time.sleep(0.01)
    assert children, "the build never started its parse process"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    while any(map(_running, _parse_processes(tmp_path / "log"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_running, _parse_processes(tmp_path / "log"))), "outlived its build"
    assert _answers(path) == before
    log = EventLog(tmp_path / "log", readonly=True)
    rebuild.rebuild(path, log)  # cleans up the dead build's temporary file
    assert not list(tmp_path.glob("history.db.reindex-*"))
    assert _answers(path) == before


def test_a_build_that_follows_the_appends_equals_a_rebuild(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    events = mixed_events() + _awkward()
    append(log, events[:3])
    path = tmp_path / "history.db"
    builder = follow.start(path, tmp_path / "log")
    for i in range(3, len(events), 4):  # appends go on while the builder reads
        append(log, events[i : i + 4], prefix=f"f{i}")
        time.sleep(0.02)
    assert follow.finish(builder, timeout=120) == 0
    fresh = tmp_path / "fresh.db"
    rebuild.build(fresh, log, parallel=False)
    assert _answers(path) == _answers(fresh)
    con = sqlite3.connect(path)
    assert con.execute("SELECT last_seq FROM checkpoint").fetchone()[0] == log.head().seq
    con.close()


def test_a_build_that_follows_redacts_with_the_callers_rules(tmp_path: Path) -> None:
    """config.json's secret rules, configured in the capture process, reach the follow
    build's two processes: its parse process (transcripts) and its builder (broker
    messages, and the redaction version the file records, so the catch-up after the
    capture does not find it stale)."""
    from projections import redact

    log = EventLog(tmp_path / "log")
    append(log, [seen(CLAUDE_SRC, "claude", "claude.session"),
                 *chunks_of(CLAUDE_SRC, claude_line("u1", "user", "ticket TCK-123456 okapi"),
                            []),
                 MessageSent(id="m1", sender="a", to=["b"], kind="message",
                             body="ticket TCK-654321 zebra", at=1_700_000_000_000)])
    path = tmp_path / "history.db"
    try:
        redact.configure({"ticket": r"TCK-[0-9]{6}"})
        started = follow.start(path, tmp_path / "log")
        assert follow.finish(started, timeout=120) == 0
        version = db.parser_version()
    finally:
        redact.configure()
    con = sqlite3.connect(path)
    db.register_functions(con)
    try:
        texts = sorted(str(t) for t, in con.execute("SELECT text FROM documents"))
        recorded = con.execute("SELECT parser_version FROM checkpoint").fetchone()[0]
    finally:
        con.close()
    assert [t for t in texts if "TCK-" in t] == []
    assert len([t for t in texts if "[redacted:ticket]" in t]) == 2, texts
    assert recorded == version != db.parser_version()


def test_a_killed_appender_still_gets_its_prefix_built(tmp_path: Path) -> None:
    """The caller of `follow.start` dies mid-way: the builder completes the file up to the
    head the caller left (a prefix of the log), and nothing waits forever."""
    log = _big_log(tmp_path / "log", 2000)
    head = log.head().seq
    log.close()
    code = ("import sys, os, time; from pathlib import Path; from projections import follow;"
            " b = follow.start(Path(sys.argv[1]) / 'history.db', Path(sys.argv[1]) / 'log');"
            " print(b.pid, flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    builder = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    deadline = time.monotonic() + 120
    while _running(builder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(builder), "the builder never finished"
    con = sqlite3.connect(tmp_path / "history.db")
    assert con.execute("SELECT last_seq FROM checkpoint").fetchone()[0] == head
    con.close()
    assert not list(tmp_path.glob("history.db.reindex-*"))


def test_only_a_log_of_captured_content_is_parsed_in_a_second_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broker events are applied by the building process either way: a log of them is
    built sequentially; captured chunks (the parse work) are worth a parse process."""
    monkeypatch.setattr(rebuild, "PARALLEL_BYTES", 0)
    broker = EventLog(tmp_path / "broker")
    append(broker, [MessageSent(id=f"m{i}", sender="a", to=["b"], kind="message",
                                body="words " * 50, at=i) for i in range(300)])
    assert not rebuild.use_parallel(broker, broker.head().seq)
    chunks = _big_log(tmp_path / "chunks", 300)
    assert rebuild.use_parallel(chunks, chunks.head().seq)


def test_the_parse_process_packs_bodies_while_the_pipe_is_backed_up(tmp_path: Path) -> None:
    """Who packs a part's bodies follows the pipe's backlog after the previous send: above
    `PACK_FILL` of its capacity the building process is behind, so the parse process packs;
    below, the building process packs them itself (bodies None)."""
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    records = log.read_raw(1, 10_000)
    log.close()

    def bodies(backlog: float) -> list[bool]:
        sent: list[list[pipeline.Op]] = []
        pipeline.Parser(part_bytes=1, backlog=lambda: backlog).batch(records, sent.append)
        return [op[-1] is not None for ops in sent for op in ops
                if op[0] == "chunk" and op[3]]

    behind, waiting = bodies(0.9), bodies(0.1)
    assert len(behind) > 2
    assert all(behind)
    assert not any(waiting)


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux pipes only")
def test_the_pipe_to_the_parse_process_is_widened_and_its_backlog_read() -> None:
    r, w = os.pipe()
    try:
        frames.widen(r, pipeline.PIPE_BYTES)
        assert fcntl.fcntl(w, fcntl.F_GETPIPE_SZ) == pipeline.PIPE_BYTES
        share = pipeline._backlog(w)
        assert share() == 0.0
        os.write(w, b"x" * 300_000)
        assert share() == pytest.approx(300_000 / pipeline.PIPE_BYTES)
        os.read(r, 100_000)
        assert share() == pytest.approx(200_000 / pipeline.PIPE_BYTES)
    finally:
        os.close(r)
        os.close(w)


def test_the_load_counts_where_each_process_spent_its_time(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`pipestats.PATH` (`AGENTLOG_PIPE_STATS`): each process of a parallel load appends one
    line: the seconds of each phase of its loop, and the parts it packed; the rows are the
    ones built without counting."""
    import json

    from projections import pipestats

    monkeypatch.setattr(pipeline, "PART_BYTES", 64)
    log = EventLog(tmp_path / "log")
    append(log, mixed_events() + _awkward())
    plain = tmp_path / "plain.db"
    rebuild.build(plain, log, parallel=True)
    monkeypatch.setattr(pipestats, "PATH", str(tmp_path / "stats.jsonl"))
    counted = tmp_path / "counted.db"
    rebuild.build(counted, log, parallel=True)
    assert _answers(counted) == _answers(plain)
    lines = [json.loads(s) for s in (tmp_path / "stats.jsonl").read_text().splitlines()]
    roles = {line["role"]: line for line in lines}
    assert sorted(roles) == ["builder", "parse"]
    assert {"recv", "apply"} <= set(roles["builder"]["phases"])
    assert {"read_log", "prepare", "send"} <= set(roles["parse"]["phases"])
    sends = roles["parse"]["phases"]["send"][3]
    assert sends == roles["builder"]["phases"]["apply"][3] > 2  # one per part
    assert 0 <= roles["parse"]["amounts"].get("packed_parts", 0) <= sends
    for line in lines:
        # no order between wall and CPU: they come from two clocks (perf_counter and the
        # kernel's schedstat, read one after the other), so a short, busy process can show
        # a CPU figure a few ms above its wall figure
        wall, cpu, waiting = line["total"]
        assert wall > 0 and cpu >= 0 and waiting >= 0
    log.close()
