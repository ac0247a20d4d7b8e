"""history.db projection: apply, catch-up == rebuild, transcripts, swaps, crashes, drift."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import EventLog
from eventlog.events import ChunkCaptured, Event, FileSnapshotted, MessageSent
from projections import db, query
from projections.apply import appliers
from projections.catchup import catch_up, status
from projections.drift import check, digests
from projections.rebuild import build, rebuild
from tests.conftest import ROOT, examples
from tests.test_projections_support import (
    CLAUDE_SRC,
    append,
    broker_events,
    chunks_of,
    claude_line,
    mixed_events,
    plain_file,
    seen,
)


def _rows(path: Path) -> dict[str, tuple[int, str]]:
    con = db.connect(path, readonly=True)
    try:
        return digests(con)
    finally:
        con.close()


def _docs(path: Path) -> dict[str, tuple[object, ...]]:
    con = sqlite3.connect(path)
    db.register_functions(con)  # the `documents` view decodes text with `doc_text`
    try:
        rows = con.execute("SELECT id, kind, agent, at, role, session, text FROM documents")
        return {r[0]: r[1:] for r in rows}
    finally:
        con.close()


def test_broker_events_become_documents(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, broker_events())
    res = catch_up(tmp_path / "h.db", log)
    assert res.rebuilt and res.last_seq == log.head().seq
    docs = _docs(tmp_path / "h.db")
    assert docs["message:m1"][:3] == ("message", "claude", 1_000)  # agent via alias binding
    assert docs["message:m2"][0] == "report"
    assert docs["message:m3"][0] == "approval"
    assert docs["decision:storage engine#2"][0] == "decision"
    assert docs["run:run-7.log"][:2] == ("run", "codex")
    assert docs["question:q1"][3] == "question"
    assert [k for k in docs if k.startswith("answer:q1:")]


def test_catch_up_is_incremental_and_a_noop_when_current(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, broker_events()[:3])
    path = tmp_path / "h.db"
    catch_up(path, log)
    append(log, broker_events()[3:])
    assert status(path, log.head().seq) == "behind"
    res = catch_up(path, log)
    assert not res.rebuilt and res.events == 7
    assert status(path, log.head().seq) == "current"
    assert catch_up(path, log).events == 0
    assert _rows(path) == _rows(_fresh(tmp_path, log))


def _fresh(tmp_path: Path, log: EventLog) -> Path:
    out = tmp_path / f"fresh-{time.monotonic_ns()}.db"
    build(out, log)
    return out


def test_transcripts_assembled_across_chunks_and_generations(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    path = tmp_path / "h.db"
    catch_up(path, log)
    docs = _docs(path)
    assert docs["transcript:claude:u1"][3:] == ("user", "s1", "find the zebra in the code")
    assert "transcript:claude:u2" in docs and "transcript:claude:u3" in docs
    assert "transcript:claude:u9" in docs  # generation 1 restarted at offset 0
    codex = [d for k, d in docs.items() if k.startswith("transcript:codex")]
    assert {d[4] for d in codex} == {"cs1"}  # session from session_meta, via parser state
    assert any(d[5] == "quartz answer" for d in codex)
    assert any(k.startswith("run:run-7.log@") for k in docs)
    cov = query.coverage(path, per_source=True)
    claude = next(s for s in cov["perSource"] if s["source"] == CLAUDE_SRC)
    assert claude["generation"] == 1 and claude["pendingBytes"] == 0
    assert claude["unknownTypes"] == {} and claude["bytesCaptured"] > 0
    assert cov["sources"] == 3 and cov["recordsParsed"] >= 6


def test_oversized_lines_are_counted_not_indexed(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("projections.assemble.MAX_LINE", 200)
    log = EventLog(tmp_path / "log")
    big = claude_line("big", "user", "x" * 500)
    data = claude_line("a", "user", "before giraffe") + big + claude_line("b", "user", "after")
    cuts = list(range(30, len(data), 90))  # the big line spans several chunks
    append(log, [seen(CLAUDE_SRC, "claude", "claude.session"), *chunks_of(CLAUDE_SRC, data, cuts)])
    path = tmp_path / "h.db"
    catch_up(path, log, batch=2)
    docs = _docs(path)
    assert "transcript:claude:a" in docs and "transcript:claude:b" in docs
    assert "transcript:claude:big" not in docs
    assert query.coverage(path)["oversizedLines"] == 1
    assert _rows(path) == _rows(_fresh(tmp_path, log))


def test_partial_tail_is_pending_until_its_newline(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    line = claude_line("p1", "user", "pending pelican")
    append(log, [seen(CLAUDE_SRC, "claude", "claude.session"),
                 ChunkCaptured(source=CLAUDE_SRC, generation=0, offset=0, size=20,
                               data=line[:20], at=3)])
    path = tmp_path / "h.db"
    catch_up(path, log)
    assert query.coverage(path)["sourcesPending"] == 1
    assert "transcript:claude:p1" not in _docs(path)
    rest = line[20:]
    cctx = zstandard.ZstdCompressor()
    append(log, [ChunkCaptured(source=CLAUDE_SRC, generation=0, offset=20, size=len(rest),
                               data=cctx.compress(rest), codec="zstd", at=4)])
    catch_up(path, log)
    assert "transcript:claude:p1" in _docs(path)
    assert query.coverage(path)["sourcesPending"] == 0


def test_archive_appliers_are_in_the_table() -> None:
    from projections import archive

    table = appliers()
    assert "message.sent" in table and "chunk.captured" in table
    assert archive.APPLIERS
    for tag in archive.APPLIERS:
        assert table[tag] is archive.APPLIERS[tag]


def test_parser_or_schema_change_triggers_rebuild(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = EventLog(tmp_path / "log")
    append(log, broker_events())
    path = tmp_path / "h.db"
    catch_up(path, log)
    inode = path.stat().st_ino
    assert not catch_up(path, log).rebuilt
    monkeypatch.setattr(db, "parser_version", lambda: "999")
    assert status(path, log.head().seq) == "stale"
    assert catch_up(path, log).rebuilt
    assert path.stat().st_ino != inode
    monkeypatch.setattr(db, "SCHEMA_VERSION", 99)
    assert catch_up(path, log).rebuilt


def test_a_replaced_log_triggers_rebuild(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, broker_events())
    path = tmp_path / "h.db"
    catch_up(path, log)
    other = EventLog(tmp_path / "log2")
    append(other, [MessageSent(id="z", sender="s", to=[], kind="message", body="zanzibar",
                               at=1)] * 1 + broker_events()[3:])
    res = catch_up(path, other)
    assert res.rebuilt
    assert "message:z" in _docs(path) and "message:m1" not in _docs(path)


@pytest.mark.slow
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_catch_up_in_random_batches_equals_rebuild(tmp_path_factory: pytest.TempPathFactory,
                                                   data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    # any sub-sequence of the mixed events (gaps, orphans and all): the log need not make
    # sense for catch-up and rebuild to agree on it
    every = mixed_events()
    keep = data.draw(st.lists(st.booleans(), min_size=len(every), max_size=len(every)),
                     label="keep")
    events = [ev for ev, k in zip(every, keep, strict=True) if k] or every[:1]
    log = EventLog(tmp / "log")
    live = tmp / "live.db"
    pos = 0
    while pos < len(events):  # appends interleaved with catch-ups of random sizes
        n = data.draw(st.integers(1, 6), label="append")
        append(log, events[pos : pos + n], prefix=f"p{pos}")
        pos += n
        if data.draw(st.booleans(), label="catch up now"):
            catch_up(live, log, batch=data.draw(st.integers(1, 7), label="batch"),
                     max_events=data.draw(st.one_of(st.none(), st.integers(1, 9)), label="max"))
    catch_up(live, log, batch=data.draw(st.integers(1, 50), label="final batch"))
    assert _rows(live) == _rows(_fresh(tmp, log))
    log.close()


# What mixed_events() means, written out by hand-checked reading of the events (id, kind,
# agent, at, session, body): catch-up and rebuild must both give exactly this, not merely the
# same as each other.
EXPECTED_DOCUMENTS = [
    ('answer:q1:6e78b634507928eb', 'message', 'other', 7000, None, 'SQLite database, with FTS5'),
    ('decision:storage engine#1', 'decision', 'other', 3000, None, 'use lmdb for the log'),
    ('decision:storage engine#2', 'decision', 'other', 4000, None,
     'use lmdb for the log, sqlite for projections'),
    ('message:m1', 'message', 'claude', 1000, 'S1', 'Hello wörld, the café opens'),
    ('message:m2', 'report', 'other', 2000, None, 'report: 我们使用中文搜索 works'),
    ('message:m3', 'approval', 'other', 2500, None, 'approve the migration plan'),
    ('message:m4', 'progress', 'other', 2600, None, 'progress on the migration: half done'),
    ('question:q1', 'message', 'claude', 6000, None, 'Which database should we pick?'),
    ('run:run-7.log', 'run', 'codex', 5000, 'S2',
     'nightly run-7.log\n{"cwd": "/p", "note": "xyzzy marker"}'),
    ('run:run-7.log@0', 'run', 'codex', 5000, 'S2', 'starting plugh\n'),
    ('run:run-7.log@15', 'run', 'codex', 5000, 'S2', 'step two\n'),
    ('transcript:claude:u1', 'transcript', 'claude', 1793527200000, 's1',
     'find the zebra in the code'),
    ('transcript:claude:u2', 'transcript', 'claude', 1793527200000, 's1',
     'the zebra lives in zoo.py, café included'),
    ('transcript:claude:u3', 'transcript', 'claude', 1793527200000, 's1', '中文 输入 测试'),
    ('transcript:claude:u9', 'transcript', 'claude', 1793527200000, 's1', 'after rewind okapi'),
    ('transcript:codex:780080b79a1d1613:0', 'transcript', 'codex', 1793523602000, 'cs1', 'more'),
    ('transcript:codex:9d3cc74bc11422ba:0', 'transcript', 'codex', 1793523600000, 'cs1',
     'codex finds the zebra'),
    ('transcript:codex:a41965e333c48132:0', 'transcript', 'codex', 1793523601000, 'cs1',
     'quartz answer'),
]


def _semantic(path: Path) -> list[tuple[object, ...]]:
    out = []
    for doc_id in sorted(_docs(path)):
        d = query.get_document(path, doc_id)
        assert d is not None, doc_id
        out.append((d["id"], d["kind"], d["agent"], d["at"], d["session"], d["body"]))
    return out


def test_mixed_events_give_exactly_the_expected_documents(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    live = tmp_path / "live.db"
    catch_up(live, log, batch=3)
    assert _semantic(live) == EXPECTED_DOCUMENTS
    assert _semantic(_fresh(tmp_path, log)) == EXPECTED_DOCUMENTS


def test_drift_check_reports_a_tampered_row(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    path = tmp_path / "h.db"
    catch_up(path, log)
    assert check(path, log)["ok"]
    con = sqlite3.connect(path)
    con.execute("DELETE FROM aliases")
    con.commit()
    con.close()
    report = check(path, log)
    assert not report["ok"] and "aliases" in report["detail"]


def _bulk_log(path: Path, n: int) -> EventLog:
    log = EventLog(path)
    words = ["alpha", "beta", "gamma", "delta", "omega"]
    for start in range(0, n, 2000):
        log.append([(f"b{i}".encode(), MessageSent(
            id=f"b{i}", sender="s", to=[], kind="message",
            body=f"common {words[i % 5]} token{i} " + "filler text " * 20, at=i))
            for i in range(start, min(n, start + 2000))])
    return log


def _rebuild_file(home: Path) -> list[Path]:
    return [p for p in home.glob("history.db.reindex-*")
            if not p.name.endswith(("-wal", "-shm", "-journal")) and p.stat().st_size]


def _reindex_held_mid_build(home: Path) -> subprocess.Popen[bytes] | None:
    """`agentlog reindex`, stopped (SIGSTOP) once it is writing its rebuild file; None when
    it finished before that was seen (fast machine: the caller runs it again)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(home), "reindex", "--json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if _rebuild_file(home):
            os.kill(proc.pid, signal.SIGSTOP)
            if proc.poll() is None and _rebuild_file(home):
                return proc
            os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.002)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return None


