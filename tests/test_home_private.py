"""The home holds secrets: 0700 folders and 0600 files, an old loose home tightened once."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.conftest import run_cli

FACT = json.dumps({"type": "message", "id": "m1", "from": "a", "to": ["b"], "kind": "message",
                   "body": "token=SECRET",
                   "at": "2026-11-01T10:00:00Z"}).encode() + b"\n"


def _modes(home: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(os.lstat(home).st_mode)}
    for p in home.rglob("*"):
        if not p.is_symlink():
            out[str(p.relative_to(home))] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


def test_a_new_home_is_private(tmp_path: Path) -> None:
    home = tmp_path / "new-home"
    assert run_cli(home, "record", input=FACT).returncode == 0
    assert run_cli(home, "search", "SECRET").returncode == 0
    assert run_cli(home, "backup").returncode == 0
    modes = _modes(home)
    live = (home / "history.db").resolve().name  # a link to its generation (not counted)
    for must in ("log/data.mdb", live, "."):
        assert must in modes
    assert any(k.startswith("backups/") and k.endswith("data.mdb") for k in modes)
    loose = {k: oct(m) for k, m in modes.items() if m & 0o077}
    assert loose == {}


def test_an_existing_loose_home_is_tightened_once(tmp_path: Path) -> None:
    home = tmp_path / "old-home"
    assert run_cli(home, "record", input=FACT).returncode == 0
    for p in [home, *home.rglob("*")]:  # what an older version left behind
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    first = run_cli(home, "record", input=FACT.replace(b"m1", b"m2"))
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(b"private") == 1
    assert {k: oct(m) for k, m in _modes(home).items() if m & 0o077} == {}
    again = run_cli(home, "record", input=FACT.replace(b"m1", b"m3"))
    assert again.returncode == 0 and b"private" not in again.stderr


def test_a_home_just_created_says_nothing_about_privacy(tmp_path: Path) -> None:
    """`demo` writes its sources into a new home before the log: tightened, not announced."""
    home = tmp_path / "demo-home"
    proc = run_cli(home, "demo", "--no-search")
    assert proc.returncode == 0, proc.stderr
    assert b"private" not in proc.stderr
    assert {k: oct(m) for k, m in _modes(home).items() if m & 0o077} == {}
