"""A full capture that finds only a few files new or changed polls just those files.

`statcache.changed_files` walks and stats every file (as the no-change check does); when at
most `statcache.FEW` are new or changed and none vanished, `Capturer.run_once` captures
those alone (`readers.capture.capture_few`) and patches their stat cache entries.
These tests hold it equal to the full run (same events, cursors and stat caches) through
new, grown, torn and snapshot files, and check the fallback to the full run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import EventLog
from readers import capture as capture_one
from readers import cursor as cur
from readers import statcache
from readers.capture import unchanged_files
from tests.capture_helpers import append, capture, roots_of, write


def _state(log: EventLog) -> dict[bytes, bytes]:
    out = {k: v for k, v in log.iter_state(cur.CURSOR_PREFIX)}
    for k, v in log.iter_state(b""):
        if k.startswith(cur.statcache_key("")[:8]):
            out[k] = v
    return out


def _shape(raw: bytes) -> object:
    """A cursor or stat cache without what differs between two copies of the same files."""
    try:
        c = cur.decode_cursor(raw)
    except Exception:
        cache = cur.decode_statcache(raw)
        return sorted((rel, v if v in (cur.NEVER, cur.GONE) else v[0])
                      for rel, v in cache.items())
    return (c.source.split(":", 2)[2], c.layout, c.gen, c.offset, c.size, c.head, c.tail,
            c.blake3, c.backlog, c.missing, c.oversized)


def _events(log: EventLog) -> list[tuple[str, str]]:
    """Each event's type and fields, source ids without their root id (the roots differ)."""
    out = []
    for se in log.iter_events():
        name = type(se.event).__name__
        if name == "WriterStarted":
            continue
        fields = {k: getattr(se.event, k) for k in se.event.__struct_fields__}
        if isinstance(fields.get("source"), str):
            fields["source"] = fields["source"].split(":", 2)[2]
        if isinstance(fields.get("root"), str):
            fields["root"] = Path(fields["root"]).name
        for volatile in ("seen_at", "at", "mtime_ns", "mtime_ms"):  # times, not content
            fields.pop(volatile, None)
        out.append((name, repr(sorted(fields.items()))))
    return sorted(out)


def _few(found: statcache.Few | None) -> tuple[int, int, list[str]] | None:
    return None if found is None else (found.files, found.missing,
                                       [rel for _, rel in found.changed])


def _steps(root: Path) -> list[list[tuple[str, bytes, bool]]]:
    """Rounds of (relative path, bytes, append?) applied to the sources."""
    p = "projects/-p/"
    return [
        [(p + "a.jsonl", b'{"a":1}\n', False), (p + "b.jsonl", b'{"b":1}\n', False),
         (p + "s/tool-results/t1.txt", b"tool output\n", False)],
        [(p + "c.jsonl", b'{"c":1}\n{"c":', False), (p + "a.jsonl", b'{"a":2}\n', True)],
        [(p + "c.jsonl", b'2}\n', True), (p + "s/tool-results/t1.txt", b"changed\n", False),
         ("projects/-q/d.jsonl", b'{"d":1}\n', False)],
    ]


def _run(tmp_path: Path, name: str, few: int, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[EventLog, list[int]]:
    monkeypatch.setattr(statcache, "FEW", few)
    root = tmp_path / name / "claude"
    root.mkdir(parents=True)
    log = EventLog(tmp_path / name / "log")
    roots = roots_of(claude=root)
    pending = []
    for round_ in _steps(root):
        for rel, data, more in round_:
            if more:
                append(root / rel, data)
            else:
                write(root / rel, data)
        pending.append(capture(log, roots).pending)
    return log, pending


def test_few_changes_capture_what_a_full_run_captures(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = capture_one.capture_few
    monkeypatch.setattr(capture_one, "capture_few",
                        lambda log, roots, changed, opt, dirs: calls.append(len(changed))
                        or real(log, roots, changed, opt, dirs))
    few_log, few_pending = _run(tmp_path, "few", 32, monkeypatch)
    assert calls == [2, 3]  # the first run has no stat cache: a full run
    full_log, full_pending = _run(tmp_path, "full", 0, monkeypatch)
    assert calls == [2, 3]  # FEW = 0: every run is a full one
    assert few_pending == full_pending  # settle 0: a torn tail is taken at once by both
    assert _events(few_log) == _events(full_log)
    # the same cursors and stat caches (up to the root ids in the keys, and the inodes)
    few_state, full_state = _state(few_log), _state(full_log)
    assert len(few_state) == len(full_state) == 5 + 1
    assert sorted(map(repr, map(_shape, few_state.values()))) == sorted(
        map(repr, map(_shape, full_state.values())))
    root = tmp_path / "few" / "claude"
    assert unchanged_files(few_log, roots_of(claude=root)) == (5, 0)  # the cache is current


def test_a_vanished_file_or_many_changes_take_the_full_run(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    root.mkdir()
    log = EventLog(tmp_path / "log")
    roots = roots_of(claude=root)
    files = [write(root / "projects" / "-p" / f"f{i}.jsonl", b'{"x":1}\n') for i in range(4)]
    capture(log, roots)
    assert _few(statcache.changed_files(log, roots, 32)) == (4, 0, [])
    append(files[0], b'{"x":2}\n')
    found = statcache.changed_files(log, roots, 32)
    assert found is not None and [rel for _, rel in found.changed] == ["projects/-p/f0.jsonl"]
    assert statcache.changed_files(log, roots, 0) is None  # more than the limit
    files[1].unlink()
    assert statcache.changed_files(log, roots, 32) is None  # vanished: the full run says so
    st = capture(log, roots)
    assert st.missing == 1 and st.bytes == 8
    assert _few(statcache.changed_files(log, roots, 32)) == (3, 1, [])
