"""A rebuild's full-text indexes, built beside the load (projections/fts_bulk.py: inline or
in a child process), index exactly what the triggers would have.

- rows written again during the load (texts already sent to the indexer, and texts still
  waiting; CJK and not, compressed and short) end indexed with their last text: the terms
  of both indexes equal those of the same final rows indexed by the triggers, FTS5's
  'integrity-check' passes, and searches find the last texts only;
- a failure in the indexer (an error; a child process killed) stops the build (nothing
  swapped in, the old file serves) and leaves no scratch file; a killed build's scratch
  file is removed by the next rebuild;
- a sequential rebuild of a large enough log indexes in a child process, with the same
  result as inline.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from eventlog.events import MessageSent
from eventlog.store import EventLog
from projections import db, fts_bulk, query
from projections import rebuild as rebuild_mod
from projections.rebuild import rebuild
from projections.rows import put_document
from tests.test_projections_support import listed

pytestmark = pytest.mark.skipif(not db.fts5_available(), reason="this SQLite has no FTS5")


@pytest.fixture(autouse=True, params=["inline", "process"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every way of running the scratch index (fts_bulk.MODE) keeps every promise."""
    monkeypatch.setattr(fts_bulk, "MODE", request.param)
    return str(request.param)

LONG = "the quick brown fox jumps over the lazy dog naïve résumé " * 8
CJK = "我们使用中文搜索引擎来查找历史记录，" * 12


def _terms(con: sqlite3.Connection, table: str) -> list[tuple[str, int, int]]:
    return [tuple(r) for r in con.execute(f"SELECT term, doc, cnt FROM {table}_terms")]


def _put(con: sqlite3.Connection, doc_id: str, text: str) -> None:
    put_document(con, {"id": f"message:{doc_id}", "kind": "message", "agent": "other", "at": 1,
                       "text": text})


@pytest.mark.parametrize("flush_chars", [1, 1 << 20])  # every row sent at once / all waiting
def test_rows_written_again_during_the_load_are_indexed_with_their_last_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flush_chars: int) -> None:
    monkeypatch.setattr(fts_bulk, "FLUSH_CHARS", flush_chars)
    writes = [("a", LONG + " alpha"), ("b", CJK + " beta"), ("c", "short gamma"),
              ("d", "中文 delta"), ("a", CJK + " alpha2"), ("b", LONG + " beta2"),
              ("c", "short gamma"), ("d", LONG + " delta2"), ("e", LONG + " epsilon"),
              ("a", "short 中文 alpha3")]
    writes += [(f"x{i}", f"{LONG} filler{i}") for i in range(30)]
    final = dict(writes)
    bulk = db.connect(tmp_path / "bulk.db")
    engine = db.create_schema(bulk, engine="fts5", bulk=True)
    bulk.execute("BEGIN")
    for doc_id, text in writes:
        _put(bulk, doc_id, text)
    bulk.execute("COMMIT")
    db.finish_bulk(bulk, engine)
    assert not (tmp_path / "bulk.db.fts").exists()
    live = db.connect(tmp_path / "live.db")
    db.create_schema(live, engine="fts5")
    for doc_id, text in final.items():
        _put(live, doc_id, text)
    for table in ("documents_fts", "documents_cjk"):
        bulk.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        assert _terms(bulk, table) == _terms(live, table), table
    assert ({r[0]: r[1] for r in bulk.execute("SELECT id, text FROM documents")}
            == {f"message:{k}": v for k, v in final.items()})
    bulk.close()
    live.close()
    for q, want in (("alpha3", {"a"}), ("alpha", set()), ("alpha2", set()), ("beta2", {"b"}),
                    ("中文", {"a"}), ("delta2", {"d"}), ("gamma", {"c"}), ("filler7", {"x7"})):
        hits = query.search(tmp_path / "bulk.db", q)["hits"]
        assert {h["id"] for h in hits} == {f"message:{w}" for w in want}, q


