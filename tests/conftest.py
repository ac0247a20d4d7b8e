"""Shared fixtures: temporary homes, the CLI as a subprocess, the shared corpus."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("AGENTLOG_CORPUS", ROOT.parent / "shared" / "corpus")).resolve()


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test may touch the real ~/.claude, ~/.codex or opencode data."""
    fake_home = tmp_path / "userhome"
    fake_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("XDG_DATA_HOME", str(fake_home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(fake_home / ".config"))
    from readers import registry

    agent_vars = {var for a in registry.REGISTRY for var, _ in a.env} - {"XDG_DATA_HOME"}
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "AGENTLOG_HOME", *sorted(agent_vars)):
        monkeypatch.delenv(var, raising=False)
    # No test may run a real agent CLI (answers): stand-ins that fail come first on PATH.
    # Tests of answers put their own fake binaries in front of these.
    stubs = tmp_path / "no-agent-clis"
    stubs.mkdir()
    for name in ("claude", "codex", "opencode"):
        stub = stubs / name
        stub.write_text("#!/bin/sh\necho 'real agent CLIs are disabled in tests' >&2\nexit 127\n")
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}{os.pathsep}{os.environ.get('PATH', '')}")
    yield


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "agentlog-home"
    h.mkdir()
    return h


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present at {CORPUS}")
    return CORPUS


def run_cli(
    home: Path,
    *args: str,
    input: bytes | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `agentlog --home HOME ARGS…` in a child process."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "--home", str(home), *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        cwd=ROOT,
        env=full_env,
    )
