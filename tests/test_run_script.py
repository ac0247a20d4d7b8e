"""`make run` (scripts/run.sh), the README's first command, leaves `agentlog` runnable by
name: the commands it suggests run as printed, and its last lines say how to put agentlog
on PATH when it is not there."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENTLOG = ROOT / ".venv" / "bin" / "agentlog"


@pytest.mark.skipif(not AGENTLOG.exists(), reason="no .venv/bin/agentlog (make setup makes it)")
def test_make_run_says_how_to_run_agentlog_by_name(tmp_path: Path) -> None:
    home = tmp_path / "user"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"),
               AGENTLOG_DEMO_HOME=str(tmp_path / "demo"), PATH="/usr/bin:/bin")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "run.sh")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    more = next(line for line in lines if line.startswith("More: "))
    first = more.removeprefix("More: ").split(" · ")[0].replace("<words>", "flamingo")
    ran = subprocess.run(shlex.split(first), env=env, capture_output=True, text=True,
                         timeout=120)  # the suggestion runs as printed, from any folder
    assert ran.returncode == 0 and "flamingo" in ran.stdout, (first, ran.stderr)
    export = next(line for line in lines[-3:] if "export PATH=" in line)
    by_name = subprocess.run(["bash", "-c", export.split("#")[0] + "; agentlog --help"],
                             env=env, capture_output=True, text=True, timeout=120,
                             cwd=tmp_path)
    assert by_name.returncode == 0 and "search" in by_name.stdout, by_name.stderr
    assert "pipx install" in lines[-1]
