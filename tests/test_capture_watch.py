"""`readers.capture_watch`: a folder's event names the files already in it.

A file written right after its folder was made (Claude Code's first session in a new
project) can come before the watcher watches the new folder; its own event is then lost,
and without this it waited for the next complete pass (30 s). Waits poll with a deadline.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from readers.capture_watch import FileEvents, files_under, sources_for
from readers.roots import Root

DEADLINE_S = 30.0


def _root(tmp_path: Path) -> Root:
    base = tmp_path / "claude"
    (base / "projects").mkdir(parents=True)
    return Root("claude", base, "flag", True)


def test_a_folder_event_names_its_files(tmp_path: Path) -> None:
    root = _root(tmp_path)
    folder = root.path / "projects" / "-new-project"
    (folder / "s1" / "subagents").mkdir(parents=True)
    (folder / "s1.jsonl").write_bytes(b"{}\n")
    (folder / "s1" / "subagents" / "agent-a.jsonl").write_bytes(b"{}\n")
    events = FileEvents([root], threading.Event())
    events._paths.add(str(folder))  # what the watcher yields for the new folder alone
    taken = events.take()
    assert {rel for _, rel, _ in sources_for([root], taken)} == {
        "projects/-new-project/s1.jsonl", "projects/-new-project/s1/subagents/agent-a.jsonl"}
    assert events.take() == set()


def test_files_under_is_bounded(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "a" / "b" / "c" / "d").mkdir(parents=True)
    for i in range(10):
        (top / f"f{i}").write_bytes(b"")
    (top / "a" / "b" / "c" / "d" / "deep").write_bytes(b"")  # 4 folders down: not named
    (top / "a" / "b" / "c" / "shallow").write_bytes(b"")  # 3 folders down: named
    assert len(files_under(str(top), limit=4)) == 4
    names = {Path(p).name for p in files_under(str(top))}
    assert "shallow" in names and "deep" not in names and len(names) == 11
    assert files_under(str(tmp_path / "missing")) == []


def _until_watching(events: FileEvents, wake: threading.Event, folder: Path) -> None:
    """Wait until the watcher reports a write in `folder` (it is set up: a write before
    would only be found later), rewriting a probe file until it does, with a deadline."""
    probe = folder / "probe.txt"
    deadline = time.monotonic() + DEADLINE_S
    n = 0
    while time.monotonic() < deadline:
        n += 1
        probe.write_bytes(b"%d" % n)
        wake.wait(0.2)
        wake.clear()
        if str(probe) in events.take():
            return
    raise AssertionError(f"the watcher reported no write in {folder} in {DEADLINE_S} s")


def test_a_session_written_into_a_new_folder_is_named(tmp_path: Path) -> None:
    root = _root(tmp_path)
    wake = threading.Event()
    events = FileEvents([root], wake).start()
    try:
        _until_watching(events, wake, root.path / "projects")
        folder = root.path / "projects" / "-fresh"
        folder.mkdir()
        (folder / "s.jsonl").write_bytes(b"{}\n")  # at once, as an agent does
        seen: set[str] = set()
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and "projects/-fresh/s.jsonl" not in seen:
            wake.wait(0.5)
            wake.clear()
            seen |= {rel for _, rel, _ in sources_for([root], events.take())}
        assert "projects/-fresh/s.jsonl" in seen
    finally:
        events.close()