def test_search_keeps_answering_during_reindex(tmp_path: Path) -> None:
    """Searches answer while a reindex is mid-build (held there, so the overlap is certain
    however fast or slow the machine) and across its swap (a searcher thread throughout)."""
    log = _bulk_log(tmp_path / "log", 6000)
    path = tmp_path / "history.db"
    catch_up(path, log)
    errors: list[BaseException] = []
    answered = [0]
    more = threading.Condition()
    stop = threading.Event()

    def searcher() -> None:
        while not stop.is_set():
            try:
                res = query.search(path, "common gamma", limit=5)
                assert len(res["hits"]) == 5
                with more:
                    answered[0] += 1
                    more.notify_all()
            except BaseException as exc:
                errors.append(exc)
                with more:
                    more.notify_all()
                return
        query.close_connections()

    def answers_after(n: int) -> None:
        """Wait (a deadline, not a sleep) until the searcher answered past `n`, or failed."""
        with more:
            assert more.wait_for(lambda: answered[0] > n or errors, timeout=60), answered

    t = threading.Thread(target=searcher)
    t.start()
    try:
        for _attempt in range(5):
            proc = _reindex_held_mid_build(tmp_path)
            if proc is not None:
                break
        assert proc is not None, "reindex never seen mid-build in 5 runs"
        try:
            for _ in range(3):  # the searcher answers while the rebuild is half written
                answers_after(answered[0])
            held = query.search(path, "token5999", limit=1)["hits"]
            assert held and held[0]["id"] == "message:b5999"
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        answers_after(answered[0])  # and after the swap
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert query.search(path, "token5999")["hits"][0]["id"] == "message:b5999"


