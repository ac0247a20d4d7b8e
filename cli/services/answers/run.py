"""Running agent CLIs for answers: an isolated workspace, a scrubbed environment, hard timeouts.

Promises:
- Every probe and generation runs with cwd in a fresh, empty temporary directory (so no
  CLAUDE.md, AGENTS.md, .mcp.json or opencode.json is discovered), stdin closed or fed the
  prompt, and its own process group, which is killed whole when its timeout passes.
- The environment drops API keys and third-party provider switches, so a CLI can only use
  a plan login (subscription or free tier) and never bills per token behind the user's back.
- Output is bounded (`MAX_OUTPUT` per stream) and never logged: it holds transcript excerpts.
- The workspace and its state directories are deleted when the run ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

GENERATION_TIMEOUT = 60.0
MAX_OUTPUT = 8 * 1024 * 1024

# Keys and switches that would make a CLI bill per token (API keys, cloud providers) or
# load a user's own configuration into the answer run.
SCRUBBED_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "CODEX_API_KEY",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "AGENTLOG_HOME",
    # Set inside a Claude Code session (its Bash tool, its MCP servers); a child `claude`
    # refuses to start as a "nested session" while it is set.
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SSE_PORT",
)

QUIET_VARS = {
    "NO_COLOR": "1",
    "TERM": "dumb",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    # Marks the process tree as an answer run; documented in docs/answers.md.
    "AGENTLOG_ANSWER_RUN": "1",
}


@dataclass
class Completed:
    """What one CLI process did."""

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    missing: bool = False


def base_env(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every answer subprocess (probes and generation alike)."""
    env = dict(os.environ if source is None else source)
    for name in SCRUBBED_VARS:
        env.pop(name, None)
    env.update(QUIET_VARS)
    return env


@dataclass
class Workspace:
    """An empty cwd plus private state directories for one answer attempt."""

    cwd: Path
    state: Path
    env: dict[str, str] = field(default_factory=dict)
    probe_scale: float = 1.0
    generation_timeout: float = GENERATION_TIMEOUT
    home_state: Path | None = None

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.env.get("PATH", ""))


@contextmanager
def workspace(
    env: dict[str, str] | None = None,
    *,
    generation_timeout: float = GENERATION_TIMEOUT,
    probe_scale: float = 1.0,
    home_state: Path | None = None,
) -> Iterator[Workspace]:
    with tempfile.TemporaryDirectory(prefix="agentlog-answer-") as tmp:
        root = Path(tmp)
        cwd = root / "cwd"
        state = root / "state"
        cwd.mkdir()
        state.mkdir()
        yield Workspace(
            cwd=cwd,
            state=state,
            env=base_env() if env is None else env,
            probe_scale=probe_scale,
            generation_timeout=generation_timeout,
            home_state=home_state,
        )


def _decode(data: bytes | None) -> str:
    if not data:
        return ""
    return data[:MAX_OUTPUT].decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def run_process(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    stdin_text: str | None = None,
) -> Completed:
    """Run argv to completion or until `timeout` seconds pass, then kill its process group."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except FileNotFoundError:
        return Completed(returncode=None, missing=True)
    except OSError as exc:
        return Completed(returncode=None, stderr=f"cannot start {argv[0]}: {exc}", missing=True)
    data = stdin_text.encode("utf-8") if stdin_text is not None else None
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
        return Completed(proc.returncode, _decode(out), _decode(err), timed_out=True)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    # Leftover children of the CLI (e.g. MCP helpers) die with the group.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return Completed(proc.returncode, _decode(out), _decode(err))
