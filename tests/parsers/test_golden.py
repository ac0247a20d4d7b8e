"""Golden tests: every fixture case parses to exactly its expected.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.parsers.golden import cases, run_case

CASES = cases()


def test_there_are_cases_for_every_agent() -> None:
    agents = {case.parent.name for case in CASES}
    assert {"claude", "codex", "opencode", "runs"} <= agents


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_golden(case: Path, tmp_path: Path) -> None:
    got = run_case(case, tmp_path)
    expected_file = case / "expected.json"
    expected = json.loads(expected_file.read_text(encoding="utf-8"))
    if os.environ.get("UPDATE_GOLDEN") == "1" and got != expected:
        text = json.dumps(got, ensure_ascii=False, indent=1) + "\n"
        expected_file.write_text(text, encoding="utf-8")
        pytest.fail(f"{expected_file} rewritten: review the diff, then run without UPDATE_GOLDEN")
    assert got == expected