def test_killed_reindex_leaves_the_old_file_serving(tmp_path: Path) -> None:
    log = _bulk_log(tmp_path / "log", 20000)
    path = tmp_path / "history.db"
    catch_up(path, log)
    before = _rows(path)
    log.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(tmp_path), "reindex"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    partial: list[Path] = []
    while not partial and time.monotonic() < deadline:  # the rebuild file is being written
        partial = [p for p in tmp_path.glob("history.db.reindex-*")
                   if not p.name.endswith(("-wal", "-shm", "-journal")) and p.stat().st_size]
        time.sleep(0.005)
    assert partial, "reindex never started writing its rebuild file"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL  # killed, not finished
    assert any(p.exists() for p in partial), "the kill landed after the swap"
    assert _rows(path) == before
    assert query.search(path, "token19999")["hits"][0]["id"] == "message:b19999"
    log = EventLog(tmp_path / "log")
    rebuild(path, log)  # cleans up the dead process's temporary file
    assert not list(tmp_path.glob("history.db.reindex-*"))
    assert _rows(path) == before


def test_writer_on_a_swapped_file_reopens(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, broker_events()[:2])
    path = tmp_path / "h.db"
    catch_up(path, log)
    stale = db.connect(path)  # like a process that opened the file before a reindex
    rebuild(path, log)
    assert db.swapped(stale, path)  # what a writer looks at before and in its transaction
    stale.execute("INSERT INTO aliases VALUES ('x', 'y', 'z', 1)")  # a removed WAL file
    stale.close()  # takes writes: they go nowhere
    fresh = db.connect(path, readonly=True)
    assert fresh.execute("SELECT count(*) FROM aliases WHERE alias = 'x'").fetchone()[0] == 0
    fresh.close()
    append(log, broker_events()[2:])
    assert catch_up(path, log).last_seq == log.head().seq


