"""Capture engine: incremental reads, torn tails, growth, rewrites, deletions, snapshots."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog import EventLog
from eventlog.events import FileSnapshotted, SourceRewound, SourceSeen
from readers import capture_files
from readers.capture import Capturer, Options
from readers.capture_files import READ_MAX
from readers.discovery import classify
from readers.restore import generation_bytes, restore
from readers.roots import resolve_roots, root_id
from tests.capture_helpers import append, assert_contiguous, capture, roots_of, write


@pytest.fixture
def log(tmp_path: Path) -> Iterator[EventLog]:
    lg = EventLog(tmp_path / "log")
    yield lg
    lg.close()


def _src(agent: str, root: Path, rel: str) -> str:
    return f"{agent}:{root_id(root)}:{rel}"


def test_classify_layouts() -> None:
    cases = {
        ("claude", "projects/-a/0b1.jsonl"): "claude.session",
        ("claude", "projects/-a/agent-a05b3d3.jsonl"): "claude.subagent",
        ("claude", "projects/-a/s/subagents/agent-x.jsonl"): "claude.subagent",
        ("claude", "projects/-a/s/subagents/agent-x.meta.json"): "claude.subagent_meta",
        ("claude", "projects/-a/s/tool-results/toolu_1.txt"): "claude.tool_result",
        ("claude", "history.jsonl"): "claude.history",
        ("claude", "projects/-a/memory/notes.md"): None,
        ("claude", "todos/x.json"): None,
        ("codex", "sessions/2025/09/16/rollout-x.jsonl"): "codex.rollout",
        ("codex", "archived_sessions/rollout-y.jsonl"): "codex.rollout",
        ("codex", "history.jsonl"): "codex.history",
        ("codex", "sessions/2025/notes.txt"): None,
        ("opencode", "storage/session/global/ses_1.json"): "opencode.json",
        ("opencode", "storage/part/msg_1/prt_1.json"): "opencode.json",
        ("opencode", "project/glob/storage/session/info/ses_1.json"): "opencode.json",
        ("opencode", "opencode.db"): "opencode.db",
        ("opencode", "auth.json"): None,
        ("runs", "job-1.log"): "runs.log",
        ("runs", "archive/job-0.json"): "runs.meta",
        ("runs", "deep/x/job.log"): None,
    }
    for (agent, rel), layout in cases.items():
        assert classify(agent, rel) == layout, (agent, rel)


def test_roots_precedence_and_missing(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    roots = resolve_roots(
        flags={"claude": f"{a},{b}"},
        config={"codex_dir": str(tmp_path / "cx")},
        env={"CODEX_HOME": "/nope", "XDG_DATA_HOME": str(tmp_path / "xdg")},
        user_home=tmp_path,
    )
    got = {(r.agent, str(r.path), r.origin, r.exists) for r in roots}
    assert ("claude", str(a), "flag", True) in got
    assert ("claude", str(b), "flag", False) in got
    assert ("codex", str(tmp_path / "cx"), "config", False) in got
    assert ("opencode", str(tmp_path / "xdg" / "opencode"), "env", False) in got
    assert not [r for r in roots if r.agent == "runs"]
    env_roots = resolve_roots(flags={}, config={}, env={"CLAUDE_CONFIG_DIR": "/x,/y"},
                              user_home=tmp_path)
    assert [str(r.path) for r in env_roots if r.agent == "claude"] == ["/x", "/y"]


def test_incremental_appends_while_capturing(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "s1.jsonl", b'{"n":0}\n')
    eng = Capturer(log, roots_of(claude=root), Options(settle_s=0))
    for i in range(1, 40):
        eng.tick()
        append(f, b'{"n":%d}\n' % i)
        if i % 7 == 0:
            eng.flush()
    eng.flush()
    capture(log, roots_of(claude=root))
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "claude" / "projects" / "-p" / "s1.jsonl").read_bytes() == f.read_bytes()
    assert_contiguous(log)


def test_torn_tail_waits(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "codex"
    f = write(root / "history.jsonl", b'{"a":1}\n{"b":')
    capture(log, roots_of(codex=root), settle=3600)
    out = tmp_path / "o1"
    restore(log, out)
    assert (out / "codex" / "history.jsonl").read_bytes() == b'{"a":1}\n'
    append(f, b"2}\n")
    capture(log, roots_of(codex=root), settle=3600)
    out2 = tmp_path / "o2"
    restore(log, out2)
    assert (out2 / "codex" / "history.jsonl").read_bytes() == b'{"a":1}\n{"b":2}\n'
    # an unterminated tail that stays quiet is captured once settled
    append(f, b'{"c":3}')
    old = f.stat().st_mtime_ns - 10_000_000_000
    os.utime(f, ns=(old, old))
    capture(log, roots_of(codex=root), settle=5)
    out3 = tmp_path / "o3"
    restore(log, out3)
    assert (out3 / "codex" / "history.jsonl").read_bytes() == f.read_bytes()
    assert_contiguous(log)


def test_finished_unterminated_file_is_captured_whole_in_one_run(
    tmp_path: Path, log: EventLog
) -> None:
    """A quiet file whose last line has no newline: one run takes every byte, whether the
    file is new to the engine (first polled from the queue) or already registered."""
    root = tmp_path / "codex"

    def quiet(f: Path) -> None:
        old = f.stat().st_mtime_ns - 10_000_000_000
        os.utime(f, ns=(old, old))

    def restored(f: Path) -> bytes:
        out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}"
        restore(log, out)
        return (out / "codex" / f.relative_to(root)).read_bytes()

    first = write(root / "sessions" / "2025" / "rollout-a.jsonl", b'{"a":1}\n{"b":2}\n{"c":')
    quiet(first)
    assert capture(log, roots_of(codex=root), settle=5).pending == 0
    assert restored(first) == first.read_bytes()
    append(first, b'3}\n{"d":4}\n{"e":')
    quiet(first)
    assert capture(log, roots_of(codex=root), settle=5).pending == 0
    assert restored(first) == first.read_bytes()
    assert_contiguous(log)


def test_codex_growth_snapshot_is_not_a_rewrite(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "codex"
    rel = "sessions/2025/11/01/rollout-2025-11-01T11-34-37-x.jsonl"
    older = b"".join(b'{"type":"event_msg","i":%d}\n' % i for i in range(3000))
    newer = older + b"".join(b'{"type":"response_item","i":%d}\n' % i for i in range(500))
    f = write(root / rel, older)
    s1 = capture(log, roots_of(codex=root))
    assert s1.bytes == len(older)
    tmp = root / "replacement.tmp"
    tmp.write_bytes(newer)
    os.replace(tmp, f)  # a new inode whose content extends the old one
    s2 = capture(log, roots_of(codex=root))
    assert s2.bytes == len(newer) - len(older)
    assert s2.rewound == 0
    assert not [e for e in log.iter_events() if isinstance(e.event, SourceRewound)]
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "codex" / rel).read_bytes() == newer
    assert_contiguous(log)


def test_truncate_and_rewrite_start_new_generations(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    rel = "projects/-p/s.jsonl"
    first = b'{"v":"one"}\n' * 50
    f = write(root / rel, first)
    capture(log, roots_of(claude=root))
    f.write_bytes(b'{"v":"two"}\n')  # shrank
    st = capture(log, roots_of(claude=root))
    assert st.rewound == 1
    third = b'{"v":"3ee"}\n' * 50 + b'{"v":"more"}\n'  # same size prefix, other bytes
    f.write_bytes(third)
    st = capture(log, roots_of(claude=root))
    assert st.rewound == 1
    source = _src("claude", root, rel)
    rewinds = [e.event for e in log.iter_events() if isinstance(e.event, SourceRewound)]
    assert [r.generation for r in rewinds] == [1, 2]
    assert generation_bytes(log, source, 0) == first
    assert generation_bytes(log, source, 1) == b'{"v":"two"}\n'
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "claude" / rel).read_bytes() == third


def test_deleted_source_is_kept_and_reported(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "gone.jsonl", b'{"x":1}\n')
    capture(log, roots_of(claude=root))
    f.unlink()
    st = capture(log, roots_of(claude=root))
    assert st.missing == 1 and st.appended == 0  # the cursor notes it; no event, bytes stay
    st2 = capture(log, roots_of(claude=root))
    assert st2.appended == 0 and st2.missing == 1
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "claude" / "projects" / "-p" / "gone.jsonl").read_bytes() == b'{"x":1}\n'


def test_long_line_spans_chunks_exactly(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    line = b'{"img":"' + b"QUJD" * (READ_MAX // 2) + b'"}\n'
    data = b'{"a":1}\n' + line + b'{"b":2}\n'
    write(root / "projects" / "-p" / "big.jsonl", data)
    capture(log, roots_of(claude=root), settle=3600)
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "claude" / "projects" / "-p" / "big.jsonl").read_bytes() == data
    assert_contiguous(log)


def test_snapshots_follow_content_hash(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "opencode"
    f = write(root / "storage" / "session" / "global" / "ses_1.json", b'{"title":"A"}')
    capture(log, roots_of(opencode=root))
    st = capture(log, roots_of(opencode=root))
    assert st.appended == 0
    for body in (b'{"title":"B"}', b'{"title":"A"}'):
        f.write_bytes(body)
        os.utime(f, ns=(f.stat().st_mtime_ns + 10**9,) * 2)
        capture(log, roots_of(opencode=root))
    snaps = [e.event for e in log.iter_events() if isinstance(e.event, FileSnapshotted)]
    assert len(snaps) == 3
    f.touch()
    assert capture(log, roots_of(opencode=root)).appended == 0  # same hash, no event
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "opencode" / "storage/session/global/ses_1.json").read_bytes() == b'{"title":"A"}'


def test_source_seen_precedes_its_chunks(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    for i in range(50):
        write(root / "projects" / "-p" / f"s{i}.jsonl", b'{"i":%d}\n' % i)
    capture(log, roots_of(claude=root))
    seen: set[str] = set()
    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, SourceSeen):
            seen.add(ev.source)
        elif hasattr(ev, "source"):
            assert ev.source in seen
    assert len(seen) == 50


def test_bounded_ticks(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    for i in range(100):
        write(root / "projects" / "-p" / f"s{i}.jsonl", b"x\n" * 10)
    eng = Capturer(log, roots_of(claude=root), Options(settle_s=0))
    eng.tick()
    assert len(eng.sources) <= 32
    polled_before = eng.stats.bytes
    eng.tick()
    assert eng.stats.bytes - polled_before <= 2 * 20
    eng.run_once()
    assert eng.finish().files == 100


def test_no_change_fast_path_sees_new_changed_and_returning_files(
    tmp_path: Path, log: EventLog
) -> None:
    from readers.capture import unchanged_files

    root = tmp_path / "claude"
    a = write(root / "projects" / "-p" / "a.jsonl", b'{"a":1}\n')
    roots = roots_of(claude=root)
    assert unchanged_files(log, roots) is None  # no stat cache yet
    capture(log, roots)
    assert unchanged_files(log, roots) == (1, 0)
    b = write(root / "projects" / "-p" / "b.jsonl", b'{"b":1}\n')
    assert unchanged_files(log, roots) is None
    assert capture(log, roots).registered == 1
    append(a, b'{"a":2}\n')
    assert unchanged_files(log, roots) is None
    assert capture(log, roots).bytes == 8
    assert unchanged_files(log, roots) == (2, 0)
    b.rename(tmp_path / "b.jsonl")
    assert unchanged_files(log, roots) is None
    assert capture(log, roots).missing == 1
    assert unchanged_files(log, roots) == (1, 1)
    (tmp_path / "b.jsonl").rename(b)
    assert unchanged_files(log, roots) is None
    st = capture(log, roots)
    assert st.missing == 0 and st.appended == 0
    assert unchanged_files(log, roots) == (2, 0)


def test_restore_one_session_and_one_agent(tmp_path: Path, log: EventLog) -> None:
    claude, oc = tmp_path / "claude", tmp_path / "opencode"
    write(claude / "projects" / "-p" / "aaaa-1.jsonl", b'{"s":"a"}\n')
    write(claude / "projects" / "-p" / "bbbb-2.jsonl", b'{"s":"b"}\n')
    write(claude / "projects" / "-p" / "aaaa-1" / "subagents" / "agent-x.jsonl", b'{"s":"x"}\n')
    write(oc / "storage" / "session" / "g" / "ses_A.json", b'{"id":"ses_A"}')
    write(oc / "storage" / "part" / "msg_1" / "prt_1.json", b'{"sessionID":"ses_A"}')
    write(oc / "storage" / "part" / "msg_2" / "prt_2.json", b'{"sessionID":"ses_B"}')
    capture(log, roots_of(claude=claude, opencode=oc))
    out = tmp_path / "one"
    restore(log, out, session="aaaa-1")
    got = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert got == ["claude/projects/-p/aaaa-1.jsonl",
                   "claude/projects/-p/aaaa-1/subagents/agent-x.jsonl"]
    out2 = tmp_path / "two"
    restore(log, out2, session="ses_A", agent="opencode")
    got2 = sorted(str(p.relative_to(out2)) for p in out2.rglob("*") if p.is_file())
    assert got2 == ["opencode/storage/part/msg_1/prt_1.json",
                    "opencode/storage/session/g/ses_A.json"]


def test_fifo_and_unreadable_files_do_not_block(tmp_path: Path, log: EventLog) -> None:
    root = tmp_path / "claude"
    good = write(root / "projects" / "-p" / "ok.jsonl", b'{"ok":1}\n')
    os.mkfifo(root / "projects" / "-p" / "pipe.jsonl")
    write(root / "projects" / "-p" / "locked.jsonl", b'{"x":1}\n')
    real_open = capture_files.open_ro

    def denied(path: str) -> int:  # as chmod 000 for a non-root user (CI runs as root)
        if path.endswith("locked.jsonl"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(capture_files, "open_ro", denied)
        st = capture(log, roots_of(claude=root))
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "claude" / "projects" / "-p" / "ok.jsonl").read_bytes() == good.read_bytes()
    assert st.files == 2  # the FIFO is never a source: skipped, with the reason
    assert [s for s in st.skipped if "pipe.jsonl" in s and "not a regular file" in s]
    assert [e for e in st.errors if "locked.jsonl" in e and "Permission denied" in e], st.errors


def test_runs_dir_logs_and_metadata(tmp_path: Path, log: EventLog) -> None:
    runs = tmp_path / "runs"
    lg = write(runs / "job-a.log", b"step 1\nstep 2\n")
    write(runs / "job-a.json", b'{"job":"a","status":"running"}')
    write(runs / "archive" / "job-0.log", b"old run\n")
    write(runs / "archive" / "job-0.json", b'{"job":"0"}')
    write(runs / "notes" / "x.log", b"ignored\n")
    capture(log, roots_of(runs=runs))
    append(lg, b"step 3\n")
    write(runs / "job-a.json", b'{"job":"a","status":"done"}')
    os.utime(runs / "job-a.json", ns=(10**18, 10**18))
    capture(log, roots_of(runs=runs))
    layouts = sorted(e.event.layout for e in log.iter_events() if isinstance(e.event, SourceSeen))
    assert layouts == ["runs.log", "runs.log", "runs.meta", "runs.meta"]
    out = tmp_path / "out"
    restore(log, out, agent="runs")
    assert (out / "runs" / "job-a.log").read_bytes() == b"step 1\nstep 2\nstep 3\n"
    assert (out / "runs" / "job-a.json").read_bytes() == b'{"job":"a","status":"done"}'
    assert (out / "runs" / "archive" / "job-0.log").read_bytes() == b"old run\n"
    assert not (out / "runs" / "notes").exists()


def test_failed_commit_commits_nothing_more(tmp_path: Path, log: EventLog) -> None:
    from eventlog import LogFull

    root = tmp_path / "claude"
    for i in range(5):
        write(root / "projects" / "-p" / f"s{i}.jsonl", b'{"i":%d}\n' % i * 2000)
    eng = Capturer(log, roots_of(claude=root), Options(settle_s=0, batch_events=3))
    real_append = log.append
    calls = {"n": 0}

    def failing(*args: object, **kw: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise LogFull("disk full (simulated)")
        return real_append(*args, **kw)  # type: ignore[arg-type]

    log.append = failing  # type: ignore[method-assign]
    with pytest.raises(LogFull):
        eng.run_once()
    log.append = real_append  # type: ignore[method-assign]
    assert calls["n"] == 2  # no commit after the failure (no stat cache either)
    capture(log, roots_of(claude=root))  # a new run resumes from the committed cursors
    out = tmp_path / "out"
    restore(log, out)
    for i in range(5):
        name = f"s{i}.jsonl"
        assert (out / "claude/projects/-p" / name).read_bytes() == (
            root / "projects/-p" / name).read_bytes()
    assert_contiguous(log)


def test_a_stale_engine_reloads_cursors_before_writing(tmp_path: Path, log: EventLog) -> None:
    """Engine B loaded its cursors before engine A (another process) captured; when the file
    has grown since, B must not re-read from its stale cursor (overlapping chunks)."""
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "s.jsonl", b'{"n":1}\n' * 100)
    b = Capturer(log, roots_of(claude=root), Options(settle_s=0))
    b._ensure_loaded()  # knows nothing yet
    capture(log, roots_of(claude=root))  # "process A"
    append(f, b'{"n":2}\n' * 100)
    b.run_once()
    assert_contiguous(log)
    assert b.stats.bytes == 800
    out = tmp_path / "out"
    restore(log, out)
    assert (out / "claude" / "projects" / "-p" / "s.jsonl").read_bytes() == f.read_bytes()


def test_a_root_named_twice_is_captured_once(tmp_path: Path) -> None:
    real = tmp_path / "claude"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    roots = resolve_roots(flags={"claude": f"{real},{tmp_path / 'link'},{real}"}, config={},
                          env={}, user_home=tmp_path)
    assert [str(r.path) for r in roots if r.agent == "claude"] == [str(real)]


def test_the_follow_build_is_asked_after_every_tick_however_fast_the_capture(
        tmp_path: Path, log: EventLog) -> None:
    # `capture` asks its follow build (cli.services.catchup.Follower) whether to start after
    # every tick, not at the 0.1 s progress cadence: a capture over before the first 0.1 s
    # was never asked, and built history.db after itself instead
    from cli.services.capture.run import _once

    root = tmp_path / "claude"
    for i in range(3):
        write(root / "projects" / "-p" / f"s{i}.jsonl", b'{"n":%d}\n' % i)
    eng = Capturer(log, roots_of(claude=root), Options(settle_s=0))
    asked: list[int] = []

    class Follower:
        def tick(self, engine: Capturer) -> None:
            asked.append(engine.stats.bytes)

    stats = _once(eng, progress=False, follower=Follower())
    assert stats.appended and asked and asked[-1] == stats.bytes


def _sessions(root: Path, files: int, lines: int) -> int:
    """Claude sessions of `lines` user prompts each; their bytes."""
    total = 0
    for i in range(files):
        body = b"".join(
            b'{"type":"user","sessionId":"s%d","uuid":"u%d-%d","timestamp":'
            b'"2026-01-01T00:00:00Z","message":{"role":"user","content":"prompt %d of'
            b' session %d about zanzibar"}}\n' % (i, i, n, n, i) for n in range(lines))
        write(root / "projects" / "-p" / f"s{i}.jsonl", body)
        total += len(body)
    return total


def test_the_follow_build_starts_once_the_files_found_hold_enough(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the follow build starts when the files discovery registered hold FOLLOW_BYTES, before
    # the capture has read them (its processes' start-ups then run beside the first reads),
    # and builds the whole log; a home holding less never starts one
    from cli.services import catchup
    from cli.services.config import Home
    from projections import db, query

    monkeypatch.setattr(catchup, "FOLLOW_BYTES", 64 << 10)
    root = tmp_path / "claude"
    size = _sessions(root, 4, 300)
    assert size > catchup.FOLLOW_BYTES
    home = Home(tmp_path / "home")
    follower = catchup.Follower(home)
    eng = Capturer(home.log(), roots_of(claude=root), Options(settle_s=0, read_max=4096))
    while follower.builder is None and not eng.done():
        eng.tick()
        follower.tick(eng)
    assert follower.builder is not None, "the follow build never started"
    assert eng.stats.bytes < catchup.FOLLOW_BYTES  # started before the reads reached it
    stats = eng.run_once(None, follower.tick)
    follower.finish()
    assert stats.bytes == size == follower.to_read(eng)
    con = db.connect(home.history_db, readonly=True)
    try:  # the swapped-in file holds every prompt captured
        assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == 4 * 300
    finally:
        con.close()
    assert len(query.search(home.history_db, "zanzibar", None, 50)["hits"]) == 50

    # the same home without its history.db and nothing new: no build beside the capture
    home.history_db.unlink()
    follower = catchup.Follower(home)
    eng = Capturer(home.log(), roots_of(claude=root), Options(settle_s=0))
    stats = eng.run_once(None, follower.tick)
    assert stats.bytes == 0 == follower.to_read(eng) and follower.builder is None

    small = Home(tmp_path / "small")
    few = tmp_path / "few"
    size = _sessions(few, 2, 20)
    follower = catchup.Follower(small)
    eng = Capturer(small.log(), roots_of(claude=few), Options(settle_s=0))
    stats = eng.run_once(None, follower.tick)
    assert stats.bytes == size == follower.to_read(eng) < catchup.FOLLOW_BYTES
    assert follower.builder is None and not small.history_db.exists()