def _log(path: Path, n: int) -> EventLog:
    log = EventLog(path)
    log.append([(f"k{i}".encode(), MessageSent(id=f"m{i}", sender="a", to=["b"],
                                               kind="message", body=f"{CJK} {LONG} w{i}",
                                               at=i)) for i in range(n)])
    return log


def test_a_failing_indexer_stops_the_build_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    log = _log(tmp_path / "log", 20)
    path = tmp_path / "history.db"
    rebuild(path, log)
    before = query.search(path, "w3")["hits"]
    assert [h["id"] for h in before] == ["message:m3"]

    def broken(text: str) -> str:
        raise ValueError("no grams today")

    if mode == "process":  # a fresh interpreter: monkeypatching reaches it through its args
        monkeypatch.setattr(db, "BULK_HASHSIZE", 0)  # FTS5 refuses it: the child fails
    else:
        monkeypatch.setattr(fts_bulk, "cjk_grams", broken)
    with pytest.raises(RuntimeError, match="full-text build"):
        rebuild(path, log)
    assert listed(tmp_path, "history.db") == ["history.db", "history.db.g*", "history.db.lock"]
    assert query.search(path, "w3")["hits"] == before


def test_a_killed_builds_scratch_file_is_removed(tmp_path: Path) -> None:
    log = _log(tmp_path / "log", 3)
    dead = 2**22 + 12345  # above pid_max's default: no such process
    assert not os.path.exists(f"/proc/{dead}")
    left = [tmp_path / f"history.db.reindex-{dead}", tmp_path / f"history.db.reindex-{dead}.fts"]
    for p in left:
        p.write_bytes(b"leftover")
    rebuild(tmp_path / "history.db", log)
    assert not any(p.exists() for p in left)
    assert [h["id"] for h in query.search(tmp_path / "history.db", "w1")["hits"]] == ["message:m1"]


def test_a_killed_full_text_process_stops_the_build(tmp_path: Path, mode: str) -> None:
    if mode != "process":
        return  # only a child process can be killed on its own
    log = _log(tmp_path / "log", 20)
    path = tmp_path / "history.db"
    rebuild(path, log)
    before = query.search(path, "w3")["hits"]

    def kill(seq: int, stop: int) -> None:  # after the first batch: the child is running
        pid = fts_bulk.last_child[0]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and b"zombie" not in _state(pid):
            assert time.monotonic() < deadline
            time.sleep(0.01)

    with pytest.raises(RuntimeError, match="full-text build"):
        rebuild(path, log, progress=kill)
    assert listed(tmp_path, "history.db") == ["history.db", "history.db.g*", "history.db.lock"]
    assert query.search(path, "w3")["hits"] == before


def _state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/status").read_bytes()
    except OSError:
        return b"zombie"


def test_a_large_sequential_rebuild_indexes_in_a_child_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    if mode != "inline":
        return  # the automatic choice: once
    monkeypatch.setattr(fts_bulk, "MODE", None)
    log = _log(tmp_path / "log", 30)
    monkeypatch.setattr(rebuild_mod, "FTS_PROCESS_BYTES", 1 << 40)
    rebuild(tmp_path / "small.db", log, parallel=False)
    started = fts_bulk.last_child[1]
    monkeypatch.setattr(rebuild_mod, "FTS_PROCESS_BYTES", 0)
    monkeypatch.setattr(rebuild_mod, "_cpus", lambda: 2)
    rebuild(tmp_path / "large.db", log, parallel=False)
    assert fts_bulk.last_child[1] == started + 1
    small, large = db.connect(tmp_path / "small.db"), db.connect(tmp_path / "large.db")
    for table in ("documents_fts", "documents_cjk"):
        assert _terms(large, table) == _terms(small, table), table
        large.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    for name in ("documents_fts_config", "documents_fts_docsize"):
        q = f"SELECT * FROM {name} ORDER BY 1"
        assert large.execute(q).fetchall() == small.execute(q).fetchall(), name
    small.close()
    large.close()