def test_a_plain_file_from_before_generations_is_published_as_one_by_its_next_rebuild(
        tmp_path: Path) -> None:
    """An older agentlog's plain history.db (rollback journal) is caught up as it is; the
    next rebuild replaces it by the link to a WAL generation, and a reader that opened the
    plain file keeps reading it until it reopens; a second rebuild removes the first
    generation."""
    log = EventLog(tmp_path / "log")
    append(log, broker_events()[:2])
    path = tmp_path / "history.db"
    catch_up(path, log)
    plain_file(path)
    append(log, broker_events()[2:4], prefix="b")
    assert catch_up(path, log).last_seq == log.head().seq and not path.is_symlink()
    old = db.connect(path, readonly=True)
    seen = old.execute("SELECT count(*) FROM document_rows").fetchone()[0]
    append(log, broker_events()[4:], prefix="c")
    rebuild(path, log)
    assert path.is_symlink() and db.swapped(old, path)
    assert old.execute("SELECT count(*) FROM document_rows").fetchone()[0] == seen
    old.close()
    first = path.resolve()
    con = db.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    rebuild(path, log)
    assert not first.exists() and path.resolve() != first
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("history.db")) == [
        "history.db", path.resolve().name, "history.db.lock"]
    assert _rows(path) == _rows(_fresh(tmp_path, log))


