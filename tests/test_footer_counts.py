"""Every count of `search`'s footer explains itself, and `agentlog audit` names what it
counts: the file whose last line is not yet ended, the record type no parser reads."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

SID = "eeeeeeee-0000-4000-8000-000000000001"


def _line(n: int, kind: str, **extra: object) -> str:
    return json.dumps({"isSidechain": False, "userType": "external", "cwd": "/p/x",
                       "sessionId": SID, "version": "2.1.90", "parentUuid": None,
                       "uuid": f"u{n}", "timestamp": f"2026-04-02T10:00:0{n}.000Z",
                       "type": kind, **extra})


def test_footer_counts_are_named_by_audit(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    session = claude / "projects" / "-p-x" / f"{SID}.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(
        _line(1, "user", message={"role": "user", "content": "hello wombat"}) + "\n"
        + _line(2, "frobnicate-event", data={"x": 1}) + "\n"
        + _line(3, "user", message={"role": "user", "content": "torn"}),  # no newline yet
        encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    home = tmp_path / "home"
    proc = run_cli(home, "capture", "--claude-dir", str(claude), "--codex-dir", str(empty),
                   "--opencode-dir", str(empty), "--runs-dir", str(empty))
    assert proc.returncode == 0, proc.stderr
    footer = run_cli(home, "search", "wombat").stdout.decode().splitlines()[-1]
    assert "1 record(s) of a type no parser reads yet (kept in the log)" in footer
    assert "`agentlog audit` names them" in footer
    audit = json.loads(run_cli(home, "audit", "--json").stdout)["capture"]
    source = f"projects/-p-x/{SID}.jsonl"
    (pending,) = audit["pending_files"]
    assert pending["source"].endswith(source) and "a line not yet ended" in pending["why"]
    assert pending["size"] - pending["captured"] == len(_line(3, "user", message={
        "role": "user", "content": "torn"}).encode())
    (unknown,) = audit["unknown_records"]
    assert unknown["type"] == "claude:frobnicate-event" and unknown["source"].endswith(source)
    text = run_cli(home, "audit", env={"COLUMNS": "300"}).stdout.decode()
    assert f"{source} (claude.session): " in text and "a line not yet ended" in text
    assert "unknown record type claude:frobnicate-event ×1 in " in text
