"""A rebuild whose full-text index is built inline makes its champion lists beside the
query-index sort (projections/bulk_tail.py): from the scratch index and a side file of the
rows' weights, into memory, then copied in. The rank tables equal those `rank.build` makes
on the finished file itself (real SQLite FTS5, several role weights, deep lists); the words
are the finished index's own; nothing is left beside the file; a failure stops the build."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eventlog.events import MessageSent, QuestionAsked
from eventlog.store import EventLog
from projections import bulk_tail, db, fts_bulk, rank, ranking
from projections.rank import champions
from projections.rebuild import rebuild
from tests.test_projections_support import listed
from tests.test_rank import WORDS
from tests.test_rank_scan import _tables, small_lists  # noqa: F401 (an autouse fixture)


def _log(path: Path, n: int = 60) -> EventLog:
    """Messages of three role weights (question 3.0, message 2.0, progress 1.5) sharing
    words, many with the same text (score ties)."""
    log = EventLog(path)
    events: list[Any] = []
    for i in range(n):
        body = " ".join(WORDS[: 1 + i % len(WORDS)] * (1 + i % 3)) + f" w{i % 7}"
        if i % 5 == 0:
            events.append(QuestionAsked(id=f"q{i}", sender="a", body=body, at=i))
        else:
            kind = "progress" if i % 3 else "message"
            events.append(MessageSent(id=f"m{i}", sender="a", to=["b"], kind=kind, at=i,
                                      body=body))
    log.append([(f"k{i}".encode(), ev) for i, ev in enumerate(events)])
    return log


def _spy_build(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The main file of each connection `rank.build` runs on ("" for in-memory)."""
    files: list[str] = []
    build = rank.build

    def spy(con: sqlite3.Connection, **kw: Any) -> int:
        files.append(str(con.execute("PRAGMA database_list").fetchone()[2]))
        return build(con, **kw)

    monkeypatch.setattr(rank, "build", spy)
    return files


@pytest.mark.parametrize("workers", [1, 2])
def test_lists_made_beside_the_sort_equal_those_of_the_finished_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    monkeypatch.setattr(fts_bulk, "MODE", "inline")
    monkeypatch.setattr("projections.rebuild.LIST_THREADS", workers)
    files = _spy_build(monkeypatch)
    home = tmp_path / "home"
    log = _log(home / "log")
    rebuild(home / "history.db", log)
    assert files == [""]  # made on the in-memory connection, not after on the file
    assert listed(home) == ["history.db", "history.db.g*", "history.db.lock", "log"]
    con = db.connect(home / "history.db")
    made = _tables(con)
    assert len(made["rank_terms"]) >= 3 and made["rank_deep"]
    assert {w for w, in con.execute(f"SELECT {ranking.WEIGHT_SQL} FROM document_rows d")} == {
        3.0, 2.0, 1.5}
    assert [t for t, *_ in made["rank_terms"]] == sorted(str(t) for t, in con.execute(
        "SELECT term FROM documents_fts_terms WHERE doc > ?", (champions.HOT_DF,)))
    schema = con.execute("SELECT type, name, tbl_name FROM sqlite_master ORDER BY name"
                         ).fetchall()
    rank.build(con)
    assert _tables(con) == made
    assert con.execute("SELECT type, name, tbl_name FROM sqlite_master ORDER BY name"
                       ).fetchall() == schema
    con.close()
    log.close()


def test_a_build_indexing_in_a_process_makes_the_same_lists_after_the_sort(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log(tmp_path / "log")
    monkeypatch.setattr(fts_bulk, "MODE", "inline")
    rebuild(tmp_path / "a.db", log)
    monkeypatch.setattr(fts_bulk, "MODE", "process")
    files = _spy_build(monkeypatch)
    rebuild(tmp_path / "b.db", log)
    assert files == [str(tmp_path / f"b.db.reindex-{os.getpid()}")]
    a, b = db.connect(tmp_path / "a.db"), db.connect(tmp_path / "b.db")
    assert _tables(a) == _tables(b)
    a.close()
    b.close()
    log.close()


@pytest.mark.parametrize("where", ["_weights", "build_apart", "copy_lists", "copy"])
def test_a_failure_in_the_tail_stops_the_build_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """An error on either side (the weights or the index copy on the sort's thread, the
    lists or their copy on the other) is raised by the rebuild; no file is swapped in and
    no side file is left."""
    monkeypatch.setattr(fts_bulk, "MODE", "inline")
    home = tmp_path / "home"
    log = _log(home / "log")

    def boom(*_: Any, **__: Any) -> None:
        raise sqlite3.OperationalError(f"boom in {where}")

    owner = {"copy": fts_bulk.BulkFeed, "build_apart": rank, "copy_lists": rank}
    monkeypatch.setattr(owner.get(where, bulk_tail), where, boom)
    with pytest.raises(sqlite3.OperationalError, match=f"boom in {where}"):
        rebuild(home / "history.db", log)
    assert listed(home) == ["history.db.lock", "log"]
    log.close()
