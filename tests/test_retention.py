"""Claude Code's cleanupPeriodDays: the once-a-day warning and `retention claude --days`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.conftest import run_cli

LINE = b'{"type":"user","message":{"role":"user","content":"hello"},"uuid":"u1"}\n'


def _transcripts() -> tuple[Path, list[Path]]:
    claude = Path(os.environ["HOME"]) / ".claude"
    folder = claude / "projects" / "-tmp-app"
    folder.mkdir(parents=True)
    old = []
    for i, age_days in enumerate((25, 28, 40, 2)):
        f = folder / f"s{i}.jsonl"
        f.write_bytes(LINE)
        t = time.time() - age_days * 86400
        os.utime(f, (t, t))
        if age_days > 23:
            old.append(f)
    return claude, old


def test_warning_once_a_day_counts_and_captured(home: Path) -> None:
    claude, old = _transcripts()
    (claude / "settings.json").write_text('{\n  "model": "opus",\n  "cleanupPeriodDays": 30\n}\n')
    proc = run_cli(home, "capture", "--path", str(old[0]), "--json")
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    assert "3 transcripts will be deleted within 7 days" in err, err
    assert "1 of them are captured in full, 2 are not" in err
    assert "projects/-tmp-app/s1.jsonl" in err and "s0.jsonl" not in err
    assert json.loads(proc.stdout)["appended"] > 0  # --json stdout stays clean
    again = run_cli(home, "service", "status", "--json")
    assert b"will be deleted" not in again.stderr  # once a day
    state = json.loads((home / "retention-warning.json").read_text())
    assert isinstance(state["lastWarningAt"], int)
    report = json.loads(run_cli(home, "retention", "claude", "--json").stdout)
    assert report["deletedWithinHorizon"] == 3 and report["capturedInFull"] == 1
    assert report["risky"] is True and report["cleanupPeriodDays"] == 30


def test_unset_setting_warns_and_retention_raises_it(home: Path) -> None:
    claude, _ = _transcripts()
    (claude / "settings.json").write_text('{"model": "opus", "env": {"X": "1"}}\n')
    proc = run_cli(home, "service", "status")
    assert b"unset (Claude Code's default: 30 days)" in proc.stderr
    proc = run_cli(home, "retention", "claude", "--days", "365")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((claude / "settings.json").read_text())
    assert data == {"model": "opus", "env": {"X": "1"}, "cleanupPeriodDays": 365}
    assert (claude / "settings.json.agentlog.bak").read_text() == \
        '{"model": "opus", "env": {"X": "1"}}\n'
    lower = run_cli(home, "retention", "claude", "--days", "100")
    assert b"already 365" in lower.stderr
    assert json.loads((claude / "settings.json").read_text())["cleanupPeriodDays"] == 365
    (home / "retention-warning.json").unlink()
    assert b"will be deleted" not in run_cli(home, "service", "status").stderr  # safe now


def test_no_claude_no_warning(home: Path) -> None:
    proc = run_cli(home, "service", "status")
    assert proc.returncode == 0 and b"cleanupPeriodDays" not in proc.stderr
