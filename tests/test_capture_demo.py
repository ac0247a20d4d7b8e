"""`agentlog demo`: the synthetic corpus is captured, restorable and searchable."""

from __future__ import annotations

import json
from pathlib import Path

from cli.services.demo_corpus import PHRASES
from tests.conftest import run_cli


def test_demo_captures_restores_and_searches(tmp_path: Path, home: Path) -> None:
    out = run_cli(home, "demo", "--dir", str(tmp_path / "src"))
    assert out.returncode == 0, out.stderr.decode()
    text = out.stdout.decode()
    assert "captured 14 files" in text
    for phrase in PHRASES.values():
        hits = run_cli(home, "search", "--json", phrase)
        assert hits.returncode == 0, hits.stderr.decode()
        assert json.loads(hits.stdout)["hits"], phrase
    res = run_cli(home, "restore", "--to", str(tmp_path / "back"), "--json")
    assert res.returncode == 0, res.stderr.decode()
    for agent in ("claude", "codex", "runs"):
        for f in (tmp_path / "src" / agent).rglob("*"):
            if f.is_file():
                back = tmp_path / "back" / agent / f.relative_to(tmp_path / "src" / agent)
                assert back.read_bytes() == f.read_bytes(), f
    again = run_cli(home, "demo", "--dir", str(tmp_path / "src"), "--no-search")
    assert "0 events appended" in again.stdout.decode()
