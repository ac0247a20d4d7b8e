"""Hostile source trees against capture: links out of a root, link loops, unreadable folders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog
from eventlog.events import ChunkCaptured, SourceSeen
from readers import discovery
from tests.capture_helpers import capture, roots_of, write

SESSION = b'{"type":"user","message":{"role":"user","content":"hello"}}\n'


@pytest.fixture
def log(tmp_path: Path) -> Iterator[EventLog]:
    lg = EventLog(tmp_path / "log")
    yield lg
    lg.close()


def _captured(log: EventLog) -> dict[str, bytes]:
    paths: dict[str, str] = {}
    data: dict[str, bytes] = {}
    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, SourceSeen):
            paths[ev.source] = ev.path
        elif isinstance(ev, ChunkCaptured):
            data[paths[ev.source]] = data.get(paths[ev.source], b"") + ev.data
    return data


def test_links_out_of_a_root_are_not_followed(log: EventLog, tmp_path: Path) -> None:
    secret_dir = tmp_path / "etc"
    secret = write(secret_dir / "passwd", b"root:x:0:0:SECRET\n")
    write(secret_dir / "s.jsonl", b"SECRET\n")
    root = tmp_path / "claude"
    write(root / "projects" / "-p" / "ok.jsonl", SESSION)
    os.symlink(secret, root / "projects" / "-p" / "leak.jsonl")  # a file link out
    os.symlink(secret_dir, root / "projects" / "-out")  # a folder link out
    stats = capture(log, roots_of(claude=root))
    got = _captured(log)
    assert list(got) == ["projects/-p/ok.jsonl"]
    assert all(b"SECRET" not in v for v in got.values())
    assert any("leak.jsonl" in s and "not followed" in s for s in stats.skipped)
    assert any(s.startswith(str(root / "projects" / "-out")) for s in stats.skipped)
    assert stats.to_dict()["skipped"] == stats.skipped


def test_a_looping_link_hides_nothing(log: EventLog, tmp_path: Path) -> None:
    root = tmp_path / "claude"
    write(root / "projects" / "-p" / "a.jsonl", SESSION)
    write(root / "projects" / "-q" / "b.jsonl", SESSION)
    os.symlink("self", root / "projects" / "self")  # ELOOP when followed
    os.symlink(".", root / "projects" / "-p" / "dot")  # a loop inside the root
    stats = capture(log, roots_of(claude=root))
    assert sorted(_captured(log)) == ["projects/-p/a.jsonl", "projects/-q/b.jsonl"]
    assert any("projects/self" in s for s in stats.skipped), stats.skipped
    assert stats.errors == []


def test_a_file_replaced_by_a_link_is_not_read_through(log: EventLog, tmp_path: Path) -> None:
    root = tmp_path / "claude"
    f = write(root / "projects" / "-p" / "a.jsonl", SESSION)
    capture(log, roots_of(claude=root))
    secret = write(tmp_path / "secret", SESSION + b"SECRET\n")
    f.unlink()
    os.symlink(secret, f)
    capture(log, roots_of(claude=root))
    assert all(b"SECRET" not in v for v in _captured(log).values())


def test_unreadable_folder_is_reported_like_an_unreadable_file(
    log: EventLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chmod 000 does not stop root (CI), so the PermissionError is simulated."""
    root = tmp_path / "claude"
    write(root / "projects" / "-locked" / "a.jsonl", SESSION)
    write(root / "projects" / "-open" / "b.jsonl", SESSION)
    locked = str(root / "projects" / "-locked")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    stats = capture(log, roots_of(claude=root))
    assert list(_captured(log)) == ["projects/-open/b.jsonl"]
    assert stats.errors == [f"{locked}: cannot list folder: Permission denied"]
    again = capture(log, roots_of(claude=root))  # not hidden by the no-change fast path
    assert again.errors == stats.errors


def test_capture_cli_reports_skips(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    root = tmp_path / "claude"
    write(root / "projects" / "-p" / "ok.jsonl", SESSION)
    os.symlink("self", root / "projects" / "self")
    out = run_cli(tmp_path / "home", "capture", "--claude-dir", str(root), "--codex-dir",
                  str(tmp_path / "none"), "--opencode-dir", str(tmp_path / "none"),
                  "--runs-dir", str(tmp_path / "none"))
    assert out.returncode == 0, out.stderr
    assert b"captured 1 files" in out.stdout
    assert b"skipped: " in out.stderr and b"projects/self" in out.stderr


def test_a_fifo_or_socket_under_a_root_is_skipped_not_a_source(
    log: EventLog, tmp_path: Path
) -> None:
    """Never read (O_NOFOLLOW, O_NONBLOCK), so never recorded: it would stay pending forever
    and come back from restore as an empty file."""
    import socket

    root = tmp_path / "claude"
    write(root / "projects" / "-p" / "ok.jsonl", SESSION)
    os.mkfifo(root / "projects" / "-p" / "fifo.jsonl")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "projects" / "-p" / "sock.jsonl"))
    try:
        stats = capture(log, roots_of(claude=root))
    finally:
        sock.close()
    assert list(_captured(log)) == ["projects/-p/ok.jsonl"]
    seen = [se.event.path for se in log.iter_events() if isinstance(se.event, SourceSeen)]
    assert seen == ["projects/-p/ok.jsonl"]
    assert stats.pending == 0 and stats.files == 1
    for name in ("fifo.jsonl", "sock.jsonl"):
        assert any(name in s and "not a regular file" in s for s in stats.skipped), stats.skipped
