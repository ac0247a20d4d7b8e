"""Capture as whole processes: idempotence, concurrency, kill -9, memory, watch mode."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from eventlog import EventLog
from readers.restore import restore
from tests.capture_helpers import append, assert_contiguous, chunk_map, write
from tests.conftest import ROOT, run_cli


def _tree(base: Path, files: int, lines: int, *, noise: bool = False) -> Path:
    root = base / "claude"
    for i in range(files):
        body = b"".join(
            b'{"type":"user","i":%d,"t":"%s"}\n'
            % (j, base64.b64encode(os.urandom(60)) if noise else b"w" * 80)
            for j in range(lines)
        )
        write(root / "projects" / f"-p{i % 5}" / f"s{i:04d}.jsonl", body)
    return root


def chunk_map_of(home: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    log = EventLog(home / "log", readonly=True)
    try:
        return chunk_map(log)
    finally:
        log.close()


def captured_bytes(home: Path) -> int:
    """Bytes of transcript chunks in the home's log so far (0 before the log exists)."""
    if not (home / "log" / "data.mdb").exists():
        return 0
    return sum(size for spans in chunk_map_of(home).values() for _, size in spans)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    """Poll for a condition; a deadline, not a duration, so a loaded machine only waits longer."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _cap(home: Path, root: Path, *extra: str) -> dict[str, object]:
    out = run_cli(home, "capture", "--claude-dir", str(root), "--codex-dir", str(root / "nx"),
                  "--opencode-dir", str(root / "ny"), "--runs-dir", str(root / "nz"), "--json",
                  *extra)
    assert out.returncode == 0, out.stderr.decode()
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_recapture_appends_nothing(tmp_path: Path, home: Path) -> None:
    root = _tree(tmp_path, 30, 20)
    first = _cap(home, root)
    assert first["files"] == 30 and first["appended"] == 60 and first["duplicates"] == 0
    again = _cap(home, root)
    assert again["appended"] == 0 and again["bytes"] == 0
    assert str(root / "nx") in again["missing_roots"]  # type: ignore[operator]
    append(root / "projects" / "-p0" / "s0000.jsonl", b'{"more":1}\n')
    third = _cap(home, root)
    assert third["appended"] == 1 and third["bytes"] == 11


def test_two_concurrent_captures_store_each_byte_once(tmp_path: Path, home: Path) -> None:
    root = _tree(tmp_path, 120, 1200, noise=True)  # ~15 MB: long enough to overlap
    cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--json",
           "--no-index", "--claude-dir", str(root)]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    results = [json.loads(o[0]) for o in outs]
    chunks = sum(len(v) for v in chunk_map_of(home).values())
    seen_events = 120  # one SourceSeen per file
    assert sum(r["appended"] for r in results) == chunks + seen_events, results
    log = EventLog(home / "log", readonly=True)
    try:
        assert_contiguous(log)
        sizes = {k[0]: sum(s for _, s in v) for k, v in chunk_map(log).items()}
        assert len(sizes) == 120
        for source, total in sizes.items():
            rel = source.split(":", 2)[2]
            assert total == (root / rel).stat().st_size
    finally:
        log.close()


@pytest.mark.slow
def test_kill_9_mid_capture_then_resume(tmp_path: Path, home: Path) -> None:
    root = _tree(tmp_path, 200, 1500, noise=True)  # ~30 MB, incompressible
    cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--json",
           "--no-index", "--claude-dir", str(root)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    data = home / "log" / "data.mdb"
    while time.monotonic() < deadline and (not data.exists() or data.stat().st_size < 4_000_000):
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL
    assert run_cli(home, "verify").returncode == 0
    res = _cap(home, root, "--no-index")
    assert res["pending"] == 0
    log = EventLog(home / "log", readonly=True)
    try:
        assert_contiguous(log)
        restore(log, tmp_path / "out")
    finally:
        log.close()
    for f in (root / "projects").rglob("*.jsonl"):
        restored = tmp_path / "out" / "claude" / f.relative_to(root)
        assert restored.read_bytes() == f.read_bytes()


def test_50mb_single_line_bounded_memory(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "claude"
    f = root / "projects" / "-p" / "huge.jsonl"
    f.parent.mkdir(parents=True)
    with open(f, "wb") as fh:
        fh.write(b'{"type":"user","image":"')
        block = base64.b64encode(os.urandom(3 * 1024 * 1024 // 4 * 4))
        for _ in range(16):
            fh.write(block)
        fh.write(b'"}\n')
    assert f.stat().st_size > 50_000_000
    # VmHWM, not ru_maxrss: Linux carries a parent's peak RSS into ru_maxrss across exec
    probe = (
        "import sys; from cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0]\n"
        "print(hwm.split()[1], file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, "--home", str(home), "capture", "--json", "--no-index",
         "--claude-dir", str(root)],
        cwd=ROOT, capture_output=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode()
    rss_kb = int(out.stderr.decode().strip().splitlines()[-1])
    assert json.loads(out.stdout)["bytes"] == f.stat().st_size
    assert rss_kb < 100 * 1024, f"peak RSS {rss_kb} KiB for a 50 MB line: {out.stdout!r}"
    log = EventLog(home / "log", readonly=True)
    try:
        assert_contiguous(log)
        (_source_gen, spans), = chunk_map(log).items()
        assert sum(s for _, s in spans) == f.stat().st_size
    finally:
        log.close()


def test_watch_mode_captures_and_stops_on_sigterm(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "live.jsonl", b'{"n":1}\n')
    cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--watch",
           "--json", "--claude-dir", str(root), "--settle", "0"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: captured_bytes(home) == 8, "the first line")
        append(f, b'{"n":2}\n')
        wait_until(lambda: captured_bytes(home) == 16, "the appended line")
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err.decode()
    summary = json.loads(out)
    assert summary["bytes"] == 16
    log = EventLog(home / "log", readonly=True)
    try:
        restore(log, tmp_path / "out")
    finally:
        log.close()
    assert (tmp_path / "out" / "claude" / "projects" / "-p" / "live.jsonl").read_bytes() == (
        b'{"n":1}\n{"n":2}\n'
    )


def test_watch_mode_shows_it_is_alive_without_transcript_text(tmp_path: Path,
                                                               home: Path) -> None:
    """QA: `capture --watch` printed nothing at all until it was stopped."""
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "live.jsonl", b'{"secret":"okapi"}\n')
    cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--watch",
           "--no-index", "--claude-dir", str(root), "--codex-dir", str(tmp_path / "nx"),
           "--opencode-dir", str(tmp_path / "ny"), "--settle", "0"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = len(b'{"secret":"okapi"}\n')
    try:
        wait_until(lambda: captured_bytes(home) == first, "the first line")
        append(f, b'{"secret":"okapi2"}\n')
        wait_until(lambda: captured_bytes(home) > first, "the appended line")
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err.decode()
    text = err.decode()
    assert f"watching claude {root}" in text and "Ctrl-C" in text
    assert text.count(" events, ") >= 2  # the first sweep, then the appended line
    assert "okapi" not in text and "okapi" not in out.decode()
    assert b"captured 1 files" in out


def test_watch_mode_stops_cleanly_on_sigint(tmp_path: Path, home: Path) -> None:
    root = _tree(tmp_path, 40, 200)
    cmd = [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--watch",
           "--json", "--no-index", "--claude-dir", str(root)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: captured_bytes(home) > 0, "the first commit")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err.decode()
    summary = json.loads(out)
    assert summary["appended"] >= 1
    assert run_cli(home, "verify").returncode == 0


def test_watch_takes_its_signals_on_a_thread_that_never_runs_the_loop(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SIGINT handler used to stop the loop itself, on the main thread, which also ran
    the loop: landing inside the loop's own `Event.wait`, its `Event.set` waited forever for
    the event's lock (a rare hang of the test above). Now the loop runs on a worker and the
    handler only notes the signal; the handlers are put back afterwards."""
    import threading

    from cli.commands import capture as command
    from cli.services.capture.loop import CaptureLoop
    from cli.services.capture.ops import capture_roots
    from cli.services.config import Home

    root = _tree(tmp_path, 3, 20)
    flags: dict[str, str | None] = dict.fromkeys(command._ROOT_FLAGS)
    flags.update(claude=str(root), project_roots=None)
    roots = capture_roots(Home(home), flags)
    ran: list[tuple[CaptureLoop, threading.Thread]] = []
    real_run = CaptureLoop.run

    def run(self: CaptureLoop) -> object:
        ran.append((self, threading.current_thread()))
        return real_run(self)

    monkeypatch.setattr(CaptureLoop, "run", run)

    def interrupt() -> None:
        wait_until(lambda: bool(ran) and ran[0][0].engine is not None
                   and ran[0][0].engine.stats.appended > 0, "the first commit")
        os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    sender = threading.Thread(target=interrupt)
    sender.start()
    stats = command._watch(Home(home), False, 0.0, roots=roots, announce=False)
    sender.join()
    assert ran[0][1] is not threading.main_thread()
    assert stats.appended >= 1
    assert signal.getsignal(signal.SIGINT) is before


