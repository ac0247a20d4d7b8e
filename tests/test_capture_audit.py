"""`agentlog audit`: the capture section (per-layout counts, pending, retention risk)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from eventlog import EventLog
from readers.census import census
from tests.capture_helpers import capture, roots_of, write
from tests.conftest import run_cli

DAY = 86_400


def _claude_line(i: int) -> bytes:
    rec = {"type": "user", "uuid": f"u-{i}", "sessionId": "s1", "cwd": "/w/p",
           "timestamp": "2026-04-07T15:31:35.362Z",
           "message": {"role": "user", "content": f"hello {i}"}}
    return json.dumps(rec).encode() + b"\n"


def test_audit_capture_section(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "claude"
    write(root / "settings.json", b'{"cleanupPeriodDays": 10}')
    now = time.time()
    for i, age in enumerate((1, 4, 5, 9)):  # days old: 4, 5 and 9 expire within 7 days
        f = write(root / "projects" / "-p" / f"s{i}.jsonl",
                  _claude_line(i) + b'{"type":"no-such-type"}\n')
        os.utime(f, (now - age * DAY, now - age * DAY))
    torn = write(root / "projects" / "-p" / "torn.jsonl", _claude_line(9) + b'{"type":')
    # written "in an hour": however slow the machine, its tail has not settled (2 s quiet)
    os.utime(torn, (now + 3600, now + 3600))
    env = {"CLAUDE_CONFIG_DIR": str(root), "CODEX_HOME": str(tmp_path / "nocodex")}
    out = run_cli(home, "capture", "--json", "--no-index", env=env)
    assert out.returncode == 0, out.stderr.decode()
    out = run_cli(home, "audit", "--json", env=env)
    assert out.returncode == 0, out.stderr.decode()
    cap = json.loads(out.stdout)["capture"]
    assert str(tmp_path / "nocodex") in cap["missing_roots"]
    sess = cap["by_layout"]["claude.session"]
    assert sess["files"] == 5
    assert sess["pending"] == 1  # the torn tail waits
    if cap["parsers"] == "readers.parse":
        assert sess["records"] >= 5
        assert sum(sess["unknown_types"].values()) >= 4
    (ret,) = cap["claude_retention"]
    assert ret["cleanupPeriodDays"] == 10 and ret["setting"] == "settings.json"
    assert ret["transcripts"] == 5
    assert ret["deleted_within_7_days"] == 3
    assert ret["of_which_captured"] == 3


def test_census_without_parsers(tmp_path: Path) -> None:
    root = tmp_path / "codex"
    write(root / "history.jsonl", b'{"session_id":"a","ts":1,"text":"hi"}\n')
    log = EventLog(tmp_path / "log")
    try:
        capture(log, roots_of(codex=root))
        kinds = census(log, parse=False)
    finally:
        log.close()
    assert kinds["codex.history"]["files"] == 1
    assert kinds["codex.history"]["bytes"] == 38
    assert kinds["codex.history"]["records"] is None