def test_a_swap_while_a_catch_up_takes_the_write_lock_is_seen_under_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild that publishes between a batch's look at the path and its BEGIN IMMEDIATE:
    the batch looks again under the lock, rolls back and reopens; the rows are the new
    file's, caught up."""
    log = EventLog(tmp_path / "log")
    append(log, broker_events()[:2])
    path = tmp_path / "h.db"
    catch_up(path, log)
    append(log, broker_events()[2:])
    real_swapped = db.swapped
    looks: list[bool] = []

    def swap_after_the_first_look(con: sqlite3.Connection, p: Path) -> bool:
        got = real_swapped(con, p)
        if not looks:
            rebuild(path, log, lock_timeout=5)  # right after the look, before the lock
        looks.append(got)
        return got

    monkeypatch.setattr(db, "swapped", swap_after_the_first_look)
    assert catch_up(path, log).last_seq == log.head().seq
    assert looks[:2] == [False, True]
    assert _rows(path) == _rows(_fresh(tmp_path, log))


def test_two_builds_in_one_process_are_identical(tmp_path: Path) -> None:
    # The record counter of the last event must not leak into the next build (a drift check
    # rebuilds in the same process that caught up).
    log = EventLog(tmp_path / "log")
    data = claude_line("o1", "user", "one") + claude_line("o2", "user", "two")
    append(log, [seen(CLAUDE_SRC, "claude", "claude.session"), *chunks_of(CLAUDE_SRC, data, [])])
    assert _rows(_fresh(tmp_path, log)) == _rows(_fresh(tmp_path, log))


def test_concurrent_catch_ups_apply_each_event_once(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events()[:5])
    path = tmp_path / "h.db"
    catch_up(path, log)
    append(log, mixed_events()[5:], prefix="more")
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            catch_up(path, log, batch=3)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert _rows(path) == _rows(_fresh(tmp_path, log))


_CATCH_UP_CHILD = """
import sys
from pathlib import Path
from eventlog import EventLog
from projections.catchup import catch_up
log = EventLog(Path(sys.argv[1]), readonly=True)
catch_up(Path(sys.argv[2]), log, batch=25)
"""


def test_killed_catch_up_resumes_after_its_checkpoint(tmp_path: Path) -> None:
    log = _bulk_log(tmp_path / "log", 200)
    path = tmp_path / "history.db"
    catch_up(path, log)
    log.append([(f"late{i}".encode(), MessageSent(
        id=f"late{i}", sender="s", to=[], kind="message", body=f"late {i} " + "pad " * 50,
        at=i)) for i in range(30000)])
    log.close()
    proc = subprocess.Popen([sys.executable, "-c", _CATCH_UP_CHILD, str(tmp_path / "log"),
                             str(path)], cwd=ROOT)
    con = sqlite3.connect(path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # kill it once it committed a few batches
        try:
            if con.execute("SELECT last_seq FROM checkpoint").fetchone()[0] > 2000:
                break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.01)
    con.close()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    log = EventLog(tmp_path / "log")
    mid = query.coverage(path)["events"]
    assert 200 < mid < log.head().seq  # killed mid-way, at a batch boundary
    res = catch_up(path, log)
    assert not res.rebuilt and res.last_seq == log.head().seq
    assert _rows(path) == _rows(_fresh(tmp_path, log))


