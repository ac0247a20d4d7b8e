"""Gemini CLI and Qwen Code on ../shared/corpus-more: discovery with the sample as HOME,
capture read-only, restore byte-exact, and a phrase of every non-empty session found with
the right agent, session and project (see tests/agents_corpus.py)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from projections.project_key import project_key
from readers import parse
from readers.records import SourceInfo
from readers.restore import restore
from tests.agents_corpus import capture_home, coverage_unknown, found, homes

pytestmark = [pytest.mark.corpus, pytest.mark.real_data("gemini"),
              pytest.mark.real_data("qwen")]

_CWD = re.compile(r"working in the directory: ([^\n]+)")


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict) and isinstance(
            p.get("text"), str) and not p.get("thought")]
    return []


def _dir_project(tmpdir: Path) -> str | None:
    marker = tmpdir / ".project_root"
    if marker.exists():
        return marker.read_text()
    for cp in tmpdir.glob("checkpoint-*.json"):
        m = _CWD.search(json.loads(cp.read_bytes())[0]["parts"][0]["text"])
        if m and hashlib.sha256(m.group(1).encode()).hexdigest() == tmpdir.name:
            return m.group(1)
    return None


def _expected(tree: Path) -> list[tuple[str, str | None, str]]:
    """(session, project, a short text of it) per non-empty session, from the raw files."""
    out: dict[str, tuple[str, str | None, str]] = {}
    for tmpdir in sorted((tree / "tmp").glob("*")) if (tree / "tmp").is_dir() else []:
        project = _dir_project(tmpdir)
        for chat in sorted(tmpdir.glob("chats/**/*.json")):
            obj = json.loads(chat.read_bytes())
            parent = chat.parent.name if chat.parent.name != "chats" else None
            for m in obj.get("messages", []):
                texts = [t for t in _texts(m.get("content")) if 20 < len(t) < 3000]
                if texts:
                    out.setdefault(parent or obj["sessionId"], (parent or obj["sessionId"],
                                                               project, texts[0]))
        logs = tmpdir / "logs.json"
        for item in json.loads(logs.read_bytes()) if logs.exists() else []:
            if 20 < len(item["message"]) < 3000:
                out.setdefault(item["sessionId"], (item["sessionId"], project, item["message"]))
        for cp in sorted(tmpdir.glob("checkpoint-*.json")):
            contents = json.loads(cp.read_bytes())
            cwd = _CWD.search(contents[0]["parts"][0]["text"])
            texts = [p["text"] for c in contents[1:] for p in c["parts"]
                     if 20 < len(p.get("text", "")) < 3000]
            session = cp.stem
            out[session] = (session, cwd.group(1) if cwd else project, texts[0])
    for chat in sorted((tree / "projects").glob("*/chats/*.jsonl")):
        for line in chat.read_bytes().splitlines():
            obj = json.loads(line)
            payload = obj.get("systemPayload") or {}
            texts = _texts((obj.get("message") or {}).get("parts")) or (
                [payload["rawCommand"]] if payload.get("phase") == "invocation" else [])
            texts = [t for t in texts if 10 < len(t) < 3000]
            if texts:
                out.setdefault(obj["sessionId"], (obj["sessionId"], obj["cwd"], texts[0]))
    return list(out.values())


@pytest.mark.parametrize(("agent", "folder", "dot"), [
    ("gemini", "gemini-cli", ".gemini"), ("qwen", "qwen-code", ".qwen")])
def test_capture_finds_every_session(agent: str, folder: str, dot: str,
                                     tmp_path: Path) -> None:
    sessions = 0
    for i, home in enumerate(homes(folder)):
        cap = capture_home(agent, home, tmp_path / str(i))
        for session, project, text in _expected(home / dot):
            hits = found(cap.db, agent, session, text)
            assert hits, (home.name, session)
            assert {h["project"] for h in hits} == {project_key(project) if project else project}, (
                home.name, session)
            sessions += 1
        assert coverage_unknown(cap.db) == {}
        for chat in sorted((home / dot).glob("tmp/*/chats/session-*.json"))[:2]:
            # restore --session finds a chat whose file name spells 8 characters of its id
            sid = json.loads(chat.read_bytes())["sessionId"]
            out = tmp_path / f"r{i}-{sid}"
            restore(cap.log, out, agent=agent, session=sid)
            rel = chat.relative_to(home / dot)
            assert (out / agent / rel).read_bytes() == chat.read_bytes()
    assert sessions >= 15  # the samples hold 21 (gemini) and 19 (qwen) non-empty sessions


def _src(layout: str, path: str) -> SourceInfo:
    return SourceInfo(f"gemini:r:{path}", "gemini", "/r", path, layout)


def test_jsonl_update_log_set_rewind_and_replacement() -> None:
    """v0.39+ JSONL: metadata line, messages, $set (messages + summary), a repeated id
    replacing the earlier record, $rewindTo counted as skipped; torn lines are counted."""
    src = _src("gemini.chat_log", "tmp/proj/chats/session-2026-05-01T10-00-abcd1234.jsonl")
    state: dict[str, object] = {}
    lines = [
        {"sessionId": "abcd1234-x", "projectHash": "h", "startTime": "2026-05-01T10:00:00Z"},
        {"id": "m1", "timestamp": "2026-05-01T10:00:01Z", "type": "user",
         "content": [{"text": "quartz lantern"}]},
        {"id": "m2", "timestamp": "2026-05-01T10:00:02Z", "type": "gemini", "content": "",
         "toolCalls": [{"id": "c1", "name": "read_file", "args": {"path": "a"},
                        "status": "executing"}]},
        {"id": "m2", "timestamp": "2026-05-01T10:00:03Z", "type": "gemini", "content": "ok",
         "toolCalls": [{"id": "c1", "name": "read_file", "args": {"path": "a"},
                        "result": [{"functionResponse": {"id": "c1", "name": "read_file",
                                    "response": {"output": "velvet"}}}]}]},
        {"$set": {"summary": "Lantern work", "lastUpdated": "2026-05-01T10:00:04Z"}},
        {"$rewindTo": "m2"},
        {"$set": {"messages": [{"id": "m3", "timestamp": "2026-05-01T10:00:05Z",
                                "type": "warning", "content": "careful"}]}},
    ]
    recs, titles, skipped, offset = [], [], 0, 0
    for obj in lines:
        raw = json.dumps(obj).encode()
        r = parse.parse_line(src, state, raw, offset, 0)
        state = json.loads(json.dumps(state))  # the caller may persist it between lines
        assert r.unknown == {}
        recs += r.records
        titles += r.titles
        skipped += r.skipped
        offset += len(raw) + 1
    latest = {r.uid: r for r in recs}  # a newer record with a known uid replaces the older
    assert latest["gemini:m1"].text == "quartz lantern"
    assert latest["gemini:m1"].session == "abcd1234-x"
    assert latest["gemini:m2#0:result"].text == "velvet"
    assert latest["gemini:m2#0"].tool == "read_file"
    assert latest["gemini:m3"].role == "system"
    assert [t.title for t in titles] == ["Lantern work"] and skipped == 1
    torn = parse.parse_line(src, state, b'{"id": "m4", "type": "us', offset, 0)
    assert torn.records == [] and torn.unknown == {"gemini.chat_log:undecodable": 1}
    bad = parse.parse_snapshot(_src("gemini.chat", "tmp/p/chats/session-x.json"), {},
                               b'{"sessionId": "s", "messages": [')
    assert bad.unknown == {"gemini.chat:undecodable": 1}
    odd = parse.parse_snapshot(_src("gemini.chat", "tmp/p/chats/session-x.json"), {},
                               b'{"sessionId": "s", "messages": [{"id": "a", "type": "x"}]}')
    assert odd.unknown == {"gemini.chat:x": 1}
