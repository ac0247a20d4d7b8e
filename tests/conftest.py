"""Shared fixtures: temporary homes, the CLI as a subprocess, the shared corpus."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import settings

os.environ["AGENTLOG_EMBED"] = "0"  # see _isolated_env

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("AGENTLOG_CORPUS", ROOT.parent / "shared" / "corpus")).resolve()
CORPUS_MORE = Path(
    os.environ.get("AGENTLOG_CORPUS_MORE", ROOT.parent / "shared" / "corpus-more")
).resolve()
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


# Hypothesis: under CI every property test runs at least CI_EXAMPLES examples (tests that set
# their own max_examples pass it through `examples()`); locally the faster defaults hold.
CI_EXAMPLES = 200
settings.register_profile("ci", max_examples=CI_EXAMPLES, deadline=None, print_blob=True)
if IN_CI:
    settings.load_profile("ci")


def examples(local: int) -> int:
    """max_examples for a property test: `local` on a laptop, at least CI_EXAMPLES in CI."""
    return max(local, CI_EXAMPLES) if IN_CI else local


def unavailable(reason: str) -> NoReturn:
    """A prerequisite (corpus, browser, server) is missing.

    In CI (`CI=true`) that is a failure: CI promises to run every test. Elsewhere the test
    skips and says why.
    """
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: a missing prerequisite fails)", pytrace=False)
    pytest.skip(reason)


def need(condition: object, reason: str) -> None:
    """`unavailable(reason)` unless `condition` holds."""
    if not condition:
        unavailable(reason)


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
    # No capture loop starts the embedding child, no search the query server (a model load
    # per home, processes that outlive the test): the tests of search by meaning embed
    # themselves, and test_meaning turns it back on to test it. (Also set at import, below,
    # for fixtures of a wider scope, which run before this one.)
    monkeypatch.setenv("AGENTLOG_EMBED", "0")
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
    need(CORPUS.is_dir(), f"shared corpus not present at {CORPUS}")
    return CORPUS


@pytest.fixture
def corpus_more() -> Path:
    need(CORPUS_MORE.is_dir(), f"shared corpus-more not present at {CORPUS_MORE}")
    return CORPUS_MORE


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


def json_of_each(code: str, modes: tuple[str, ...]) -> dict[str, Any]:
    """`python -c CODE MODE` for each mode (each must exit 0): its JSON output, by mode."""
    out = {}
    for mode in modes:
        proc = subprocess.run([sys.executable, "-c", code, mode], capture_output=True,
                              text=True, cwd=ROOT, timeout=60)
        assert proc.returncode == 0, proc.stderr
        out[mode] = json.loads(proc.stdout)
    return out


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """One real PostgreSQL server for the test session (skipped with the reason on a laptop
    without the server binaries; a failure under CI=true)."""
    from tests.pgserver import find_bin, start_server

    bindir, why = find_bin()
    if bindir is None:
        unavailable(why)
    server = start_server(bindir)
    yield server
    server.destroy()


_pg_dbs = [0]


@pytest.fixture
def pg_url(pg_server: object) -> str:
    """A fresh database on the session's server (superuser URL)."""
    _pg_dbs[0] += 1
    url: str = pg_server.createdb(f"t{os.getpid()}_{_pg_dbs[0]}")  # type: ignore[attr-defined]
    return url


@contextmanager
def stop_and_continue(pid: int) -> Iterator[list[int]]:
    """SIGSTOP then SIGCONT `pid` every few milliseconds until the block ends; yields a
    list holding the number of stops made."""
    done = threading.Event()
    stops = [0]

    def storm() -> None:
        while not done.is_set():
            try:
                os.kill(pid, signal.SIGSTOP)
                time.sleep(0.001)
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                return
            stops[0] += 1
            time.sleep(0.004)

    thread = threading.Thread(target=storm, daemon=True)
    thread.start()
    try:
        yield stops
    finally:
        done.set()
        thread.join()
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No test leaves a query server of search by meaning running (`agentlog embed --serve`
    outlives its caller by design: a test that starts one must stop it)."""
    try:
        base = str(session.config._tmp_path_factory.getbasetemp())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else []):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--serve" in argv and b"embed" in argv and any(base.encode() in a for a in argv):
            left.append(pid)
            os.kill(int(pid), signal.SIGTERM)
    if left:
        sys.stderr.write(f"\nquery servers left running by the tests (stopped): {left}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