_DIRTY_WRITER = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA cache_size = 10")  # spill changed pages into the file before commit
c.execute("BEGIN IMMEDIATE")
c.execute("UPDATE aliases SET agent = agent")
c.execute("UPDATE document_rows SET title = hex(randomblob(2000))")
print("dirty", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("kind", ["generation", "plain"])
def test_search_after_a_writer_died_mid_transaction(tmp_path: Path, kind: str) -> None:
    """A generation (WAL: the dead writer's frames, never committed, are ignored) and a plain
    file from before generations (its hot journal is rolled back on the first read)."""
    log = _bulk_log(tmp_path / "log", 2000)
    path = tmp_path / "history.db"
    catch_up(path, log)
    if kind == "plain":
        plain_file(path)
    before = _rows(path)
    proc = subprocess.Popen([sys.executable, "-c", _DIRTY_WRITER, str(path)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"dirty\n"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = "-journal" if kind == "plain" else "-wal"
    assert Path(f"{path.resolve()}{left}").stat().st_size > 0  # what the writer left
    query.close_connections()
    assert len(query.search(path, "common gamma")["hits"]) == 10  # rolled back on first read
    assert _rows(path) == before


def test_unknown_record_types_are_counted_per_source(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    data = (b'{"type":"weird-thing","uuid":"x"}\n' + claude_line("k1", "user", "known kiwi")
            + b"not json at all\n" + b'{"type":"weird-thing","uuid":"y"}\n')
    append(log, [seen(CLAUDE_SRC, "claude", "claude.session"), *chunks_of(CLAUDE_SRC, data, [9])])
    path = tmp_path / "h.db"
    catch_up(path, log)
    cov = query.coverage(path, per_source=True)
    assert cov["unknownRecordTypes"] == {"claude:weird-thing": 2, "claude:undecodable": 1}
    src = cov["perSource"][0]
    assert src["unknownTypes"] == cov["unknownRecordTypes"] and src["unknown"] == 3
    assert src["records"] == 1 and src["lines"] == 4
    assert query.search(path, "kiwi")["coverage"]["unknownRecordTypes"]["claude:weird-thing"] == 2


def test_run_log_time_is_the_run_start_whatever_the_order(tmp_path: Path) -> None:
    """QA regression: a run log without (or before) its metadata was dated by capture time."""
    log = EventLog(tmp_path / "log")
    named = "runs:r3:2026-11-21T00-00-00Z-nometa.log"
    late = "runs:r3:late.log"
    evs: list[Event] = [seen(named, "runs", "runs.log"), seen(late, "runs", "runs.log")]
    evs += chunks_of(named, b"wombat line\n", [], at=99)
    evs += chunks_of(late, b"tapir line\n", [], at=99)
    append(log, evs)
    path = tmp_path / "h.db"
    catch_up(path, log)
    docs = _docs(path)
    assert docs["run:2026-11-21T00-00-00Z-nometa.log@0"][2] == 1_795_219_200_000  # file name
    assert docs["run:late.log@0"][1:3] == ("other", 99)  # nothing better known yet
    meta = json.dumps({"job": "j", "agent": "claude", "jobStartedAt": "2026-11-20T10:00:00Z"})
    append(log, [seen("runs:r3:late.json", "runs", "runs.meta"),
                 FileSnapshotted(source="runs:r3:late.json", blake3="b", size=len(meta),
                                 data=meta.encode(), at=100)], prefix="m")
    catch_up(path, log)
    docs = _docs(path)
    assert docs["run:late.log@0"][1:3] == ("claude", 1_795_168_800_000)  # the metadata's start
    assert _rows(path) == _rows(_fresh(tmp_path, log))
