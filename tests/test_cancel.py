"""A read's stop button (projections/cancel.py): `Cancel.cancel()` from another thread stops
the statement running on the watched connection (SQLite's interrupt) and any begun after it
(the progress handler), the connections the read opened for its ranking threads too; a
search stopped so raises `Interrupted` (never `ProjectionDamaged`) and leaves its connection
as it found it. Deterministic: the slow statements are endless ones that report they began
(a SQL function), never sleeps; the joins' timeouts are fail-safes only."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from projections import cancel as cancel_mod
from projections import db, query
from projections.cancel import Cancel
from projections.errors import Interrupted
from projections.rank import split
from projections.rows import put_document

ENDLESS = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE running(x))"
           " SELECT count(*) FROM c")


def _file(path: Path, n: int = 60) -> Path:
    con = db.connect(path)
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for i in range(n):
        put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent": "claude",
                           "at": 1000 + i, "session": f"s{i % 3}", "role": "user",
                           "text": f"alpha beta {'gamma' if i % 2 else 'delta'} {i}"})
    con.execute("COMMIT")
    con.close()
    return path


def _endless(con: sqlite3.Connection) -> tuple[threading.Event, list[BaseException]]:
    """Run a statement that never ends on its own (it gives up after 60 s: a fail-safe) on
    `con` in a thread; returns (began, what it raised)."""
    began = threading.Event()
    give_up = time.monotonic() + 60
    raised: list[BaseException] = []

    def running(_: int) -> int:
        began.set()
        return int(time.monotonic() < give_up)

    con.create_function("running", 1, running)

    def work() -> None:
        try:
            con.execute(ENDLESS).fetchone()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    _endless.threads.append(thread)  # type: ignore[attr-defined]
    return began, raised


_endless.threads = []  # type: ignore[attr-defined]


def _join() -> None:
    for thread in _endless.threads:  # type: ignore[attr-defined]
        thread.join(timeout=60)
        assert not thread.is_alive()
    _endless.threads.clear()  # type: ignore[attr-defined]


def test_cancel_stops_the_running_statement(tmp_path: Path) -> None:
    con = db.connect(_file(tmp_path / "h.db"), readonly=True)
    stop = Cancel()
    with stop.watching(con):
        began, raised = _endless(con)
        assert began.wait(60)
        stop.cancel()
        _join()
    assert len(raised) == 1 and cancel_mod.interrupted(raised[0])
    assert con.execute("SELECT count(*) FROM document_rows").fetchone()[0] == 60  # usable


def test_a_cancel_between_statements_stops_the_next(tmp_path: Path) -> None:
    """No statement runs when it comes (SQLite's interrupt would be lost): the progress
    handler stops the next statement of the read."""
    con = db.connect(_file(tmp_path / "h.db"), readonly=True)
    stop = Cancel()
    with stop.watching(con):
        stop.cancel()
        con.create_function("running", 1, lambda _: 1)
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            con.execute(ENDLESS).fetchone()
    # cancelled: every later read it would watch too
    with pytest.raises(Interrupted), stop.watching(con):
        pass


def test_a_cancel_never_reaches_the_next_read(tmp_path: Path) -> None:
    con = db.connect(_file(tmp_path / "h.db"), readonly=True)
    stop = Cancel()
    with stop.watching(con):
        pass
    stop.cancel()  # too late for its read: the connection is another read's now
    with Cancel().watching(con):
        con.create_function("running", 1, lambda x: int(x < 100_000))
        assert con.execute(ENDLESS).fetchone()[0] == 100_000


def test_the_readers_a_read_opens_are_stopped_with_it(tmp_path: Path) -> None:
    """A split ranking's thread reads on a connection of its own (`open_reader`): the
    read's Cancel stops it too, whether it came before the reader was opened or after."""
    path = _file(tmp_path / "h.db")
    con = db.connect(path, readonly=True)
    assert isinstance(con, db.Connection)
    stop = Cancel()
    with stop.watching(con):
        child = con.open_reader(path)
        began, raised = _endless(child)
        assert began.wait(60)
        stop.cancel()
        _join()
        assert len(raised) == 1 and cancel_mod.interrupted(raised[0])
        late = con.open_reader(path)  # opened after the cancel: stopped at once
        late.create_function("running", 1, lambda _: 1)
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            late.execute(ENDLESS).fetchone()
        child.close()
        late.close()
    assert con.cancel is None
    plain = con.open_reader(path)  # no read watching: a reader of its own
    plain.create_function("running", 1, lambda x: int(x < 10_000))
    stop.cancel()
    assert plain.execute(ENDLESS).fetchone()[0] == 10_000
    plain.close()


def test_a_search_cancelled_on_its_ranking_threads_raises_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search on a split ranking (forced on a small file), cancelled by the first of its
    threads as it opens its reader: `Interrupted`, not `ProjectionDamaged`; its connection
    holds no transaction afterwards and answers the next search as before."""
    path = _file(tmp_path / "h.db", 400)
    monkeypatch.setattr(split, "PARALLEL_AT", 0)
    monkeypatch.setattr(split, "THREADS", 3)
    monkeypatch.setattr(cancel_mod, "CHECK_EVERY", 1)  # every statement looks at once
    want = query.search(path, "alpha beta", None, 10, engine="fts5")
    assert len(want["hits"]) == 10
    stop = Cancel()
    opened = split._reader

    def reader(con: sqlite3.Connection, p: Path) -> sqlite3.Connection:
        stop.cancel()  # a newer keystroke, while the threads rank
        return opened(con, p)

    monkeypatch.setattr(split, "_reader", reader)
    with pytest.raises(Interrupted):
        query.search(path, "alpha beta", None, 10, engine="fts5", cancel=stop)
    con = query._open(path)
    assert con is not None and not con.in_transaction and con.cancel is None
    monkeypatch.setattr(split, "_reader", opened)
    again = query.search(path, "alpha beta", None, 10, engine="fts5", cancel=Cancel())
    assert [h["id"] for h in again["hits"]] == [h["id"] for h in want["hits"]]
    query.close_connections()


def test_a_search_cancelled_before_it_began_raises_interrupted(tmp_path: Path) -> None:
    path = _file(tmp_path / "h.db")
    stop = Cancel()
    stop.cancel()
    with pytest.raises(Interrupted):
        query.search(path, "alpha", None, 5, cancel=stop)
    assert query.search(path, "alpha", None, 5)["hits"]  # the connection answers on
    query.close_connections()


def test_interrupted_is_not_damage() -> None:
    exc: Any = sqlite3.OperationalError("interrupted")
    assert cancel_mod.interrupted(exc)
    assert not cancel_mod.interrupted(sqlite3.OperationalError("database is locked"))