def test_roots_from_config_json(tmp_path: Path, home: Path) -> None:
    root = _tree(tmp_path, 3, 2)
    (home / "config.json").write_text(json.dumps(
        {"claude_dir": [str(root)], "codex_dir": str(tmp_path / "cx"),
         "opencode_dir": str(tmp_path / "oc"), "runs_dir": str(tmp_path / "runs")}))
    out = run_cli(home, "capture", "--json", "--no-index")
    assert out.returncode == 0, out.stderr.decode()
    res = json.loads(out.stdout)
    assert res["files"] == 3
    origins = {r["agent"]: r["origin"] for r in res["roots"]}
    configured = ("claude", "codex", "opencode", "runs")
    assert {a: origins[a] for a in configured} == dict.fromkeys(configured, "config")
    assert all(origins[a] in ("env", "default") for a in origins if a not in configured)
    want = {str(tmp_path / n) for n in ("cx", "oc", "runs")}
    others = {r["path"] for r in res["roots"] if r["agent"] not in configured
              and not r["exists"] and r["origin"] != "default"}  # e.g. $XDG_DATA_HOME/amp
    assert set(res["missing_roots"]) == want | others


def test_a_root_in_config_json_that_is_not_a_path_is_an_error(home: Path) -> None:
    """QA: {"claude_dir": 5} was taken as the relative path "5"."""
    (home / "config.json").write_text(json.dumps({"claude_dir": 5}))
    out = run_cli(home, "capture", "--json", "--no-index")
    assert out.returncode == 1 and b"claude_dir must be a path" in out.stderr
    assert not (home / "log").exists()


def test_progress_on_a_terminal_never_shows_a_none_total(tmp_path: Path, home: Path) -> None:
    """QA: on a terminal the progress line read "0/None files" until the first tick."""
    import pty

    root = _tree(tmp_path, 3, 2)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--claude-dir",
         str(root), "--codex-dir", str(root / "nx"), "--opencode-dir", str(root / "ny")],
        stdin=secondary, stdout=secondary, stderr=secondary, cwd=ROOT,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
    )
    os.close(secondary)
    out = b""
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    os.close(primary)
    assert proc.wait(timeout=60) == 0
    assert b"captured 3 files" in out and b"None" not in out
