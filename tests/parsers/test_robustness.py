"""No input makes a parser raise, and state survives a JSON round trip between calls."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readers import parse, records, registry
from readers.records import ParseResult
from tests.parsers.feed import source_info
from tests.parsers.golden import FIXTURES

LINE = sorted(records.LINE_LAYOUTS)
SNAPSHOT = sorted(records.SNAPSHOT_LAYOUTS)
PATHS = {
    "claude.session": "projects/-x/11111111-2222-4333-8444-555555555555.jsonl",
    "claude.subagent": "projects/-x/s/subagents/agent-abc.jsonl",
    "claude.history": "history.jsonl",
    "claude.subagent_meta": "projects/-x/s/subagents/agent-abc.meta.json",
    "claude.tool_result": "projects/-x/s/tool-results/toolu_1.txt",
    "codex.rollout": "sessions/2026/01/01/rollout-2026-01-01T00-00-00-x.jsonl",
    "codex.history": "history.jsonl",
    "opencode.json": "storage/part/msg_1/prt_1.json",
    "opencode.db": "opencode.db",
    "runs.log": "a.log",
    "runs.meta": "a.json",
    "aider.chat": "p/.aider.chat.history.md",
    "aider.input": "p/.aider.input.history",
    "aider.llm": "p/.aider.llm.history",
    "amp.thread": "threads/T-1.json",
    "amp.history": "history.jsonl",
    "crush.db": ".crush/crush.db",
    "goose.db": "sessions/sessions.db",
    "goose.jsonl": "sessions/20250101_1.jsonl",
    "kiro.events": "sessions/cli/s.jsonl",
    "kiro.state": "sessions/cli/s.json",
}
for _agent in registry.REGISTRY:  # the newer readers name an example path per layout
    PATHS.update(getattr(registry.reader(_agent.name), "EXAMPLE_PATHS", {}))
KEYS = st.sampled_from(
    [
        "type", "message", "content", "payload", "role", "text", "uuid", "sessionId", "cwd",
        "timestamp", "isSidechain", "agentId", "name", "input", "id", "tool_use_id", "summary",
        "call_id", "arguments", "output", "data", "state", "messageID", "sessionID", "time",
        "attachment", "subtype", "isMeta", "thinking", "source", "url", "title", "directory",
    ]
)  # fmt: skip
WORDS = st.sampled_from(
    [
        "user", "assistant", "text", "tool_use", "tool_result", "thinking", "image", "message",
        "response_item", "event_msg", "session_meta", "compacted", "reasoning", "function_call",
        "function_call_output", "summary", "system", "part", "tool", "file", "data:x;base64,",
        "\ud800", "2026-01-01T00:00:00Z", "", "queued_command", "user_message",
    ]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), WORDS, st.text()
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=6)),
    max_leaves=25,
)


def _check(result: ParseResult) -> None:
    assert isinstance(result, ParseResult)
    # parse.* turns a parser exception into an ":error" count; a test must see it as a bug
    assert not [kind for kind in result.unknown if kind.endswith(":error")], result.unknown
    msgspec.json.encode(result)  # all strings valid UTF-8


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.sampled_from(LINE), data=st.binary(max_size=300), offset=st.integers(0, 10**9))
def test_arbitrary_line_bytes(layout: str, data: bytes, offset: int) -> None:
    state: dict[str, Any] = {}
    _check(parse.parse_line(source_info(layout, PATHS[layout]), state, data, offset, 0))
    msgspec.json.encode(state)


@settings(max_examples=200, deadline=None)
@given(layout=st.sampled_from(LINE), values=st.lists(JSONISH, min_size=1, max_size=5))
def test_arbitrary_json_lines(layout: str, values: list[Any]) -> None:
    state: dict[str, Any] = {}
    source = source_info(layout, PATHS[layout])
    for i, value in enumerate(values):
        _check(parse.parse_line(source, state, _encode(value), i * 100, 0))
    msgspec.json.encode(state)


@settings(max_examples=300, deadline=None)
@given(layout=st.sampled_from(SNAPSHOT), value=JSONISH, raw=st.binary(max_size=200))
def test_arbitrary_snapshots(layout: str, value: Any, raw: bytes) -> None:
    state: dict[str, Any] = {}
    source = source_info(layout, PATHS[layout])
    _check(parse.parse_snapshot(source, state, _encode(value)))
    _check(parse.parse_snapshot(source, state, raw))
    msgspec.json.encode(state)


@settings(max_examples=120, deadline=None)
@given(
    table=st.sampled_from(["session", "message", "part", "account", ""]),
    row=st.dictionaries(KEYS, st.one_of(JSONISH, JSONISH.map(json.dumps)), max_size=6),
    raw=st.binary(max_size=100),
)
def test_arbitrary_rows(table: str, row: dict[str, Any], raw: bytes) -> None:
    state: dict[str, Any] = {}
    source = source_info("opencode.db", "opencode.db")
    _check(parse.parse_row(source, state, table, "r1", _encode(row)))
    _check(parse.parse_row(source, state, table, "r1", raw))


@settings(max_examples=150, deadline=None)
@given(
    layout=st.sampled_from(["crush.db", "goose.db"]),
    table=st.sampled_from(["sessions", "messages", "files", ""]),
    row=st.dictionaries(
        st.sampled_from(["id", "session_id", "role", "parts", "content_json", "created_at",
                         "created_timestamp", "timestamp", "title", "name", "working_dir",
                         "parent_session_id"]),
        st.one_of(JSONISH, JSONISH.map(json.dumps)), max_size=7),
    raw=st.binary(max_size=100),
)
def test_arbitrary_rows_of_other_agents(
    layout: str, table: str, row: dict[str, Any], raw: bytes
) -> None:
    state: dict[str, Any] = {}
    source = source_info(layout, PATHS[layout])
    _check(parse.parse_row(source, state, table, "r1", _encode(row)))
    _check(parse.parse_row(source, state, table, "r1", raw))
    msgspec.json.encode(state)


def _fixture_lines() -> list[tuple[str, str, Any]]:
    """(layout, path, decoded JSON) of every JSON line of the golden fixtures."""
    out = []
    for case in sorted(FIXTURES.glob("*/*/case.json")):
        for item in json.loads(case.read_text())["sources"]:
            if item["layout"] not in records.LINE_LAYOUTS:
                continue
            for line in (case.parent / "input" / item["path"]).read_bytes().splitlines():
                try:
                    out.append((item["layout"], item["path"], json.loads(line)))
                except ValueError:
                    continue
    return out


FIXTURE_LINES = _fixture_lines()


def _mutate(value: Any, path: list[int], replacement: Any) -> Any:
    """Replace the node reached by following `path` (indices into children) by `replacement`."""
    if not path:
        return replacement
    if isinstance(value, dict) and value:
        key = list(value)[path[0] % len(value)]
        return {**value, key: _mutate(value[key], path[1:], replacement)}
    if isinstance(value, list) and value:
        i = path[0] % len(value)
        return [*value[:i], _mutate(value[i], path[1:], replacement), *value[i + 1 :]]
    return replacement


@settings(max_examples=300, deadline=None)
@given(
    pick=st.integers(0, 10**6),
    path=st.lists(st.integers(0, 50), min_size=1, max_size=6),
    replacement=JSONISH,
)
def test_real_shapes_with_one_wrong_value(pick: int, path: list[int], replacement: Any) -> None:
    """Fixture lines with one node replaced by anything: deep paths meet wrong types."""
    layout, rel, value = FIXTURE_LINES[pick % len(FIXTURE_LINES)]
    state: dict[str, Any] = {}
    source = source_info(layout, rel)
    _check(parse.parse_line(source, state, _encode(_mutate(value, path, replacement)), 0, 0))
    msgspec.json.encode(state)


def test_wrong_layout_is_counted_not_raised() -> None:
    source = source_info("runs.log", "a.log")
    odd = msgspec.structs.replace(source, layout="gemini.session")
    assert parse.parse_line(odd, {}, b"{}", 0, 0).unknown == {"gemini.session:line": 1}
    assert parse.parse_snapshot(odd, {}, b"{}").unknown == {"gemini.session:snapshot": 1}
    assert parse.parse_row(odd, {}, "part", "x", b"{}").unknown == {"gemini.session:row": 1}


def test_state_survives_a_json_round_trip_between_lines() -> None:
    """The caller may persist state as JSON after every call: results must not change."""
    for case in sorted(FIXTURES.glob("*/*/case.json")):
        spec = json.loads(case.read_text())
        for item in spec["sources"]:
            if item["layout"] not in records.LINE_LAYOUTS:
                continue
            source = source_info(item["layout"], item["path"])
            data = (case.parent / "input" / item["path"]).read_bytes()
            kept: dict[str, Any] = {}
            persisted: dict[str, Any] = {}
            offset = 0
            for line in data.split(b"\n")[:-1]:
                a = parse.parse_line(source, kept, line, offset, 0)
                b = parse.parse_line(source, persisted, line, offset, 0)
                persisted = json.loads(json.dumps(persisted))
                assert a == b, (case, offset)
                offset += len(line) + 1


def test_scopes_pair_the_files_that_share_knowledge() -> None:
    scope = parse.state_scope
    meta = source_info("claude.subagent_meta", "projects/-x/s/subagents/agent-abc.meta.json")
    lines = source_info("claude.subagent", "projects/-x/s/subagents/agent-abc.jsonl")
    assert scope(meta) == scope(lines)
    assert scope(source_info("runs.log", "archive/r1.log")) == scope(
        source_info("runs.meta", "archive/r1.json")
    )
    assert scope(source_info("opencode.db", "opencode.db")) == scope(
        source_info("opencode.json", "storage/part/m/p.json")
    )
    assert scope(source_info("claude.session", "projects/-x/a.jsonl")) != scope(
        source_info("claude.session", "projects/-x/b.jsonl")
    )


def test_unknown_type_names_are_valid_utf8() -> None:
    """Found by the fuzzer: an unknown type name taken from the input was a lone surrogate."""
    for layout in ("claude.session", "codex.rollout"):
        source = source_info(layout, PATHS[layout])
        result = parse.parse_line(source, {}, b'{"type": "\\ud800x", "payload": {}}', 0, 0)
        assert result.unknown and not result.records
        msgspec.json.encode(result)


def test_absurd_nesting_and_huge_lines_are_handled() -> None:
    source = source_info("claude.session", PATHS["claude.session"])
    for depth in (500, 5000, 200_000):
        line = b'{"type":"user","message":{"content":' + b"[" * depth + b"]" * depth + b"}}"
        result = parse.parse_line(source, {}, line, 0, 0)
        assert not [k for k in result.unknown if k.endswith(":error")], (depth, result.unknown)
    words = b"lorem ipsum dolor sit amet " * 300_000  # 8 MB of words: capped, not dropped
    line = b'{"type":"user","uuid":"u1","message":{"content":"' + words + b'"}}'
    (record,) = parse.parse_line(source, {}, line, 0, 0).records
    assert record.text.startswith("lorem ipsum") and len(record.text) <= 64 * 1024 + 32


_RUNS = st.lists(st.tuples(st.sampled_from("Ab9+/= .\n-"), st.integers(1, 2200)), max_size=6)


@settings(max_examples=60, deadline=None)
@given(_RUNS)
def test_scrub_replaces_every_long_base64_run_and_nothing_else(runs: list[tuple[str, int]]) -> None:
    """`scrub`'s pattern (tried only where a run starts) replaces exactly what the plain
    pattern `[A-Za-z0-9+/]{2000,}={0,2}` replaces, runs of every length around 2,000."""
    import re

    from readers.parse_common import scrub

    text = "".join(ch * n for ch, n in runs)
    plain = re.sub(r"[A-Za-z0-9+/]{2000,}={0,2}", "[binary]", text) if len(text) >= 2000 else text
    assert scrub(text) == plain


def test_the_base64_prefilter_agrees_with_the_pattern_for_every_character() -> None:
    """`scrub` runs its base64-run pattern only where `_may_hold_run` says a run may be: for
    every ASCII character, a 2,000-long run of it (alone, or between other text) is one
    exactly when the pattern finds it."""
    from readers.parse_common import _BASE64_RUN, _may_hold_run

    for code in range(128):
        for text in (chr(code) * 2000, "x " + chr(code) * 2000 + " y", chr(code) * 1999):
            assert _may_hold_run(text) == (_BASE64_RUN.search(text) is not None), (code, text[:4])
    assert not _may_hold_run("é" + "a" * 10)  # not ASCII: too short a run in any case
    assert not _may_hold_run("é" + "a b" * 1000)
    assert _may_hold_run("é" + "a" * 2000)  # not ASCII: the pattern decides


def test_the_base64_prefilter_never_misses_a_run() -> None:
    """`_may_hold_run`'s sample of every 10th character never rules out a run the pattern
    finds: runs of 1,990 to 2,010 characters at every offset modulo 10, in ASCII and in
    non-ASCII text, and runs broken once at every distance from their start."""
    from readers.parse_common import _BASE64_RUN, _may_hold_run

    run = "QUJD" * 503  # 2,012 base64 characters
    for lead in ("", "x ", "é ", "中文 "):
        for offset in range(10):
            for length in range(1990, 2011):
                text = lead + " " * offset + run[:length] + " ."
                found = _BASE64_RUN.search(text) is not None
                assert found == (length >= 2000)
                if found:
                    assert _may_hold_run(text), (lead, offset, length)
                elif lead in ("", "x "):
                    assert not _may_hold_run(text), (lead, offset, length)
    for cut in range(0, 2012, 7):
        for mark in (" ", "é"):
            text = run[:cut] + mark + run[cut + 1:]
            found = _BASE64_RUN.search(text) is not None
            assert found == (cut >= 2000 or cut <= 11)
            if found or mark == " ":  # ASCII text: exactly when the pattern finds a run
                assert _may_hold_run(text) == found, (cut, mark)


def test_a_record_with_a_lone_surrogate_in_any_field_comes_out_clean() -> None:
    """`make_record` (and `checked`, which the Claude and Codex parsers call on the Records
    they build) replaces lone surrogates in every string field, and leaves clean ones as
    they are."""
    from readers.parse_common import checked, make_record
    from readers.records import Record

    fields = ("uid", "agent", "session", "role", "text", "cursor", "project", "subagent",
              "subagent_name", "tool", "tool_input", "title", "message", "job", "run")
    base = {name: f"{name} é" for name in fields}
    clean_record = Record(**base)
    assert checked(clean_record) is clean_record
    for name in fields:
        dirty = dict(base, **{name: "a\ud800b"})
        for record in (make_record(**dirty), checked(Record(**dirty))):
            assert getattr(record, name) == "a\ufffdb", name
            msgspec.json.encode(record)
