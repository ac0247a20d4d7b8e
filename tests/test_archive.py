"""Auto-archive: dump then record, crash between the two, restore, schedule, rebuild."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli.services import archive_ops as ops
from cli.services.config import Home
from eventlog.events import SessionArchived, TurnsImported
from tests.archive_fixtures import DAY, T0, home_at, import_turns, rich_project, turn
from tests.conftest import ROOT, run_cli


def _events(home: Home, cls: type) -> list[object]:
    return [st.event for st in home.log().iter_events() if isinstance(st.event, cls)]


@pytest.fixture
def h(tmp_path: Path) -> Home:
    home = home_at(tmp_path / "h")
    import_turns(home, "proj-a", rich_project())  # s1 day 0, s2 day 1, s3 day 2
    return home


def test_archive_with_now_in_the_future(h: Home) -> None:
    res = ops.archive(h, now=T0 + 400 * DAY)
    assert res["archived"] == 3 and res["filesWritten"] == 3
    archived = _events(h, SessionArchived)
    assert len(archived) == 3
    for ev in archived:
        assert isinstance(ev, SessionArchived)
        path = h.archive_dir / ev.path
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == ev.sha256
        env = json.loads(data)
        assert env["projectId"] == "proj-a" and env["turnCount"] == ev.turns
        assert {t["sessionId"] for t in env["turns"]} == {ev.session}
        assert not list(path.parent.glob(".tmp-*"))
    # out of the hot projections, still in the log and reachable on request
    assert ops.history(h, "proj-a", {})["turns"] == []
    assert ops.search(h, "settings")["hits"] == []
    assert len(ops.history(h, "proj-a", {"include_archived": True})["turns"]) == 9
    assert ops.search(h, "settings", include_archived=True)["hits"][0]["archived"] is True
    assert len(_events(h, TurnsImported)) == 3
    # a second tick finds nothing to do
    assert ops.archive(h, now=T0 + 400 * DAY)["candidates"] == 0


def test_only_sessions_older_than_the_cutoff(h: Home) -> None:
    res = ops.archive(h, now=T0 + 30 * DAY + DAY // 2, after_days=30)
    assert [s["sessionId"] for s in res["sessions"]] == ["s1"]
    assert {t["sessionId"] for t in ops.history(h, "proj-a", {})["turns"]} == {"s2", "s3"}
    # a session whose turns are all archived is not "present": new turns come in hot
    import_turns(h, "proj-a", [turn("s1", 99, T0 + 40 * DAY, "user", "late turn")])
    assert [t["content"] for t in ops.history(h, "proj-a", {"session": "s1"})["turns"]] == [
        "late turn"]
    assert len(ops.history(h, "proj-a", {"session": "s1", "include_archived": True})["turns"]) \
        == 6


def test_restore_is_importing_the_archive_file(h: Home) -> None:
    ops.archive(h, now=T0 + 400 * DAY)
    before = ops.history(h, "proj-a", {"include_archived": True})["turns"]
    f = h.archive_dir / "proj-a" / "session-s2.json"
    res = ops.import_envelope(h, f.read_bytes(), apply=True)
    assert res["sessionsToInsert"] == 1 and res["turnsToInsert"] == 3
    hot = ops.history(h, "proj-a", {})["turns"]
    assert [t["sessionId"] for t in hot] == ["s2"] * 3
    after = ops.history(h, "proj-a", {"include_archived": True})["turns"]
    # the same documents came back (same ids, no duplicates), only their flag changed
    assert [(t["id"], t["content"]) for t in after] == [(t["id"], t["content"]) for t in before]
    # the next tick sees the same envelope (same hash): the restored session stays hot
    again = ops.archive(h, now=T0 + 401 * DAY)
    assert again["archived"] == 0 and again["filesReused"] == 1
    assert len(ops.history(h, "proj-a", {})["turns"]) == 3
    # restoring twice is a no-op
    assert ops.import_envelope(h, f.read_bytes(), apply=True)["sessionsToInsert"] == 0


def test_restore_into_a_fresh_home(h: Home, tmp_path: Path) -> None:
    ops.archive(h, now=T0 + 400 * DAY)
    fresh = home_at(tmp_path / "fresh")
    for f in sorted((h.archive_dir / "proj-a").glob("session-*.json")):
        ops.import_envelope(fresh, f.read_bytes(), apply=True)
    restored = ops.history(fresh, "proj-a", {})["turns"]
    original = ops.history(h, "proj-a", {"include_archived": True})["turns"]
    assert all(t.pop("archived") for t in original)
    assert not any(t.pop("archived") for t in restored)
    assert restored == original


def test_crash_between_dump_and_event_is_harmless(h: Home, tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from cli.services import archive_ops
        from cli.services.config import Home
        archive_ops.archive(Home(Path({str(h.root)!r})), now={T0 + 400 * DAY},
                            after_dump=lambda p: os._exit(9))
    """)
    h.log().close()
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                       timeout=60)
    assert r.returncode == 9, r.stderr
    home = Home(h.root)
    files = list((home.archive_dir / "proj-a").glob("*.json"))
    assert len(files) == 1  # the first dump is in place, and no event recorded it
    assert _events(home, SessionArchived) == []
    assert len(ops.history(home, "proj-a", {})["turns"]) == 9
    first_sha = hashlib.sha256(files[0].read_bytes()).hexdigest()
    res = ops.archive(home, now=T0 + 401 * DAY)
    assert res["archived"] == 3 and res["filesReused"] == 1 and res["filesWritten"] == 2
    by_path = {ev.path: ev for ev in _events(home, SessionArchived)}  # type: ignore[attr-defined]
    assert by_path[f"proj-a/{files[0].name}"].sha256 == first_sha
    assert ops.history(home, "proj-a", {})["turns"] == []


