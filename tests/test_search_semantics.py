"""Schema 8 search semantics: recipients are filterable, reindex keeps the engine, and the
contentless CJK side index stays exact through updates and deletes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog
from eventlog.events import AliasBound, MessageSent
from projections import db, query
from projections.catchup import catch_up
from projections.drift import check
from projections.rebuild import existing_engine, rebuild
from tests.conftest import run_cli
from tests.test_projections_support import append, mixed_events


def ids(res: dict[str, Any]) -> set[str]:
    return {h["id"] for h in res["hits"]}


@pytest.fixture
def broadcast(tmp_path: Path) -> tuple[Path, EventLog]:
    log = EventLog(tmp_path / "log")
    append(log, [
        AliasBound(alias="bob", session="S-bob", agent="codex", at=1),
        MessageSent(id="b1", sender="alice", to=["bob", "carol"], kind="message",
                    body="quokka broadcast", at=2),
        MessageSent(id="b2", sender="alice", to=["dave"], kind="message",
                    body="quokka private", at=3),
        MessageSent(id="b3", sender="carol", to=["bob", "bob"], kind="report",
                    body="quokka reply", at=4),
    ])
    return tmp_path / "h.db", log


@pytest.mark.parametrize(("who", "expected"), [
    ("bob", {"message:b1", "message:b3"}),
    ("carol", {"message:b1", "message:b3"}),  # b3: carol sent it
    ("dave", {"message:b2"}),
    ("alice", {"message:b1", "message:b2"}),
    ("erin", set()),
])
def test_a_broadcast_is_found_by_each_recipient(broadcast: tuple[Path, EventLog], who: str,
                                                expected: set[str]) -> None:
    path, log = broadcast
    catch_up(path, log)
    for engine in ("fts5", "plain"):
        assert ids(query.search(path, "quokka", {"session": who}, engine=engine)) == expected
    query.close_connections()


def test_recipients_are_the_same_after_catch_up_and_rebuild(
        broadcast: tuple[Path, EventLog]) -> None:
    path, log = broadcast
    catch_up(path, log, batch=1)
    result = check(path, log)
    assert result["ok"] and result["tables"]["recipients"]["live"] == 4, result


def test_recipients_through_the_cli(broadcast: tuple[Path, EventLog]) -> None:
    path, log = broadcast
    log.close()
    out = run_cli(path.parent, "search", "quokka", "--session", "carol", "--json")
    assert out.returncode == 0, out.stderr
    assert {h["id"] for h in json.loads(out.stdout)["hits"]} == {"message:b1", "message:b3"}


def test_reindex_keeps_the_engine_and_changes_it_only_when_asked(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    path = tmp_path / "h.db"
    assert rebuild(path, log, engine="plain").engine == "plain"
    assert existing_engine(path) == "plain"
    assert rebuild(path, log).engine == "plain"  # kept (was: became fts5)
    assert query.search(path, "café")["engine"] == "plain"
    assert rebuild(path, log, engine="fts5").engine == "fts5"
    assert rebuild(path, log).engine == "fts5"
    query.close_connections()
    log.close()


def test_reindex_engine_option(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    log.close()
    out = run_cli(tmp_path, "reindex", "--engine", "plain", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["engine"] == "plain"
    out = run_cli(tmp_path, "reindex", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["engine"] == "plain"
    out = run_cli(tmp_path, "reindex", "--engine", "fts5", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["engine"] == "fts5"
    bad = run_cli(tmp_path, "reindex", "--engine", "lucene")
    assert bad.returncode == 2


def _cjk_rows(con: sqlite3.Connection, gram_query: str) -> set[int]:
    return {int(r[0]) for r in con.execute(
        "SELECT rowid FROM documents_cjk WHERE documents_cjk MATCH ?", (gram_query,))}


def test_contentless_cjk_index_follows_updates_and_deletes(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "h.db")
    db.create_schema(con, engine="fts5")
    row = {"id": "x:1", "kind": "message", "agent": "other", "at": 1}
    con.execute("INSERT INTO document_rows(id, kind, agent, at, body) VALUES (?,?,?,?,?)",
                (row["id"], row["kind"], row["agent"], row["at"], "我们使用中文搜索"))
    rid = int(con.execute("SELECT rowid FROM documents WHERE id = 'x:1'").fetchone()[0])
    assert _cjk_rows(con, '"中文"') == {rid}
    con.execute("UPDATE document_rows SET body = '日本語のテキスト' WHERE rowid = ?", (rid,))
    assert _cjk_rows(con, '"中文"') == set() and _cjk_rows(con, '"日本"') == {rid}
    con.execute("UPDATE document_rows SET body = 'no cjk any more' WHERE rowid = ?", (rid,))
    assert _cjk_rows(con, '"日本"') == set()
    con.execute("UPDATE document_rows SET body = '搜索引擎' WHERE rowid = ?", (rid,))
    assert _cjk_rows(con, '"搜索"') == {rid}
    con.execute("DELETE FROM document_rows WHERE rowid = ?", (rid,))
    assert _cjk_rows(con, '"搜索"') == set()
    con.execute("INSERT INTO documents_cjk(documents_cjk) VALUES ('integrity-check')")
    # contentless: the grams are not stored a second time
    cols = [r[1] for r in con.execute("PRAGMA table_info(documents_cjk)")]
    assert cols == ["grams"]
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'documents_cjk_content'"
                       ).fetchone()[0] == 0
    con.close()
