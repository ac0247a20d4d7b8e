from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli


def test_record_then_verify(home: Path) -> None:
    line = {"type": "message", "id": "m1", "from": "a", "to": ["b"], "kind": "message",
            "body": "hello", "at": "2026-11-01T10:00:00+00:00"}
    out = run_cli(home, "record", input=(json.dumps(line) + "\n").encode())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"appended": 1, "duplicates": 0, "head": 2}
    assert run_cli(home, "verify").returncode == 0