def test_null_and_blob_parameters_bind_as_before(tmp_path: Path) -> None:
    """projections.db registers identity adapters for None and bytes (a fast path past
    sqlite3's adapter lookup): they must still bind as NULL and BLOB, and a bytes subclass
    or a memoryview as before."""
    con = db.connect(tmp_path / "x.db")
    con.execute("CREATE TABLE t(a, b, c, d)")
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?)",
                (None, b"\x00\xffz", memoryview(b"mv"), bytearray(b"ba")))
    assert con.execute("SELECT typeof(a), typeof(b), b, typeof(c), c, typeof(d) FROM t"
                       ).fetchone() == ("null", "blob", b"\x00\xffz", "blob", b"mv", "blob")
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None
    con.close()


def test_inline_merge_runs_beside_the_query_index_sort(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Inline, the closing 'optimize' runs while another thread creates the query indexes
    (db.finish_bulk); an error on that thread still stops the build."""
    if mode != "inline":
        return  # a thread or child process merges beside the sort anyway
    sorting, merged = threading.Event(), threading.Event()
    seen: list[bool] = []
    apply, script = fts_bulk.apply_op, db.Connection.executescript

    def spy(con: sqlite3.Connection, op: tuple[object, ...], default: int) -> bool:
        if op[0] == "done":  # the merge starts: is the sort under way on its thread?
            seen.append(sorting.wait(30))
            merged.set()
        return apply(con, op, default)

    def sort(con: db.Connection, sql: str) -> sqlite3.Cursor:
        if "documents_at" in sql and threading.current_thread().name == "query-indexes":
            sorting.set()
            merged.wait(30)  # held until the merge has begun: both at once
        return script(con, sql)

    monkeypatch.setattr(fts_bulk, "apply_op", spy)
    monkeypatch.setattr(db.Connection, "executescript", sort)
    log = _log(tmp_path / "log", 20)
    path = tmp_path / "history.db"
    rebuild(path, log)
    assert seen == [True]
    monkeypatch.setattr(db.Connection, "executescript", script)
    con = db.connect(path)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    con.close()
    assert {"documents_at", "documents_conv", "documents_project", "documents_job"} <= names
    before = query.search(path, "w3")["hits"]
    monkeypatch.setattr(db, "_QUERY_INDEXES", "CREATE INDEX broken ON no_such_table(x);")
    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        rebuild(path, log)
    assert query.search(path, "w3")["hits"] == before
    assert listed(tmp_path, "history.db") == ["history.db", "history.db.g*", "history.db.lock"]


def test_the_full_text_process_exits_when_its_build_is_killed(tmp_path: Path, mode: str) -> None:
    """kill -9 of the building process: its child reads the end of the pipe and exits (no
    orphan keeps indexing); the next rebuild removes the scratch files."""
    if mode != "process":
        return
    _log(tmp_path / "log", 30).close()
    script = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from eventlog.store import EventLog\n"
        "from projections import fts_bulk, rebuild\n"
        "fts_bulk.MODE = 'process'\n"
        "def hold(seq, stop):\n"
        "    print(fts_bulk.last_child[0], flush=True)\n"
        "    time.sleep(600)\n"
        "rebuild.rebuild(Path(sys.argv[1]) / 'history.db', EventLog(Path(sys.argv[1]) / 'log'),"
        " progress=hold)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)],
                            stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while Path(f"/proc/{child}").exists() and b"zombie" not in _state(child):
        assert time.monotonic() < deadline, "the full-text process outlived its build"
        time.sleep(0.05)
    assert any(p.name.endswith(".fts") for p in tmp_path.iterdir())
    rebuild(tmp_path / "history.db", EventLog(tmp_path / "log"))
    assert not any(".reindex-" in p.name for p in tmp_path.iterdir())
    assert [h["id"] for h in query.search(tmp_path / "history.db", "w1")["hits"]] == ["message:m1"]
