"""Cline task folders on ../shared/corpus-more (VS Code Server globalStorage as the root),
including a 0-byte ui_messages.json that is counted, not crashed on; Roo Code folders."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from readers import parse
from readers.records import SourceInfo
from tests.agents_corpus import capture_home, coverage_unknown, found, homes

pytestmark = [pytest.mark.corpus, pytest.mark.real_data("cline")]


def test_capture_finds_every_task(tmp_path: Path) -> None:
    tasks = 0
    for i, home in enumerate(homes("cline")):
        cap = capture_home("cline", home, tmp_path / str(i))
        for task in sorted(home.glob("**/saoudrizwan.claude-dev/tasks/*")):
            ui_path = task / "ui_messages.json"
            if not ui_path.stat().st_size:
                continue
            ui = json.loads(ui_path.read_bytes())
            api = json.loads((task / "api_conversation_history.json").read_bytes())
            cwd = re.search(r"# Current Working Directory \(([^)]+)\)", json.dumps(api))
            prompt = next(m["text"] for m in ui if m.get("say") == "text")
            hits = found(cap.db, "cline", task.name, prompt)
            assert hits, task.name
            assert {h["project"] for h in hits} == {json.loads(f'"{cwd.group(1)}"')}
            assert {h["agent"] for h in hits} == {"cline"}
            tasks += 1
        # the repository's 0-byte ui_messages.json is counted, not crashed on
        assert coverage_unknown(cap.db) == {"cline.ui:undecodable": 1}
    assert tasks == 2


def test_roo_code_task_and_tool_results() -> None:
    path = "rooveterinaryinc.roo-cline/tasks/1750000000000/api_conversation_history.json"
    src = SourceInfo(f"cline:r:{path}", "cline", "/r", path, "cline.api")
    api = [
        {"role": "user", "content": [
            {"type": "text", "text": "<task>\nfix the lighthouse\n</task>"},
            {"type": "text", "text": "<environment_details>\n# Current Working Directory "
                                     "(/srv/lamp) Files\n</environment_details>"}]},
        {"role": "assistant", "content": [{"type": "text", "text":
            "<thinking>look first</thinking>\n<read_file>\n<path>beam.c</path>\n</read_file>"}]},
        {"role": "user", "content": [
            {"type": "text", "text": "[read_file for 'beam.c'] Result:"},
            {"type": "text", "text": "int lumen = 42;"}]},
    ]
    state: dict[str, object] = {}
    res = parse.parse_snapshot(src, state, json.dumps(api).encode())
    assert res.unknown == {}
    use = next(r for r in res.records if r.role == "tool_use")
    out = next(r for r in res.records if r.role == "tool_result")
    assert use.tool == "read_file" and json.loads(use.tool_input or "") == {"path": "beam.c"}
    assert out.tool == "read_file" and out.text == "int lumen = 42;"
    assert {r.project for r in res.records} == {"/srv/lamp"}
    assert {r.subagent_name for r in res.records} == {"Roo Code"}
    assert {r.at for r in res.records} == {1750000000000}  # the task start: no times in file
    torn = parse.parse_snapshot(src, state, json.dumps(api).encode()[:-7])
    assert torn.unknown == {"cline.api:undecodable": 1} and torn.records == []