def test_changed_session_rewrites_a_leftover_file(h: Home) -> None:
    def boom(_: Path) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ops.archive(h, now=T0 + 400 * DAY, after_dump=boom)
    f = next((h.archive_dir / "proj-a").glob("*.json"))
    session = json.loads(f.read_bytes())["turns"][0]["sessionId"]
    # a leftover file that no longer matches the session is rewritten, never trusted
    f.write_bytes(f.read_bytes().replace(b"settings", b"SETTINGS"))
    res = ops.archive(h, now=T0 + 400 * DAY)
    assert res["filesReused"] == 0
    ev = next(e for e in _events(h, SessionArchived) if e.session == session)  # type: ignore[attr-defined]
    assert hashlib.sha256(f.read_bytes()).hexdigest() == ev.sha256  # type: ignore[attr-defined]


def test_the_24h_tick_of_capture_watch(h: Home) -> None:
    first = ops.archive_tick(h, now=T0 + 400 * DAY)
    assert first is not None and first["archived"] == 3
    assert ops.archive_tick(h, now=T0 + 400 * DAY + 3600_000) is None
    import_turns(h, "proj-b", [turn("n", 0, T0, "user", "old news")])
    later = ops.archive_tick(h, now=T0 + 401 * DAY + 1)
    assert later is not None and later["archived"] == 1


def test_rebuild_gives_the_same_rows_as_catch_up(h: Home, tmp_path: Path) -> None:
    from projections import db
    from projections.rebuild import rebuild

    ops.archive(h, now=T0 + 400 * DAY)
    ops.import_envelope(h, (h.archive_dir / "proj-a" / "session-s1.json").read_bytes(),
                        apply=True)
    import_turns(h, "proj-b", rich_project())
    live = ops.open_history(h)
    assert live is not None
    other = tmp_path / "rebuilt.db"
    rebuild(other, h.log())
    fresh = db.connect(other, readonly=True)
    q = ("SELECT id, kind, agent, at, project, session, role, tool, subagent, subagent_name,"
         " text, archived, ord, conversation FROM documents ORDER BY id")
    assert live.execute(q).fetchall() == fresh.execute(q).fetchall()
    live.close()
    fresh.close()


def test_cli_archive_and_audit(tmp_path: Path) -> None:
    home = tmp_path / "h"
    import_turns(home_at(home), "proj-a", rich_project())
    r = run_cli(home, "archive", "--now", "2027-01-01T00:00:00Z", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["archived"] == 3
    r = run_cli(home, "archive", "--now", "someday")
    assert r.returncode == 2 and b"now" in r.stderr
    r = run_cli(home, "import", str(home / "archive" / "proj-a" / "session-s1.json"))
    assert r.returncode == 0
    r = run_cli(home, "audit", "--json")
    assert r.returncode == 0, r.stderr
    section = json.loads(r.stdout)["archive"]
    assert section["sessions_archived_events"] == 3
    assert [o["op"] for o in section["archive_ticks"]] == ["archive.tick"]
    ops_seen = [o["op"] for o in section["imports"]]
    assert "import.applied" in ops_seen and "import.dry_run" in ops_seen
    # QA: an apply that skips every (present) session is not journalled as applied
    for _ in range(2):
        r = run_cli(home, "import", str(home / "archive" / "proj-a" / "session-s1.json"),
                    "--apply")
        assert r.returncode == 0
    again = [o["op"] for o in json.loads(run_cli(home, "audit", "--json").stdout)["archive"][
        "imports"]]
    # the first apply brings the archived session back; the second finds it present
    assert again[len(ops_seen):] == ["import.applied", "import.skipped"], again


def test_watch_ticker_runs_and_stops(h: Home) -> None:
    import threading
    import time

    stop = threading.Event()
    t = ops.start_archive_ticker(h, stop, every_s=0.05, first_after_s=0)
    assert t is not None
    deadline = time.monotonic() + 20
    while not (h.archive_dir / ".last-tick").exists() and time.monotonic() < deadline:
        stop.wait(0.05)
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert (h.archive_dir / ".last-tick").exists()
    (h.root / "config.json").write_text('{"archive": {"auto": false}}')
    assert ops.start_archive_ticker(Home(h.root), threading.Event()) is None
