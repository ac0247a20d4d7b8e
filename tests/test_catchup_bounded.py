"""A search never waits for a catch-up's whole burst (issue 29): the catch-up commits in
bounded transactions (projections.catchup TXN_BYTES, TXN_JOURNAL_BYTES), none of which
takes the file's exclusive lock before its commit (the writer's page cache holds every page
it changes: db.WRITER_CACHE_KIB), and the rows are those of a rebuild. A reader that meets
a commit starts right after it (db.until_readable), and a commit that meets a reader starts
right after it (db.commit). Real LMDB log, real SQLite; nothing here is timed.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from eventlog.events import MessageSent
from projections import apply, catchup, db, fts_defer
from projections.catchup import catch_up
from projections.drift import digests
from projections.rebuild import build, rebuild
from tests.test_projections_support import append, make_log, plain_file


def _burst(start: int, n: int, seed: int = 29) -> list[MessageSent]:
    """Messages of ~2 KB of words that compress little: a burst of new documents."""
    rng = random.Random(seed + start)
    vocab = [f"w{rng.getrandbits(40):x}" for _ in range(5000)]
    return [MessageSent(id=f"m{i}", sender="peer-a", to=["peer-b"], kind="message",
                        body=" ".join(rng.choices(vocab, k=180)), at=1_000 + i)
            for i in range(start, start + n)]


def _read_now(path: Path) -> int:
    """The committed checkpoint, read by a connection that never waits for a lock (it fails
    with "database is locked" while a writer holds the exclusive lock)."""
    con = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        con.execute("PRAGMA query_only = 1")
        return int(con.execute("SELECT last_seq FROM checkpoint").fetchone()[0])
    finally:
        con.close()


def _digests(path: Path) -> dict[str, tuple[int, str]]:
    con = db.connect(path, readonly=True)
    try:
        return digests(con)
    finally:
        con.close()


def test_a_burst_commits_in_bounded_transactions_that_readers_read_between(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _burst(0, 100))
    rebuild(path, log)
    base = log.head().seq
    append(log, _burst(100, 1500), prefix="burst")  # ~3 MB of text: more than SQLite's
    # default 2 MiB page cache holds, so before issue 29 the one transaction spilled
    stored = sum(len(r.value) for r in log.read_raw(base + 1, 10_000))
    monkeypatch.setattr(catchup, "TXN_BYTES", 256 << 10)
    real_apply = apply.apply_records
    during: list[int] = []

    def apply_then_read(con: sqlite3.Connection, records: list[Any], table: Any
                        ) -> tuple[int, str]:
        """After each piece, mid-transaction: another connection reads without waiting, and
        sees the last commit, not the open transaction."""
        got = real_apply(con, records, table)
        during.append(_read_now(path))  # before issue 29: "database is locked" (a spill)
        return got

    monkeypatch.setattr(apply, "apply_records", apply_then_read)
    real_index = fts_defer.index_deferred

    def index_then_read(con: sqlite3.Connection) -> None:
        """After the transaction's full-text indexing, its largest write, before its commit."""
        real_index(con)
        during.append(_read_now(path))

    monkeypatch.setattr(fts_defer, "index_deferred", index_then_read)
    commits: list[tuple[int, int]] = []

    def after_commit(seq: int, head: int) -> None:
        commits.append((seq, _read_now(path)))  # between two transactions: the new checkpoint

    result = catch_up(path, log, progress=after_commit)
    assert result.last_seq == log.head().seq
    assert all(seq == read for seq, read in commits)
    assert len(commits) >= stored // ((256 << 10) + catchup.PIECE_BYTES + (4 << 10))
    assert len(commits) >= 4
    assert max(during) < log.head().seq and set(during) <= {base} | {s for s, _ in commits}
    assert len(during) > len(commits)  # several pieces a transaction, each read in between
    fresh = tmp_path / "fresh.db"
    build(fresh, log)
    assert _digests(path) == _digests(fresh)  # the rows of a rebuild
    log.close()


