"""The parsers on the real transcripts of the shared corpus (absent: skip, or fail under CI).

Every corpus file is fed as capture would feed it: JSONL line by line with its byte offsets,
rewritten files whole, opencode.db row by row (read-only). Unknown record types are printed
(`pytest -s`) so a format drift shows up in the test log.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from readers.parse_common import MAX_TEXT
from readers.records import AGENTS, LINE_LAYOUTS, ROLES, ROW_LAYOUTS, ParseResult
from tests.parsers.feed import (
    db_rows,
    feed_lines,
    feed_rows,
    feed_snapshot,
    layout_of,
    source_info,
)

# the real-data parser tests of these agents (tests/test_agents_covered.py checks every agent)
pytestmark = [pytest.mark.real_data("claude"), pytest.mark.real_data("codex"),
              pytest.mark.real_data("opencode")]

CJK = re.compile(r"[\u4e00-\u9fff]")
BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{2000,}")
# A user/assistant turn (Claude) or a user/agent message (Codex); injected context is not one.
CONVERSATION = re.compile(rb'"type":\s*"(user|assistant|user_message|agent_message)"')

pytestmark = pytest.mark.corpus


def _parse_corpus(corpus: Path) -> list[tuple[str, str, bytes, ParseResult]]:
    states: dict[str, dict[str, Any]] = {}
    out = []
    for path in sorted(corpus.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(corpus).as_posix()
        layout = layout_of(rel)
        if layout is None:
            continue
        source = source_info(layout, rel)
        if layout in ROW_LAYOUTS:
            out.append((rel, layout, b"", feed_rows(source, db_rows(path), states)))
            continue
        data = path.read_bytes()
        if layout in LINE_LAYOUTS:
            result = feed_lines(source, data, states)
        else:
            result = feed_snapshot(source, data, states)
        out.append((rel, layout, data, result))
    for state in states.values():
        msgspec.json.encode(state)  # the caller persists state as JSON
    return out


@pytest.fixture(scope="module")
def parsed(request: pytest.FixtureRequest) -> list[tuple[str, str, bytes, ParseResult]]:
    corpus: Path = request.getfixturevalue("corpus")
    return _parse_corpus(corpus)


@pytest.fixture(scope="module")
def corpus(request: pytest.FixtureRequest) -> Path:  # module-scoped twin of conftest's
    from tests.conftest import CORPUS, need

    need(CORPUS.is_dir(), f"shared corpus not present at {CORPUS}")
    return CORPUS


def test_every_conversation_file_yields_records(
    parsed: list[tuple[str, str, bytes, ParseResult]],
) -> None:
    assert len(parsed) > 30
    unknown: Counter[str] = Counter()
    for rel, layout, data, result in parsed:
        unknown.update(result.unknown)
        assert not [k for k in result.unknown if k.endswith(":error")], (rel, result.unknown)
        talks = layout == "opencode.db" or CONVERSATION.search(data)
        if talks and layout in (
            "claude.session",
            "claude.subagent",
            "codex.rollout",
            "opencode.db",
        ):
            assert result.records, f"{rel}: conversation without records"
        if layout in ("claude.history", "codex.history", "claude.tool_result"):
            assert result.records, rel
    print("\nunknown record types in the corpus:")
    for kind, count in unknown.most_common():
        print(f"  {kind}: {count}")


def test_records_are_well_formed(parsed: list[tuple[str, str, bytes, ParseResult]]) -> None:
    for rel, layout, _data, result in parsed:
        uids = [r.uid for r in result.records]
        if layout != "runs.log" and not rel.startswith("fixtures/"):  # real files only
            assert len(uids) == len(set(uids)), f"{rel}: duplicate uid in one file"
        for record in result.records:
            assert record.agent in AGENTS and record.role in ROLES, (rel, record.uid)
            assert record.text.strip(), (rel, record.uid)
            assert len(record.text) <= MAX_TEXT + 32, (rel, record.uid)
            assert not BASE64_RUN.search(record.text), (rel, record.uid)
            assert "base64," not in record.text or "[" in record.text, (rel, record.uid)
            real = not rel.startswith("fixtures/")
            if real and record.project is not None and layout.startswith("claude."):
                assert record.project.startswith(("/", "~")) or ":" in record.project
            msgspec.json.encode(record)  # valid UTF-8 throughout


def test_chinese_text_is_preserved(parsed: list[tuple[str, str, bytes, ParseResult]]) -> None:
    checked = 0
    for rel, layout, data, result in parsed:
        if layout == "opencode.db" or not CJK.search(data.decode("utf-8", "replace")):
            continue
        if not result.records:
            continue
        checked += 1
        assert any(CJK.search(r.text) for r in result.records), rel
    assert checked >= 3


def test_empty_file_gives_nothing(parsed: list[tuple[str, str, bytes, ParseResult]]) -> None:
    empty = [(rel, result) for rel, layout, data, result in parsed if layout and not data]
    empty = [(rel, result) for rel, result in empty if not rel.endswith("opencode.db")]
    assert empty, "the corpus has a 0-byte transcript"
    for rel, result in empty:
        assert not result.records and not result.titles and not result.unknown, rel


def test_codex_growth_snapshots_agree(parsed: list[tuple[str, str, bytes, ParseResult]]) -> None:
    """The older snapshot of a growing rollout yields a prefix of the newer one's records."""
    snaps = {rel.rsplit("/", 1)[-1].split("__")[0]: result for rel, _, _, result in parsed}
    older, newer = snaps.get("growth-snapshot-1"), snaps.get("growth-snapshot-2")
    assert older is not None and newer is not None, "growth snapshots not in the corpus"
    assert older.records and len(newer.records) > len(older.records)
    assert newer.records[: len(older.records)] == older.records


def test_subagent_records_name_their_parent_session(
    parsed: list[tuple[str, str, bytes, ParseResult]],
) -> None:
    seen = 0
    for rel, layout, _data, result in parsed:
        if layout != "claude.subagent":
            continue
        for record in result.records:
            assert record.subagent, (rel, record.uid)
            assert record.session, (rel, record.uid)
            seen += 1
    assert seen
