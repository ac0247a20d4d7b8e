"""`cli.fast`: `hooks run` without click runs what the click command runs, with the same
arguments, and hands everything it does not fully understand to click."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli import fast
from cli.group import cli as click_group
from cli.services.capture import hook as hook_run


def _via_click(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> list[Any]:
    calls: list[Any] = []
    monkeypatch.setattr(hook_run, "run",
                        lambda home, client, args: calls.append((home.root, client, args)))
    result = CliRunner().invoke(click_group, argv)
    assert result.exit_code == 0, result.output
    return calls


@pytest.mark.parametrize("rest", [
    ["claude"], ["codex", "{}"], ["codex", "--", "notify-send", "-u", "low", "{}"],
    ["codex", "--", "prog", "--", "x", "{}"], ["codex", "prog", "--", "-x", "{}"],
    ["codex"], ["claude", "extra"],
])
def test_same_arguments_as_the_click_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                              rest: list[str]) -> None:
    argv = ["--home", str(tmp_path), "hooks", "run", *rest]
    parsed = fast.parse_hook(argv)
    assert parsed is not None
    home, client, args = parsed
    assert _via_click(monkeypatch, argv) == [(tmp_path, client, args)]
    assert home == str(tmp_path)
    calls: list[Any] = []
    monkeypatch.setattr(hook_run, "run",
                        lambda home, client, args: calls.append((home.root, client, args)))
    assert fast.hooks_run(argv) is True
    assert calls == [(tmp_path, client, args)]


@pytest.mark.parametrize("argv", [
    ["hooks", "run", "claude", "--help"], ["hooks", "run", "gemini"], ["hooks", "run"],
    ["hooks", "install", "claude"], ["--version", "hooks", "run", "claude"],
    ["hooks", "--help", "run", "claude"], ["hooks", "run", "codex", "-x", "{}"],
    ["search", "--json", "a"], [],
])
def test_hands_the_rest_to_click(argv: list[str]) -> None:
    assert fast.parse_hook(argv) is None
    assert fast.hooks_run(argv) is False


def test_a_hook_process_imports_no_click(tmp_path: Path) -> None:
    payload = json.dumps({"transcript_path": str(tmp_path / "nowhere.jsonl")})
    code = ("import sys\nfrom cli.main import main\n"
            f"main(['--home', {str(tmp_path / 'home')!r}, 'hooks', 'run', 'claude'])\n"
            "print('click' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], input=payload.encode(),
                          capture_output=True, cwd=Path(__file__).resolve().parent.parent,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"False\n"
    assert proc.stderr.count(b"\n") == 1 and b"under no capture root" in proc.stderr