def test_a_transaction_ends_once_it_changed_about_txn_journal_bytes_of_pages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded by the pages it changes (their original content in the journal), not only by
    the events' bytes: each new document's id lands on a random leaf of the id index. On a
    plain file from before generations (rollback journal: a reader waits for a commit)."""
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _burst(0, 600))
    rebuild(path, log)
    plain_file(path)
    append(log, _burst(600, 400), prefix="burst")
    monkeypatch.setattr(catchup, "TXN_BYTES", 1 << 40)
    monkeypatch.setattr(catchup, "TXN_JOURNAL_BYTES", 48 << 10)
    seen: list[int] = []
    real_commit = db.commit

    def measured(con: sqlite3.Connection, timeout: float = 10.0) -> None:
        seen.append(catchup._journaled(Path(f"{path}-journal")))
        real_commit(con, timeout)

    monkeypatch.setattr(db, "commit", measured)
    catch_up(path, log)
    assert len(seen) >= 3 and all(size > 0 for size in seen)
    fresh = tmp_path / "fresh.db"
    build(fresh, log)
    assert _digests(path) == _digests(fresh)
    log.close()


def test_a_fold_rides_in_the_last_transaction_and_every_fold_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from projections.rank import champions

    monkeypatch.setattr(champions, "CHAMPIONS", 3)
    monkeypatch.setattr(champions, "HOT_DF", 4)
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", [MessageSent(
        id=f"h{i}", sender="a", to=[], kind="message", body=f"walrus note {i}", at=i)
        for i in range(30)])
    rebuild(path, log)
    append(log, _burst(100, 600), prefix="burst")
    monkeypatch.setattr(catchup, "TXN_BYTES", 64 << 10)
    monkeypatch.setattr(catchup, "FOLD_BYTES", 256 << 10)
    folds: list[int] = []
    commits: list[int] = []
    real_fold = catchup._fold

    def counted(con: sqlite3.Connection) -> Exception | None:
        folds.append(len(commits))
        return real_fold(con)

    monkeypatch.setattr(catchup, "_fold", counted)
    catch_up(path, log, progress=lambda seq, head: commits.append(seq))
    assert 2 <= len(folds) < len(commits)  # not every transaction folds
    assert folds[-1] == len(commits) - 1  # the last one does: nothing is left unfolded
    con = db.connect(path, readonly=True)
    try:
        wm = con.execute("SELECT wm FROM rank_meta").fetchone()[0]
        assert wm == con.execute("SELECT max(rowid) FROM document_rows").fetchone()[0]
    finally:
        con.close()
    log.close()


def test_a_reader_waits_for_a_commit_and_starts_right_after_it(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _burst(0, 5))
    rebuild(path, log)
    plain_file(path)  # rollback journal: what a file from before generations does
    log.close()
    writer = db.connect(path)
    reader = db.connect(path, readonly=True)
    try:
        before = _read_now(path)
        writer.execute("BEGIN EXCLUSIVE")  # what a commit holds
        writer.execute("UPDATE checkpoint SET last_seq = last_seq + 100")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            _read_now(path)
        released = threading.Event()

        def commit_soon() -> None:
            released.wait(0.05)
            writer.execute("COMMIT")
            released.set()

        t = threading.Thread(target=commit_soon)
        t.start()
        db.until_readable(reader, timeout=30)
        assert released.is_set()  # it returned only once the writer had committed
        assert reader.execute("SELECT last_seq FROM checkpoint").fetchone()[0] == before + 100
        t.join()
        assert reader.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000  # as it was
        writer.execute("BEGIN EXCLUSIVE")
        db.until_readable(reader, timeout=0.01)  # gives up: the read itself decides
        writer.execute("ROLLBACK")
    finally:
        writer.close()
        reader.close()


def test_a_commit_waits_for_a_reader_and_keeps_its_transaction(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _burst(0, 5))
    rebuild(path, log)
    plain_file(path)  # rollback journal: what a file from before generations does
    log.close()
    writer = db.connect(path)
    reader = db.connect(path, readonly=True)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM document_rows").fetchone()  # holds SHARED
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE checkpoint SET last_seq = 77")
        done = threading.Event()
        failed: list[BaseException] = []

        def commit() -> None:
            try:
                db.commit(writer, timeout=30)
            except BaseException as exc:
                failed.append(exc)
            done.set()

        t = threading.Thread(target=commit)
        t.start()
        assert not done.wait(0.05)  # the reader still reads: the commit waits
        reader.execute("COMMIT")
        t.join(30)
        assert done.is_set() and not failed
        assert _read_now(path) == 77
        writer.execute("BEGIN IMMEDIATE")
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM document_rows").fetchone()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            db.commit(writer, timeout=0.01)
        assert writer.in_transaction  # still open: the caller rolls back or retries
        writer.execute("ROLLBACK")
        reader.execute("COMMIT")
    finally:
        writer.close()
        reader.close()


def test_a_reader_of_a_generation_never_waits_for_a_writer(tmp_path: Path) -> None:
    """A published generation is in WAL mode: while a writer holds the write lock with
    changed pages spilled (what made a rollback file's readers wait), a reader that never
    waits reads the last commit; after the commit, the new one."""
    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _burst(0, 5))
    rebuild(path, log)
    log.close()
    assert path.is_symlink() and path.resolve().name.startswith("history.db.g")
    writer = db.connect(path)
    try:
        assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        before = _read_now(path)
        writer.execute("PRAGMA cache_size = 2")  # every changed page spills at once
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("UPDATE checkpoint SET last_seq = last_seq + 100")
        writer.executemany("INSERT INTO parser_state VALUES (?, ?)",
                           [(f"s{i}", "x" * 3000) for i in range(200)])
        assert _read_now(path) == before
        writer.execute("COMMIT")
        assert _read_now(path) == before + 100
    finally:
        writer.close()


def test_searches_answer_the_same_with_the_fine_wait(tmp_path: Path) -> None:
    from projections import query

    path = tmp_path / "history.db"
    log = make_log(tmp_path / "log", _burst(0, 50))
    rebuild(path, log)
    word = _burst(0, 50)[7].body.split()[3]
    first = query.search(path, word)
    assert first["hits"]
    again = query.search(path, word)  # through the cached connection: until_readable first
    assert [h["id"] for h in again["hits"]] == [h["id"] for h in first["hits"]]
    query.close_connections()
    log.close()

