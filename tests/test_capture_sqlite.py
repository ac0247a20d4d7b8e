"""opencode.db rows: read-only, WAL-aware, bounded pages, updates re-captured, restore as JSONL."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from eventlog import EventLog
from eventlog.events import RowSnapshotted
from readers.capture import Capturer, Options
from readers.restore import payload, restore
from tests.capture_helpers import capture, roots_of


def _make_db(path: Path, sessions: int, parts: int) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.executescript(
        """
        CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT, directory TEXT,
                              time_created INTEGER, time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
                              time_updated INTEGER, data TEXT);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
                           time_created INTEGER, time_updated INTEGER, data TEXT);
        CREATE TABLE credential (id TEXT PRIMARY KEY, secret TEXT, time_updated INTEGER);
        CREATE TABLE account (id TEXT PRIMARY KEY, token TEXT, time_updated INTEGER);
        """
    )
    for s in range(sessions):
        conn.execute("INSERT INTO session VALUES (?,?,?,?,?)",
                     (f"ses_{s:03d}", f"title {s}", "/w", 1000 + s, 1000 + s))
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                     (f"msg_{s:03d}", f"ses_{s:03d}", 1000 + s, 1000 + s, '{"role":"user"}'))
    for p in range(parts):
        conn.execute("INSERT INTO part VALUES (?,?,?,?,?,?)",
                     (f"prt_{p:04d}", f"msg_{p % max(sessions, 1):03d}",
                      f"ses_{p % max(sessions, 1):03d}", 5, 5,
                      json.dumps({"type": "text", "text": f"part {p} 中文"})))
    conn.execute("INSERT INTO credential VALUES ('c1', 'SECRET-TOKEN', 1)")
    conn.execute("INSERT INTO account VALUES ('a1', 'SECRET-TOKEN', 1)")
    conn.commit()
    return conn


def _rows(log: EventLog) -> list[RowSnapshotted]:
    return [e.event for e in log.iter_events() if isinstance(e.event, RowSnapshotted)]


def test_rows_live_wal_updates_and_restore(tmp_path: Path) -> None:
    root = tmp_path / "opencode"
    db = root / "opencode.db"
    conn = _make_db(db, sessions=40, parts=250)  # stays open: -wal and -shm exist
    before = sorted(os.listdir(root))
    log = EventLog(tmp_path / "log")
    try:
        eng = Capturer(log, roots_of(opencode=root), Options(settle_s=0))
        eng.tick()
        assert len(_pending_rows(eng)) == 32  # session rows: 32 a tick
        eng.tick()
        assert len(_pending_rows(eng)) == 40  # the rest of the sessions
        eng.tick()
        assert len(_pending_rows(eng)) == 80  # messages: at most 100 rows a tick
        st = eng.run_once()
        assert st.rows == 40 + 40 + 250
        rows = _rows(log)
        assert {r.table for r in rows} == {"session", "message", "part"}
        assert not any(b"SECRET" in payload(r.codec, r.data) for r in rows)
        assert capture(log, roots_of(opencode=root)).appended == 0
        conn.execute("UPDATE part SET time_updated=9, data=? WHERE id='prt_0007'",
                     (json.dumps({"type": "text", "text": "edited"}),))
        conn.commit()
        st2 = capture(log, roots_of(opencode=root))
        assert st2.rows == 1
        restore(log, tmp_path / "out")
        lines = (tmp_path / "out" / "opencode" / "opencode.db.rows" / "part.jsonl"
                 ).read_bytes().splitlines()
        assert len(lines) == 250
        edited = [json.loads(x) for x in lines if b"prt_0007" in x]
        assert json.loads(edited[0]["data"])["text"] == "edited"
        restore(log, tmp_path / "one", session="ses_003")
        one = (tmp_path / "one" / "opencode" / "opencode.db.rows" / "part.jsonl").read_bytes()
        assert all(json.loads(x)["session_id"] == "ses_003" for x in one.splitlines())
        assert sorted(os.listdir(root)) == before
    finally:
        log.close()
        conn.close()


def _pending_rows(eng: Capturer) -> list[object]:
    return [e for e in eng._batch.events if isinstance(e[1], RowSnapshotted)]


def test_wal_without_shm_is_read_from_a_private_copy(tmp_path: Path) -> None:
    live = tmp_path / "live" / "opencode.db"
    conn = _make_db(live, sessions=3, parts=5)
    root = tmp_path / "opencode"
    root.mkdir()
    shutil.copyfile(live, root / "opencode.db")
    shutil.copyfile(str(live) + "-wal", root / "opencode.db-wal")  # rows only in the WAL
    conn.close()
    os.chmod(root, 0o555)
    log = EventLog(tmp_path / "log")
    try:
        st = capture(log, roots_of(opencode=root))
        assert st.rows == 3 + 3 + 5 and st.errors == []
    finally:
        log.close()
        os.chmod(root, 0o755)
    assert sorted(os.listdir(root)) == ["opencode.db", "opencode.db-wal"]


def test_wal_database_without_wal_file_opens_immutable(tmp_path: Path) -> None:
    root = tmp_path / "opencode"
    conn = _make_db(root / "opencode.db", sessions=2, parts=2)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()  # the last close removes -wal and -shm; the header still says WAL
    assert sorted(os.listdir(root)) == ["opencode.db"]
    log = EventLog(tmp_path / "log")
    try:
        assert capture(log, roots_of(opencode=root)).rows == 6
    finally:
        log.close()
    assert sorted(os.listdir(root)) == ["opencode.db"]


def test_a_live_wal_database_is_touched_only_in_its_shm_read_marks(tmp_path: Path) -> None:
    """What a read of a live WAL database (Crush, opencode) changes, exactly as documented:
    the database and its `-wal` not a byte; in `-shm` only the wal-index's checkpoint-info
    block (bytes 96..135: read marks), as every SQLite reader does; no file is created."""
    from readers.sqlite_rows import open_readonly

    folder = tmp_path / "crush"
    folder.mkdir()
    db = folder / "crush.db"
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t(x)")
    writer.executemany("INSERT INTO t VALUES (?)", [("a" * 100,)] * 500)
    writer.commit()
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    before = [f.read_bytes() for f in files]
    listing = sorted(os.listdir(folder))
    with open_readonly(str(db)) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (500,)
    after = [f.read_bytes() for f in files]
    assert sorted(os.listdir(folder)) == listing
    writer.close()  # the last connection checkpoints: compare before it does
    assert after[0] == before[0] and after[1] == before[1]
    changed = [i for i, (a, b) in enumerate(zip(before[2], after[2], strict=True)) if a != b]
    assert all(96 <= i < 136 for i in changed), changed


def test_a_locked_database_is_said_once_and_taken_later(tmp_path: Path) -> None:
    """Another process holds the database (an exclusive lock): the capture says so once,
    captures the rest, and the next capture after the lock is gone takes the rows."""
    import subprocess
    import sys

    root = tmp_path / "opencode"
    made = _make_db(root / "opencode.db", sessions=3, parts=5)
    made.execute("PRAGMA journal_mode=DELETE")  # a rollback-journal database: locks hold
    made.close()
    hold = ("import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], timeout=0)\n"
            "c.execute('PRAGMA locking_mode=EXCLUSIVE')\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "c.execute(\"INSERT INTO session VALUES ('ses_x', 't', '/w', 1, 1)\")\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(root / "opencode.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    with EventLog(tmp_path / "log") as log:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            st = capture(log, roots_of(opencode=root))
        finally:
            holder.communicate("")
        locked = [e for e in st.errors if "opencode.db" in e]
        assert len(locked) == 1 and "locked" in locked[0], st.errors
        assert "next capture" in locked[0], locked
        assert st.rows == 0
        again = capture(log, roots_of(opencode=root))
        assert again.errors == [] and again.rows == 3 + 3 + 5
