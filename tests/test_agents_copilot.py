"""GitHub Copilot CLI on ../shared/corpus-more: all three generations (history-session-state
JSON, flat session-state/<id>.jsonl, session-state/<id>/events.jsonl + workspace.yaml)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from projections.project_key import project_key
from readers import parse
from readers.agent_copilot import yaml_scalars
from readers.records import SourceInfo
from tests.agents_corpus import capture_home, coverage_unknown, found, homes

pytestmark = [pytest.mark.corpus, pytest.mark.real_data("copilot")]

_TAGS = re.compile(r"<(\w+)>.*?</\1>", re.S)


def _expected(tree: Path) -> list[tuple[str, str | None, str]]:
    out = []
    for events in sorted((tree / "session-state").glob("**/*.jsonl")):
        lines = [json.loads(raw) for raw in events.read_bytes().splitlines()]
        start = next(x["data"] for x in lines if x["type"] == "session.start")
        cwd = (start.get("context") or {}).get("cwd")
        for x in lines:
            m = re.search(r"working directory: ([^\n]+)", x["data"].get("content", ""))
            if cwd is None and x["type"] == "system.message" and m:
                cwd = m.group(1)
        prompts = [_TAGS.sub("", x["data"]["content"]) for x in lines
                   if x["type"] == "user.message"]
        out.append((start["sessionId"], cwd, prompts[0]))
    for hist in sorted((tree / "history-session-state").glob("*.json")):
        obj = json.loads(hist.read_bytes())
        prompts = [_TAGS.sub("", m["content"]) for m in obj["chatMessages"]
                   if m["role"] == "user"]
        if prompts:
            out.append((obj["sessionId"], None, prompts[0]))
    return out


def test_capture_finds_every_session(tmp_path: Path) -> None:
    sessions = 0
    for i, home in enumerate(homes("copilot-cli")):
        cap = capture_home("copilot", home, tmp_path / str(i))
        for session, project, text in _expected(home / ".copilot"):
            hits = found(cap.db, "copilot", session, text)
            assert hits, (home.name, session)
            assert {h["project"] for h in hits} == {project_key(project) if project else project}, (
                home.name, session)
            sessions += 1
        assert coverage_unknown(cap.db) == {}
    assert sessions == 3


def test_workspace_yaml_multiline_quoted_summary() -> None:
    text = ('id: abc\ncwd: c:\\Users\\x\\proj\n'
            'summary: "Fix the \\"parser\\"\\r\n\n  next line\\r\n'
            '  and more..."\nsummary_count: 0\nnested:\n  - a\n')
    got = yaml_scalars(text)
    assert got["id"] == "abc" and got["cwd"] == "c:\\Users\\x\\proj"
    assert got["summary"].startswith('Fix the "parser"') and "next line" in got["summary"]
    assert got["summary_count"] == "0" and "nested" not in got
    src = SourceInfo("copilot:r:session-state/abc/workspace.yaml", "copilot", "/r",
                     "session-state/abc/workspace.yaml", "copilot.workspace")
    state: dict[str, object] = {}
    res = parse.parse_snapshot(src, state, text.encode())
    assert res.titles[0].title.startswith('Fix the "parser" next line')
    assert state["cwd"] == "c:\\Users\\x\\proj"


def test_unknown_event_types_and_torn_lines_are_counted() -> None:
    src = SourceInfo("copilot:r:session-state/abc.jsonl", "copilot", "/r",
                     "session-state/abc.jsonl", "copilot.flat")
    state: dict[str, object] = {}
    odd = parse.parse_line(src, state, b'{"type": "brand.new", "data": {}}', 0, 0)
    assert odd.unknown == {"copilot.flat:brand.new": 1}
    torn = parse.parse_line(src, state, b'{"type": "user.mess', 40, 0)
    assert torn.unknown == {"copilot.flat:undecodable": 1} and torn.records == []
