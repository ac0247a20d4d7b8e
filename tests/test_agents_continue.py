"""Continue sessions on ../shared/corpus-more (both workspace-path dialects)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from readers.agent_continue import project_of
from tests.agents_corpus import capture_home, coverage_unknown, found, homes

pytestmark = [pytest.mark.corpus, pytest.mark.real_data("continue")]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))


def test_capture_finds_every_session(tmp_path: Path) -> None:
    sessions = 0
    for i, home in enumerate(homes("continue")):
        cap = capture_home("continue", home, tmp_path / str(i))
        for path in sorted((home / ".continue" / "sessions").glob("*.json")):
            if path.name == "sessions.json":
                continue
            obj = json.loads(path.read_bytes())
            texts = [_text(h["message"]["content"]) for h in obj["history"]
                     if h["message"]["role"] == "user"]
            texts = [t for t in texts if 15 < len(t) < 3000]
            if not texts:
                continue
            hits = found(cap.db, "continue", obj["sessionId"], texts[0])
            assert hits, (home.name, path.name)
            # every dialect names the same folder on the user's machine
            # (a Windows path is one project whatever its case: stored folded)
            assert {h["project"] for h in hits} == {"C:\\users\\acodu\\dev\\dashboard_mictlan"}
            sessions += 1
        assert coverage_unknown(cap.db) == {}
    assert sessions >= 3  # 4 non-empty sessions; one has no user prompt of 15..3000 chars


def test_workspace_dialects() -> None:
    assert project_of("C:\\Users\\a\\p") == "C:\\Users\\a\\p"
    assert project_of("file:///c%3A/Users/a/p") == "C:\\Users\\a\\p"
    host = json.dumps({"hostPath": "c:\\Users\\a\\p"}).encode().hex()
    assert project_of(f"vscode-remote://dev-container%2B{host}/workspaces/p") == "C:\\Users\\a\\p"
    assert project_of("vscode-remote://ssh-remote%2Bbox/home/a/p") == "/home/a/p"
    assert project_of("file:///home/a/p") == "/home/a/p"
    assert project_of("") is None and project_of(None) is None
