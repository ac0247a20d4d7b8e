"""Parsers of Aider, Amp, Crush, Goose and Kiro on their real files in ../shared/corpus-more.

Each agent's files are fed as capture would feed them (append-only files line by line with
their offsets, rewritten files whole, SQLite rows as JSON objects of their columns, read from
a private copy of the database so the shared files are never opened for writing). The
expectations are computed from the files themselves, not hard-coded.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from readers import parse
from readers.records import ParseResult, Record, SourceInfo


def _source(agent: str, layout: str, root: Path, rel: str) -> SourceInfo:
    return SourceInfo(source=f"{agent}:r1:{rel}", agent=agent, root=str(root), path=rel,
                      layout=layout)


def _merge(total: ParseResult, part: ParseResult) -> None:
    total.records.extend(part.records)
    total.titles.extend(part.titles)
    total.skipped += part.skipped
    for key, n in part.unknown.items():
        total.unknown[key] = total.unknown.get(key, 0) + n


def _lines(src: SourceInfo, data: bytes, state: dict[str, Any]) -> ParseResult:
    total = ParseResult()
    offset = 0
    while (end := data.find(b"\n", offset)) >= 0:
        _merge(total, parse.parse_line(src, state, data[offset:end], offset, 0))
        offset = end + 1
    return total


def _newest(records: list[Record]) -> dict[str, Record]:
    """uid -> the last version (a later record with the same uid replaces the earlier)."""
    out: dict[str, Record] = {}
    for r in records:
        out[r.uid] = r
    return out


def _rows(db: Path, tmp: Path, tables: tuple[str, ...]) -> list[tuple[str, str, bytes]]:
    """(table, id, row JSON) from a private copy of db + WAL (the shared files stay as they
    are: opening them, even read-only, writes SQLite's -shm index)."""
    copy = tmp / "copy.db"
    for suffix in ("", "-wal"):
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", f"{copy}{suffix}")
    con = sqlite3.connect(copy)
    try:
        out = []
        for table in tables:
            cur = con.execute(f'SELECT * FROM "{table}"')
            names = [c[0] for c in cur.description]
            for row in cur:
                obj = dict(zip(names, row, strict=True))
                out.append((table, str(obj["id"]), json.dumps(obj).encode()))
        return out
    finally:
        con.close()


# --- Aider ----------------------------------------------------------------------------


@pytest.mark.real_data("aider")
def test_aider_chat_history(corpus_more: Path) -> None:
    root = next((corpus_more / "aider").iterdir())
    chat = (root / ".aider.chat.history.md").read_bytes()
    src = _source("aider", "aider.chat", root, ".aider.chat.history.md")
    result = _lines(src, chat, {})
    assert result.unknown == {}
    records = _newest(result.records)
    headers = re.findall(rb"^# aider chat started at (\S+) (\S+)", chat, re.M)
    assert headers
    day, clock = (h.decode() for h in headers[0])
    session = f"aider-{day.replace('-', '')}T{clock.replace(':', '')}-"
    assert {r.session[: len(session)] for r in records.values()} == {session}
    assert {r.project for r in records.values()} == {str(root)}
    assert {r.agent for r in records.values()} == {"aider"}
    # every prompt typed (the input history) is a user record of the chat history
    typed = re.findall(rb"^\+(.+)$", (root / ".aider.input.history").read_bytes(), re.M)
    users = "\n".join(r.text for r in records.values() if r.role == "user")
    missing = [t for t in typed if t.decode().strip() not in users]
    assert typed and not missing
    assert {"assistant", "system", "user"} <= {r.role for r in records.values()}
    assert all(r.at == records[next(iter(records))].at for r in records.values())
    # the request log and prompt history are captured but not indexed
    for name, layout in ((".aider.input.history", "aider.input"),
                         (".aider.llm.history", "aider.llm")):
        other = _lines(_source("aider", layout, root, name), (root / name).read_bytes(), {})
        assert other.records == [] and other.unknown == {} and other.skipped > 0


@pytest.mark.real_data("aider")
def test_aider_torn_file_is_counted_not_crashed(corpus_more: Path) -> None:
    root = next((corpus_more / "aider").iterdir())
    chat = (root / ".aider.chat.history.md").read_bytes()
    src = _source("aider", "aider.chat", root, ".aider.chat.history.md")
    cut = chat[len(chat) // 3 :]  # starts mid-file: no header, mid-line
    result = _lines(src, cut + b"\xff\xfe broken \n", {})
    assert "aider.chat:error" not in result.unknown
    assert result.records
    assert all(re.fullmatch(r"aider-[0-9a-f]{10}", r.session or "") for r in result.records)
    assert all(r.at is None for r in result.records)  # no header: no time, not capture time


# --- Amp -------------------------------------------------------------------------------


def _amp_threads(corpus_more: Path) -> list[Path]:
    return sorted((corpus_more / "amp").glob("*/.local/share/amp/threads/T-*.json"))


@pytest.mark.real_data("amp")
def test_amp_threads(corpus_more: Path) -> None:
    threads = _amp_threads(corpus_more)
    assert threads
    for path in threads:
        root = path.parent.parent
        rel = path.relative_to(root).as_posix()
        thread = json.loads(path.read_bytes())
        result = parse.parse_snapshot(_source("amp", "amp.thread", root, rel), {},
                                      path.read_bytes())
        assert result.unknown == {}
        records = _newest(result.records)
        assert {r.session for r in records.values()} == {thread["id"]}
        uri = thread["env"]["initial"]["trees"][0]["uri"]
        assert {r.project for r in records.values()} == {uri.removeprefix("file://")}
        assert [t.title for t in result.titles] == [thread["title"]]
        prompts = [b["text"] for m in thread["messages"] if m["role"] == "user"
                   for b in m["content"] if b["type"] == "text"]
        assert prompts and all(any(r.role == "user" and r.text == p for r in records.values())
                               for p in prompts)
        uses = {b["id"]: b["name"] for m in thread["messages"] for b in m["content"]
                if b["type"] == "tool_use"}
        for r in records.values():
            assert r.at is not None and r.at >= thread["created"]
            if r.role == "tool_result":
                assert r.tool in uses.values()


@pytest.mark.real_data("amp")
def test_amp_truncated_thread_is_counted(corpus_more: Path) -> None:
    path = _amp_threads(corpus_more)[0]
    data = path.read_bytes()
    src = _source("amp", "amp.thread", path.parent.parent, "threads/" + path.name)
    result = parse.parse_snapshot(src, {}, data[: len(data) // 2])
    assert result.records == [] and result.unknown == {"amp:undecodable": 1}


# --- Kiro ------------------------------------------------------------------------------


@pytest.mark.real_data("kiro")
def test_kiro_sessions(corpus_more: Path) -> None:
    root = next((corpus_more / "kiro").glob("*/.kiro"))
    folder = root / "sessions" / "cli"
    stems = sorted({p.name.split(".")[0] for p in folder.iterdir()})
    assert stems
    for stem in stems:
        meta = json.loads((folder / f"{stem}.json").read_bytes())
        state: dict[str, Any] = {}
        result = ParseResult()
        # discovery order: <id>.json sorts before <id>.jsonl
        for name, layout in ((f"{stem}.json", "kiro.state"), (f"{stem}.jsonl", "kiro.events")):
            src = _source("kiro", layout, root, f"sessions/cli/{name}")
            scope = parse.state_scope(src)
            assert scope.endswith(f"sessions/cli/{stem}")
            data = (folder / name).read_bytes()
            part = (_lines(src, data, state) if layout == "kiro.events"
                    else parse.parse_snapshot(src, state, data))
            _merge(result, part)
        assert result.unknown == {}
        records = _newest(result.records)
        events = [json.loads(x) for x in (folder / f"{stem}.jsonl").read_bytes().splitlines()]
        if not events:
            assert records == {}  # the empty session (a 0-byte .jsonl)
            continue
        # the state file's copy of an assistant message collapses with the event's
        assert len(records) == len(events)
        for ev in events:
            last = ev["data"]["content"][-1]["data"]
            rec = records[f"kiro:{stem}:{ev['data']['message_id']}"]
            assert rec.text.endswith(last) and rec.session == meta["session_id"]
            assert rec.project == meta["cwd"] and rec.at is not None
            assert "<agentspaces-global-context>" not in rec.text
        assert {r.role for r in records.values()} == {"user", "assistant"}


@pytest.mark.real_data("kiro")
def test_kiro_torn_event_line_is_counted(corpus_more: Path) -> None:
    root = next((corpus_more / "kiro").glob("*/.kiro"))
    path = next(p for p in sorted((root / "sessions" / "cli").glob("*.jsonl")) if p.stat().st_size)
    line = path.read_bytes().splitlines()[0]
    src = _source("kiro", "kiro.events", root, f"sessions/cli/{path.name}")
    result = parse.parse_line(src, {}, line[: len(line) // 2], 0, 0)
    assert result.records == [] and result.unknown == {"kiro:undecodable": 1}


# --- Crush -----------------------------------------------------------------------------


@pytest.mark.real_data("crush")
def test_crush_rows(corpus_more: Path, tmp_path: Path) -> None:
    root = next((corpus_more / "crush").iterdir())
    db = root / ".crush" / "crush.db"
    src = _source("crush", "crush.db", root, ".crush/crush.db")
    state: dict[str, Any] = {}
    result = ParseResult()
    rows = _rows(db, tmp_path, ("sessions", "messages"))
    for table, row_id, data in rows:
        _merge(result, parse.parse_row(src, state, table, row_id, data))
    assert result.unknown == {}
    records = _newest(result.records)
    sessions = {json.loads(d)["id"]: json.loads(d) for t, _, d in rows if t == "sessions"}
    assert [t.title for t in result.titles] == [s["title"] for s in sessions.values()]
    messages = [json.loads(d) for t, _, d in rows if t == "messages"]
    assert len(messages) > 100  # most of them live only in the WAL
    texts = 0
    for m in messages:
        for i, part in enumerate(json.loads(m["parts"])):
            if part["type"] == "text" and part["data"]["text"].strip():
                rec = records[f"crush:{m['id']}#{i}"]
                assert rec.text == part["data"]["text"] and rec.role == m["role"]
                assert rec.session == m["session_id"] and rec.project == str(root)
                assert rec.at == m["created_at"] * 1000  # seconds, not ms
                texts += 1
            if part["type"] == "tool_call":
                rec = records[f"crush:{m['id']}#{i}"]
                assert rec.role == "tool_use" and rec.tool == part["data"]["name"]
    assert texts > 10
    names = {r.tool for r in records.values() if r.role == "tool_result"}
    assert names and "tool" not in names  # every result learned its call's name


# --- Goose -----------------------------------------------------------------------------


@pytest.mark.real_data("goose")
def test_goose_rows(corpus_more: Path, tmp_path: Path) -> None:
    root = next((corpus_more / "goose").glob("*/.local/share/goose"))
    db = root / "sessions" / "sessions.db"
    src = _source("goose", "goose.db", root, "sessions/sessions.db")
    state: dict[str, Any] = {}
    result = ParseResult()
    rows = _rows(db, tmp_path, ("sessions", "messages"))
    for table, row_id, data in rows:
        _merge(result, parse.parse_row(src, state, table, row_id, data))
    assert result.unknown == {}
    sessions = [json.loads(d) for t, _, d in rows if t == "sessions"]
    assert [(t.session, t.project) for t in result.titles] == [
        (s["id"], s["working_dir"]) for s in sessions]
    # the sample has no messages: one in the documented shape, in the same state
    content = [{"type": "text", "text": "list the files"},
               {"type": "toolRequest", "id": "c1", "toolCall": {
                   "status": "success", "value": {"name": "shell", "arguments": {"cmd": "ls"}}}},
               {"type": "toolResponse", "id": "c1", "toolResult": {
                   "status": "success", "value": [{"type": "text", "text": "README.md"}]}},
               {"type": "mystery"}]
    row = {"id": 7, "session_id": sessions[0]["id"], "role": "assistant",
           "content_json": json.dumps(content), "created_timestamp": 1764694735}
    out = parse.parse_row(src, state, "messages", "7", json.dumps(row).encode())
    assert [(r.role, r.tool, r.text) for r in out.records] == [
        ("assistant", None, "list the files"), ("tool_use", "shell", 'shell {"cmd":"ls"}'),
        ("tool_result", "shell", "README.md")]
    assert {r.project for r in out.records} == {sessions[0]["working_dir"]}
    assert {r.at for r in out.records} == {1764694735000}
    assert out.unknown == {"goose:content:mystery": 1}
    torn = parse.parse_row(src, state, "messages", "8", json.dumps(row).encode()[:40])
    assert torn.records == [] and torn.unknown == {"goose:row-undecodable": 1}


def test_goose_legacy_jsonl() -> None:
    src = _source("goose", "goose.jsonl", Path("/h"), "sessions/20250101_120000.jsonl")
    meta = {"working_dir": "/w/p", "description": "fix the build", "message_count": 1}
    msg = {"role": "user", "created": 1735732800,
           "content": [{"type": "text", "text": "why does make fail"}]}
    data = (json.dumps(meta) + "\n" + json.dumps(msg) + "\n").encode()
    state: dict[str, Any] = {}
    result = _lines(src, data, state)
    assert [t.title for t in result.titles] == ["fix the build"]
    assert [(r.session, r.project, r.role, r.text, r.at) for r in result.records] == [
        ("20250101_120000", "/w/p", "user", "why does make fail", 1735732800000)]
    again = _lines(src, data, {})  # a rewritten file yields the same uids
    assert [r.uid for r in again.records] == [r.uid for r in result.records]


@pytest.mark.parametrize(("agent", "layout", "rel", "table"), [
    ("crush", "crush.db", ".crush/crush.db", "messages"),
    ("goose", "goose.db", "sessions/sessions.db", "sessions"),
    ("opencode", "opencode.db", "opencode.db", "part"),
])
def test_a_torn_database_row_is_counted_not_raised(
    agent: str, layout: str, rel: str, table: str
) -> None:
    src = _source(agent, layout, Path("/h"), rel)
    for data in (b'{"id": "m1", "ses', b"[1, 2]", b"\xff\xfe"):
        out = parse.parse_row(src, {}, table, "r1", data)
        assert out.records == [] and out.titles == []
        assert out.unknown == {f"{agent}:row-undecodable": 1}
