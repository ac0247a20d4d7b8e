"""Champion-list upkeep stays off the +1 path: every catch-up folds the documents it
applied into the lists (a few at a time, never a thousand at once) and makes no list; the
wanted lists a rebuild left are made by `make_lists` in bounded steps, which the capture
loop runs while idle (projections.rank, projections.catchup, cli.services.capture.loop). Real LMDB
log, real SQLite FTS5; every wait polls for its condition with a deadline."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from eventlog.events import MessageSent
from projections import db
from projections.catchup import catch_up, make_lists
from projections.rank import champions
from projections.rebuild import rebuild
from tests.test_projections_support import append, claude_line, make_log

DEADLINE_S = 60.0


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(champions, "CHAMPIONS", 3)
    monkeypatch.setattr(champions, "HOT_DF", 4)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    monkeypatch.setattr(champions, "BUILD_BUDGET", 0)  # a rebuild makes one list; the rest wait


def _messages(start: int, n: int, words: str) -> list[MessageSent]:
    return [MessageSent(id=f"m{i}", sender="peer-a", to=["peer-b"], kind="message",
                        body=f"{words} note {i}" + " walrus" * (i % 3), at=1_000 + i)
            for i in range(start, start + n)]


def _state(path: Path) -> tuple[int, int, int, int]:
    """(watermark, newest rowid, lists made, lists wanted)."""
    con = db.connect(path)
    try:
        wm = int(con.execute("SELECT wm FROM rank_meta").fetchone()[0])
        last = int(con.execute("SELECT max(rowid) FROM documents").fetchone()[0])
        made, wanted = con.execute("SELECT count(tau), count(*) - count(tau)"
                                   " FROM rank_terms").fetchone()
        return wm, last, int(made), int(wanted)
    finally:
        con.close()


def test_catch_up_folds_what_it_applied_and_leaves_list_making_to_make_lists(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _messages(0, 30, "walrus otter"))
    rebuild(path, log)
    wm, last, made, wanted = _state(path)
    assert wm == last and made == 1 and wanted >= 2  # 'walrus', 'otter', 'note': common

    append(log, _messages(30, 3, "walrus otter"), prefix="more")
    catch_up(path, log)
    wm, last, *lists = _state(path)
    assert wm == last  # three new documents folded at once (REFRESH_AT is 1,000)
    assert lists == [made, wanted]  # and no list made on the catch-up path

    assert make_lists(path, steps=1) == wanted  # one step: a few hundred matches ranked
    assert _state(path)[2:] == (made + wanted, 0)
    assert make_lists(path, steps=1) == 0


def test_a_small_home_s_rebuild_makes_no_list_and_leaves_them_wanted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home of at most SMALL_HOME x HOT_DF documents (here 10 x 4) makes no list at its
    rebuild (issue 32: a small home does not pay for machinery built for a big one): its
    common words stay wanted, upkeep makes them, and the answers never change."""
    from projections.query import search

    monkeypatch.setattr("projections.rank.SMALL_HOME", 10)
    monkeypatch.setattr(champions, "BUILD_BUDGET", 3)
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _messages(0, 30, "walrus otter"))
    rebuild(path, log)
    _, _, made, wanted = _state(path)
    assert made == 0 and wanted >= 2
    before = search(path, "walrus", limit=5)["hits"]
    assert make_lists(path) == wanted
    assert _state(path)[2:] == (wanted, 0)
    assert search(path, "walrus", limit=5)["hits"] == before
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # a bigger home: lists at build
    rebuild(path, log)
    assert _state(path)[2] > 0


def test_the_capture_loop_makes_the_wanted_lists_while_idle(tmp_path: Path) -> None:
    from cli.services.capture.loop import CaptureLoop
    from cli.services.config import Home
    from tests.capture_helpers import roots_of

    home = Home(tmp_path / "home")
    root = tmp_path / "claude"
    f = root / "projects" / "-p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"".join(claude_line(f"u{i}", "user", f"walrus otter {i}" + " otter" * (i % 3))
                           for i in range(20)))

    def lists() -> tuple[int, int] | None:
        if not home.history_db.exists():
            return None
        try:
            return _state(home.history_db)[2:]
        except (sqlite3.OperationalError, TypeError):  # not built yet
            return None

    opts: dict[str, Any] = {"roots": roots_of(claude=root), "settle_s": 0.0, "events": False,
                            "poll_s": 0.1}
    loop = CaptureLoop(home, **opts).start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while (got := lists()) is None or got[0] < 2 or got[1]:
            assert time.monotonic() < deadline, f"lists never made: {lists()}"
            time.sleep(0.05)
    finally:
        loop.stop()


def test_cross_columns_are_made_after_the_lists_never_by_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projections.rank import deep

    monkeypatch.setattr(champions, "BUILD_BUDGET", 100)  # the rebuild makes every list
    monkeypatch.setattr(deep, "DEEP_SHARE", 1)
    monkeypatch.setattr(deep, "DEEP_MAX", 8)
    path = tmp_path / "history.db"
    rebuild(path, make_log(tmp_path / "log", _messages(0, 30, "walrus otter")))
    con = db.connect(path)
    try:
        assert _state(path)[3] == 0  # no list waits
        wanted = deep.cross_wanted(con, champions.CHAMPIONS)
        assert {"walrus", "otter", "note"} <= set(wanted)  # the rebuild made no cross column
        assert not deep.crossed(con, ["walrus", "otter"])
        assert make_lists(path, steps=1) == 1  # one word's columns a step
        assert len(deep.cross_wanted(con, champions.CHAMPIONS)) == len(wanted) - 1
        assert make_lists(path) == len(wanted) - 1
        assert deep.cross_wanted(con, champions.CHAMPIONS) == []
        assert deep.crossed(con, ["walrus", "otter", "note"])
        assert make_lists(path) == 0
    finally:
        con.close()
