"""The promises of the parsers, checked directly (golden files only pin their output)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from readers import parse, records
from readers.records import ParseResult
from tests.parsers.feed import feed_lines, feed_snapshot, source_info
from tests.parsers.golden import FIXTURES, run_case


def _feed(case: str, index: int, states: dict[str, dict[str, Any]]) -> ParseResult:
    folder = FIXTURES / case
    item = json.loads((folder / "case.json").read_text())["sources"][index]
    source = source_info(item["layout"], item["path"])
    data = (folder / "input" / item["path"]).read_bytes()
    if item["layout"] in records.LINE_LAYOUTS:
        return feed_lines(source, data, states)
    return feed_snapshot(source, data, states)


def test_claude_records_copied_by_resume_keep_their_uid() -> None:
    states: dict[str, dict[str, Any]] = {}
    original = _feed("claude/resume-copy", 0, states)
    fork = _feed("claude/resume-copy", 1, states)
    assert {r.uid for r in original.records} < {r.uid for r in fork.records}


def test_codex_resumed_history_collapses_but_repeated_prompts_do_not() -> None:
    states: dict[str, dict[str, Any]] = {}
    original = _feed("codex/resumed", 0, states)
    resumed = _feed("codex/resumed", 1, states)
    assert {r.uid for r in original.records} < {r.uid for r in resumed.records}
    same_prompt = [r.uid for r in resumed.records if r.role == "user" and r.text == "可以"]
    assert len(same_prompt) == len(set(same_prompt)) == 3
    assert {r.session for r in resumed.records} == {"7b1c2d3e-4f50-4a61-b728-39405a6b7c8d"}


def test_codex_indexes_each_turn_once_and_skips_injected_context(tmp_path: Path) -> None:
    view = run_case(FIXTURES / "codex/rollout", tmp_path)
    texts = [r["text"] for r in view["records"]]
    assert sum("梳理一下模块的结构" in t for t in texts) == 1
    assert sum("先看一下目录结构" in t for t in texts) == 1
    assert not [t for t in texts if "AGENTS.md" in t or "<environment_context>" in t]
    assert not [t for t in texts if "gAAAA" in t or "base64" in t]


def test_codex_rewritten_file_yields_the_same_uids() -> None:
    folder = FIXTURES / "codex/rollout"
    item = json.loads((folder / "case.json").read_text())["sources"][0]
    source = source_info(item["layout"], item["path"])
    data = (folder / "input" / item["path"]).read_bytes()
    states: dict[str, dict[str, Any]] = {}
    first = feed_lines(source, data, states, generation=0)
    second = feed_lines(source, data, states, generation=1)
    assert [r.uid for r in first.records] == [r.uid for r in second.records]
    assert {r.cursor.split(":")[0] for r in second.records} == {"1"}


def test_no_base64_reaches_the_index(tmp_path: Path) -> None:
    for case in sorted(FIXTURES.glob("*/*/case.json")):
        for record in run_case(case.parent, tmp_path)["records"]:
            assert "base64," not in record["text"], (case, record["uid"])
            assert "iVBOR" not in record["text"] and "JVBERi0" not in record["text"]
    claude = run_case(FIXTURES / "claude/session", tmp_path)
    assert any("[image]" in r["text"] for r in claude["records"])


def test_subagent_meta_names_the_subagent(tmp_path: Path) -> None:
    view = run_case(FIXTURES / "claude/subagents", tmp_path)
    sub = [r for r in view["records"] if r.get("subagent") == "a7f3e2d1c0b9a8f76"]
    assert sub and all(r["subagent_name"] == "Explore: Explore search API" for r in sub)
    assert all(r["session"] == "44444444-5555-4666-8777-888888888888" for r in sub)
    assert view["subagents"][0]["name"] == "Explore: Explore search API"


def test_inline_sidechains_are_marked_and_summaries_point_at_their_leaf(tmp_path: Path) -> None:
    view = run_case(FIXTURES / "claude/inline-sidechains", tmp_path)
    marked = [r for r in view["records"] if r.get("subagent") == "sidechain"]
    assert [r["text"] for r in marked] == ["Find failing tests", "spec/server_spec.rb fails"]
    # the two summaries at the top title earlier sessions (leaves elsewhere): not this one
    assert [(t["title"], t["leaf"]) for t in view["titles"]] == [
        ("Evergreen test expectations fix", "claude:d0000000-0000-4000-8000-000000000006")
    ]


def test_project_comes_from_cwd_not_the_folder_name(tmp_path: Path) -> None:
    view = run_case(FIXTURES / "claude/subagents", tmp_path)
    projects = {r.get("project") for r in view["records"] if r["role"] != "tool_result"}
    assert projects == {"C:\\Users\\dev\\catalog_portal"}


def test_run_chunk_grows_under_one_uid() -> None:
    source = source_info("runs.log", "r.log")
    state: dict[str, Any] = {}
    a = parse.parse_line(source, state, b"first", 0, 0).records[0]
    b = parse.parse_line(source, state, b"second", 6, 0).records[0]
    assert a.uid == b.uid and b.text == "first\nsecond"
    c = parse.parse_line(source, state, b"after a gap", 100, 0).records[0]
    assert c.uid != a.uid and c.cursor == "0:100"


def test_opencode_part_before_its_message_is_classified_by_shape() -> None:
    source = source_info("opencode.db", "opencode.db")
    state: dict[str, Any] = {}
    row = {
        "id": "prt_1",
        "message_id": "msg_1",
        "session_id": "ses_1",
        "time_created": 1781674674241,
        "time_updated": 1781674674241,
        "data": json.dumps({"type": "text", "text": "typed by the user"}),
    }
    result = parse.parse_row(source, state, "part", "prt_1", json.dumps(row).encode())
    assert result.records[0].role == "user" and result.records[0].at == 1781674674241
    never = parse.parse_row(source, state, "account", "a", b'{"secret": "x"}')
    assert not never.records and never.unknown == {"opencode:table:account": 1}


def test_state_stays_small_on_a_large_opencode_history() -> None:
    """The shared opencode state is saved after every row: it must not grow with history."""
    source = source_info("opencode.db", "opencode.db")
    state: dict[str, Any] = {}
    for n in range(6000):
        session = f"ses_{n // 20:08d}FixtureSessionAbcd"
        srow = {"id": session, "title": "t" * 200, "directory": "/srv/app", "time_updated": n}
        parse.parse_row(source, state, "session", session, json.dumps(srow).encode())
        data = json.dumps({"role": "assistant", "path": {"cwd": "/srv/app"}})
        mid = f"msg_{n:012d}F"
        message = {"id": mid, "session_id": session, "time_created": n, "data": data}
        parse.parse_row(source, state, "message", mid, json.dumps(message).encode())
    assert len(json.dumps(state)) < 150_000
