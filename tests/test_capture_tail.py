"""An append-only file whose last line has no newline is captured whole in ONE run once it
has settled (a real Cursor transcript ends so; one run used to stop at the last newline)."""

from __future__ import annotations

from pathlib import Path

from eventlog import EventLog
from readers.restore import restore
from tests.capture_helpers import capture, roots_of, write


def test_settled_unterminated_tail_is_captured_in_the_same_run(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    data = b'{"type":"user","uuid":"u1"}\n{"type":"user","uuid":"u2"}'
    write(root / "projects" / "-p" / "11111111-2222-4333-8444-555555555555.jsonl", data)
    log = EventLog(tmp_path / "log")
    try:
        capture(log, roots_of(claude=root))
        restore(log, tmp_path / "out", agent="claude")
    finally:
        log.close()
    name = "11111111-2222-4333-8444-555555555555.jsonl"
    got = tmp_path / "out" / "claude" / "projects" / "-p" / name
    assert got.read_bytes() == data
