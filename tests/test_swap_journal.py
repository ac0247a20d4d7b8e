"""A connection to the file a rebuild swapped out never takes the new file's journal.

SQLite names a rollback journal by path (`history.db-journal`) but locks by inode. A
connection opened before `rebuild`'s `os.replace` still holds the old inode; when it next
takes a lock, the journal of a writer of the *new* file looks hot to it (no RESERVED lock on
the old inode), so it "rolls it back" into the old file and deletes it. The new file's writer
then fails its COMMIT with SQLITE_IOERR_DELETE_NOENT ("disk I/O error"; its transaction is in
fact committed), and a writer killed mid-transaction is never rolled back. The kill storm of
issue 31 printed that "disk I/O error" once: catch-up held its connection across batches while
another process's catch-up rebuilt and swapped.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog import EventLog
from eventlog.events import MessageSent
from projections import db
from projections.catchup import catch_up
from projections.rebuild import rebuild
from tests.conftest import ROOT

# A writer of the new file, mid-transaction with its cache spilled (so its journal is synced
# and looks hot to anyone who thinks no one holds the file), commits after a pause.
_WRITER = """
import sys, time
from pathlib import Path

import pytest
from projections import db
con = db.connect(Path(sys.argv[1]))
con.execute("PRAGMA cache_size = 10")
con.execute("BEGIN IMMEDIATE")
con.execute("UPDATE document_rows SET title = 'rewritten by the other writer'")
print("ready", flush=True)
time.sleep(float(sys.argv[2]))
try:
    con.execute("COMMIT")
    print("committed", flush=True)
except Exception as exc:
    print(f"commit failed: {exc} ({getattr(exc, 'sqlite_errorname', '')})", flush=True)
"""


def _append(log: EventLog, start: int, stop: int) -> None:
    log.append([(f"m{i}".encode(), MessageSent(
        id=f"m{i}", sender="s", to=[], kind="message",
        body=f"common token{i} " + "filler text " * 20, at=i)) for i in range(start, stop)])


def test_a_catch_up_across_a_swap_leaves_the_new_files_journal_alone(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    path = tmp_path / "history.db"
    try:
        _append(log, 0, 3000)
        rebuild(path, log)
        _append(log, 3000, 4000)  # a backlog caught up in batches, not rebuilt
        writer: list[subprocess.Popen[str]] = []

        def swap_once(seq: int, head: int) -> None:
            """After the first batch: another process rebuilds (a swap) and then writes."""
            if writer:
                return
            rebuild(path, log)
            p = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "1.5"], cwd=ROOT,
                                 stdout=subprocess.PIPE, text=True)
            writer.append(p)
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"

        result = catch_up(path, log, batch=250, progress=swap_once)
        assert writer, "the catch-up ran no batch"
        out, _ = writer[0].communicate(timeout=60)
        # before the fix the stale batch either played the journal (the catch-up then failed:
        # "database disk image is malformed", seen once) or waited for it to go (3 runs of
        # 4): timing; the make_lists test below fails every time (disk I/O error)
        assert out.strip() == "committed"
        assert result.last_seq == log.head().seq
        assert not (tmp_path / "history.db-journal").exists()
        con = sqlite3.connect(path)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            titles = {t for (t,) in con.execute("SELECT DISTINCT title FROM document_rows")}
            assert "rewritten by the other writer" in titles
            assert db.read_checkpoint(con) is not None
        finally:
            con.close()
    finally:
        log.close()


def test_make_lists_across_a_swap_leaves_the_new_files_journal_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`reindex` makes every champion list after its swap, one transaction a step on one
    connection: a second reindex swapping meanwhile left that connection on the old file."""
    from projections import catchup, rank

    log = EventLog(tmp_path / "log")
    path = tmp_path / "history.db"
    writer: list[subprocess.Popen[str]] = []
    real_step = rank.step

    def step_then_swap(con: sqlite3.Connection) -> int | None:
        """The real step; after the first, another process rebuilds, swaps and writes."""
        got = real_step(con)
        if writer:
            return got
        rebuild(path, log)
        p = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "1.5"], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
        writer.append(p)
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        return 1  # as if a list was made: the loop takes another step

    try:
        _append(log, 0, 3000)
        rebuild(path, log)
        monkeypatch.setattr(rank, "step", step_then_swap)
        catchup.make_lists(path, steps=3)
        out, _ = writer[0].communicate(timeout=60)
        assert out.strip() == "committed"  # before the fix: disk I/O error
        assert not (tmp_path / "history.db-journal").exists()
        con = sqlite3.connect(path)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            con.close()
    finally:
        log.close()
