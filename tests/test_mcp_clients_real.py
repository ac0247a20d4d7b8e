"""`agentlog mcp install|uninstall AGENT`, checked by each agent's own CLI (issue 29).

The real CLIs from the npm registry, pinned and installed into `.clients/` by
scripts/install-clients.sh (`make test` runs it), in a temporary HOME: after `mcp install`
each CLI's own listing names the `agentlog` server (and, where the CLI checks its servers'
health, says it connected: a real `agentlog mcp` answered it); after `mcp uninstall` it
does not. Claude Code and Codex are installed with their CLI on PATH (agentlog runs
`claude mcp add`; Codex is always edited in its file), the others by editing their files.
Without the CLIs the test skips (fails under CI=true). No network is needed: update checks
and telemetry are off, and each run is bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, need, run_cli

BIN = ROOT / ".clients" / "node_modules" / ".bin"
# agent -> (its listing command, a word the listing shows when the server answered it, or
# None when the CLI only lists its configuration)
CLIENTS: dict[str, tuple[list[str], str | None]] = {
    "claude": (["claude", "mcp", "list"], "Connected"),
    "codex": (["codex", "mcp", "list"], None),
    "opencode": (["opencode", "mcp", "list"], "connected"),
    "gemini": (["gemini", "mcp", "list"], "Connected"),
    "qwen": (["qwen", "mcp", "list"], "Connected"),
    "copilot": (["copilot", "mcp", "list"], None),
    "amp": (["amp", "mcp", "list"], None),
    "cline": (["cline", "config", "mcp"], None),
}
NAME_ONLY = {"copilot", "cline"}  # listings that show the server's name, not its command
QUIET = {  # no update checks, telemetry or colour: nothing reaches for the network
    "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "GEMINI_CLI_DISABLE_AUTO_UPDATE": "1", "NO_UPDATE_NOTIFIER": "1", "NO_COLOR": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1", "COPILOT_DISABLE_UPDATE_CHECK": "1", "CI": "true",
}


def _env(user: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE_", "CODEX_", "XDG_", "COPILOT_", "GEMINI_"))}
    # this venv's `agentlog` (what mcp install registers) first, then the real CLIs: never
    # conftest's stand-ins for the answers feature
    path = [str(Path(sys.executable).parent), str(BIN),
            *[p for p in os.environ.get("PATH", "").split(os.pathsep)
              if not p.endswith("no-agent-clis") and p]]
    env.update(QUIET, HOME=str(user), PATH=os.pathsep.join(path),
               XDG_CONFIG_HOME=str(user / ".config"), XDG_DATA_HOME=str(user / ".local/share"),
               XDG_STATE_HOME=str(user / ".local/state"), XDG_CACHE_HOME=str(user / ".cache"))
    return env


def _listing(argv: list[str], user: Path, env: dict[str, str]) -> str:
    proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True,
                          env=env, cwd=user, timeout=120, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("agent", list(CLIENTS))
def test_the_client_s_own_cli_lists_the_server(agent: str, tmp_path: Path) -> None:
    argv, answered = CLIENTS[agent]
    need((BIN / argv[0]).exists(),
         f"{argv[0]} CLI not installed (scripts/install-clients.sh, `make test` runs it)")
    user = tmp_path / "user"
    user.mkdir()
    env = _env(user)
    if agent == "gemini":  # Gemini CLI runs no server of an untrusted folder
        (user / ".gemini").mkdir()
        (user / ".gemini" / "trustedFolders.json").write_text(
            json.dumps({str(user): "TRUST_FOLDER"}))
    if agent == "cline":  # the Cline CLI's data folder (a user who ran it has one)
        (user / ".cline" / "data").mkdir(parents=True)
    home = tmp_path / "al"
    before = _listing(argv, user, env)
    assert "agentlog" not in before, before

    proc = run_cli(home, "mcp", "install", agent, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    listed = _listing(argv, user, env)
    assert "agentlog" in listed, listed
    assert agent in NAME_ONLY or str(home) in listed, listed  # our command, this home
    if answered is not None:
        line = next(x for x in listed.splitlines() if "agentlog" in x and answered in x)
        assert line, listed

    proc = run_cli(home, "mcp", "uninstall", agent, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    after = _listing(argv, user, env)
    assert "agentlog" not in after, after
