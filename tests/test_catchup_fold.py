"""The +1 catch-up commits once: a batch's documents are folded into the champion lists
inside the batch's own transaction (one journal, one set of syncs), and a fold that fails
is rolled back alone while the batch stays in (projections.catchup). Real LMDB log, real
SQLite FTS5."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eventlog.events import MessageSent
from projections import db
from projections.catchup import catch_up
from projections.rank import champions
from projections.rebuild import rebuild
from tests.test_projections_support import append, make_log


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(champions, "CHAMPIONS", 3)
    monkeypatch.setattr(champions, "HOT_DF", 4)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size


def _messages(start: int, n: int) -> list[MessageSent]:
    return [MessageSent(id=f"m{i}", sender="peer-a", to=["peer-b"], kind="message",
                        body=f"walrus otter note {i}" + " walrus" * (i % 3), at=1_000 + i)
            for i in range(start, start + n)]


def _count_commits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The COMMITs every connection `db.connect` makes from now on runs, as they run (the
    file's change counter does not count them: in WAL mode SQLite bumps it only when a
    commit rewrites page 1)."""
    seen: list[str] = []
    real = db.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        con = real(*args, **kwargs)
        con.set_trace_callback(
            lambda sql: seen.append(sql) if sql.lstrip().upper().startswith("COMMIT") else None)
        return con

    monkeypatch.setattr(db, "connect", connect)
    return seen


def _wm_and_last(path: Path) -> tuple[int, int, int]:
    con = db.connect(path, readonly=True)
    try:
        wm = int(con.execute("SELECT wm FROM rank_meta").fetchone()[0])
        last = int(con.execute("SELECT max(rowid) FROM documents").fetchone()[0])
        applied = db.read_checkpoint(con)
        assert applied is not None
        return wm, last, applied.last_seq
    finally:
        con.close()


def test_a_catch_up_applies_and_folds_in_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _messages(0, 30))
    rebuild(path, log)
    con = db.connect(path, readonly=True)
    assert champions.has_lists(con)
    con.close()
    commits = _count_commits(monkeypatch)
    append(log, _messages(30, 3), prefix="more")
    got = catch_up(path, log, count=False)
    assert got.events == 3 and got.documents == -1
    assert len(commits) == 1  # the fold rode along in the batch's transaction
    wm, last, seq = _wm_and_last(path)
    assert wm == last and seq == log.head().seq  # and still folded everything it applied
    append(log, _messages(33, 2), prefix="again")
    assert catch_up(path, log).documents == 35  # counted when asked (the default)


def test_a_failed_fold_is_rolled_back_alone_and_raised_after_the_batches_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _messages(0, 30))
    rebuild(path, log)
    wm0, _, _ = _wm_and_last(path)
    calls: list[int] = []

    def broken(con: sqlite3.Connection, **_: Any) -> bool:
        calls.append(1)
        con.execute("UPDATE rank_meta SET wm = -7 WHERE id = 1")  # half-done, then fails
        raise sqlite3.OperationalError("the fold broke")

    monkeypatch.setattr(champions, "refresh", broken)
    append(log, _messages(30, 5), prefix="more")
    with pytest.raises(sqlite3.OperationalError, match="the fold broke"):
        catch_up(path, log, batch=2)  # three batches
    wm, last, seq = _wm_and_last(path)
    assert seq == log.head().seq  # every batch applied and committed
    assert wm == wm0 < last  # the fold's own write rolled back: the lists are behind only
    assert calls == [1]  # no fold tried again in the later batches of this catch-up
    monkeypatch.undo()
    monkeypatch.setattr(champions, "CHAMPIONS", 3)
    monkeypatch.setattr(champions, "HOT_DF", 4)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    append(log, _messages(35, 1), prefix="later")
    catch_up(path, log)
    wm, last, _ = _wm_and_last(path)
    assert wm == last  # the next catch-up folds the ones left behind too
