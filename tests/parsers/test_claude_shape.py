"""Claude lines whose message content has the wrong type are counted as damage, never
dropped silently (issue 31, round three: `"content": 12` vanished without a count)."""

from __future__ import annotations

import json

import pytest

from projections.problems import is_damage
from readers import parse_claude
from readers.records import SourceInfo

SOURCE = SourceInfo("claude:r:projects/-p/s.jsonl", "claude", "/r", "projects/-p/s.jsonl",
                    "claude.session")


def _parse(obj: object) -> tuple[int, dict[str, int]]:
    result = parse_claude.parse_line(SOURCE, {}, json.dumps(obj).encode(), 0, 0)
    return len(result.records), dict(result.unknown)


@pytest.mark.parametrize(("obj", "shapes"), [
    ({"type": "assistant", "message": {"content": 12}}, 1),
    ({"type": "assistant", "message": {"content": {"text": "x"}}}, 1),
    ({"type": "user", "message": {"role": "user", "content": [1, "two"]}}, 2),
    ({"type": "user", "message": {"role": "user", "content": 3.5}}, 1),
])
def test_wrong_typed_content_is_counted_as_shape(obj: object, shapes: int) -> None:
    records, unknown = _parse(obj)
    assert records == 0 and unknown == {"claude:shape": shapes}
    assert is_damage("claude:shape")


@pytest.mark.parametrize("obj", [
    {"type": "user", "message": {"role": "user", "content": "hi"}},
    {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}},
])
def test_well_formed_content_counts_nothing(obj: object) -> None:
    records, unknown = _parse(obj)
    assert records == 1 and unknown == {}
