"""The background capture loop seen from outside: `agentlog mcp` processes over real stdio.

- A fresh home, `mcp install claude` and nothing else: the registered server finds a word
  of an existing transcript (coverage says pending until caught up), then a new line.
- Five servers on one home: exactly one captures (one writer in the log), none errors,
  all see new lines; when the capturing one exits another takes over.

Every wait polls for the condition with a deadline; nothing asserts on elapsed time.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from eventlog.events import WriterStarted
from tests.conftest import ROOT, run_cli
from tests.test_projections_support import claude_line

pytestmark = pytest.mark.anyio
DEADLINE_S = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _env() -> dict[str, str]:
    return {"HOME": os.environ["HOME"], "PATH": os.environ["PATH"]}


def _transcript(name: str, *lines: bytes) -> Path:
    path = Path(os.environ["HOME"]) / ".claude" / "projects" / "-work-proj" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        for line in lines:
            f.write(line)
    return path


@asynccontextmanager
async def spawn(command: list[str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env(),
                                   cwd=str(ROOT))
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        yield client


async def search(client: Client, word: str) -> dict[str, Any]:
    res = await client.call_tool("search_history", {"query": word, "detail": "full"})
    assert not res.is_error, res.content[0].text  # type: ignore[union-attr]
    assert isinstance(res.structured_content, dict)
    return res.structured_content


async def until_found(client: Client, word: str) -> list[dict[str, Any]]:
    """Every answer up to (and including) the first one with a hit for `word`."""
    answers: list[dict[str, Any]] = []
    deadline = time.monotonic() + DEADLINE_S
    while True:
        answers.append(await search(client, word))
        if answers[-1]["hits"]:
            return answers
        assert time.monotonic() < deadline, f"{word!r} never became searchable: {answers[-1]}"
        await anyio.sleep(0.05)


def _writers(home: Path, *, shared: bool = False) -> set[int]:
    """Pids of the processes that wrote to the log (one `writer.started` each); `shared`:
    this process holds the log open already (LMDB opens an environment once a process)."""
    from eventlog import EventLog, open_log

    log = open_log(home / "log", readonly=True) if shared else EventLog(home / "log",
                                                                          readonly=True)
    try:
        return {se.event.pid for se in log.iter_events()
                if isinstance(se.event, WriterStarted)}
    finally:
        if not shared:
            log.close()


def _server_command(home: Path) -> list[str]:
    return [sys.executable, "-m", "cli.main", "--home", str(home), "mcp"]


async def test_fresh_home_mcp_install_and_nothing_else(tmp_path: Path, home: Path) -> None:
    _transcript("s1.jsonl", claude_line("u1", "user", "where did the quokka go"),
                claude_line("a1", "assistant", "it went home"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    recorded = tmp_path / "claude-args"
    fake = bin_dir / "claude"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {recorded}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    proc = run_cli(home, "mcp", "install", "claude",
                   env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    argv = recorded.read_text().splitlines()
    command = argv[argv.index("--") + 1:]  # exactly what Claude Code will spawn
    assert command[-3:] == ["--home", str(home), "mcp"]

    async with spawn(command) as client:
        answers = await until_found(client, "quokka")
        for earlier in answers[:-1]:  # no hit yet: coverage must not claim it is caught up
            assert earlier["coverage"]["caughtUp"] is False
        deadline = time.monotonic() + DEADLINE_S
        cov = answers[-1]["coverage"]
        while not cov["caughtUp"]:
            assert time.monotonic() < deadline, cov
            await anyio.sleep(0.05)
            cov = (await search(client, "quokka"))["coverage"]
        assert cov["capturing"] is True and cov["pendingFiles"] == 0
        assert cov["pendingEvents"] == 0 and cov["lastCaptureAgeS"] is not None

        _transcript("s1.jsonl", claude_line("u2", "user", "and the wombat too"))
        hit = (await until_found(client, "wombat"))[-1]["hits"][0]
        assert hit["agent"] == "claude" and "wombat" in hit["snippet"]


async def test_five_servers_one_capturer_all_see_new_lines(home: Path) -> None:
    _transcript("s1.jsonl", claude_line("u1", "user", "first word aardvark"))
    clients: list[Client] = []
    closers: list[anyio.Event] = []
    gone: list[anyio.Event] = []

    async def serve(ready: anyio.Event, close: anyio.Event, ended: anyio.Event) -> None:
        async with spawn(_server_command(home)) as client:
            clients.append(client)
            ready.set()
            await close.wait()
        ended.set()  # the server process has exited

    async with anyio.create_task_group() as tg:
        for i in range(5):
            ready, close = anyio.Event(), anyio.Event()
            closers.append(close)
            gone.append(anyio.Event())
            tg.start_soon(serve, ready, close, gone[-1])
            await ready.wait()
            if i == 0:  # the first server is elected: wait until it has captured
                await until_found(clients[0], "aardvark")
        for n, client in enumerate(clients):
            assert (await until_found(client, "aardvark"))[-1]["hits"]
            _transcript("s1.jsonl", claude_line(f"n{n}", "user", f"newword{n} okapi"))
            for other in clients:  # every server sees every new line
                await until_found(other, f"newword{n}")
        first = _writers(home)
        assert len(first) == 1  # exactly one process captured
        capturing = [(await search(c, "okapi"))["coverage"]["capturing"] for c in clients]
        assert capturing == [True] * 5  # each one knows the home is being captured

        closers[0].set()  # the capturing server exits; another one takes over
        # Written only once it has exited: while it still ran, it could capture the line
        # itself, and nobody would need to take over (one writer, not two).
        await gone[0].wait()
        _transcript("s2.jsonl", claude_line("t1", "user", "after the takeover pangolin"))
        for other in clients[1:]:
            await until_found(other, "pangolin")
        writers = _writers(home)
        assert len(writers) == 2
        # The lease's note names the process that took over (it publishes its note each
        # pass). Checked while every server still runs: once they are closed, one that
        # never wrote may take the lease on its way out and publish its own note.
        await _until_note(home, writers - first)
        for close in closers[1:]:
            close.set()


async def _until_note(home: Path, writers: set[int]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        raw = (home / "log" / "capture.lock").read_bytes().rstrip(b" \x00")
        pid = json.loads(raw)["pid"] if raw else None
        if pid in writers:
            return
        assert time.monotonic() < deadline, f"the lease's note names pid {pid}, not a writer"
        await anyio.sleep(0.05)


def _until(cond: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_loops_in_one_process_elect_one_and_take_over_polling(tmp_path: Path) -> None:
    """The election needs no separate processes (one flock per open file), and the
    polling fallback keeps up too."""
    from cli.services.capture.loop import CaptureLoop
    from cli.services.capture.status import coverage_fields
    from cli.services.config import Home
    from projections.query import search as run_search
    from tests.capture_helpers import roots_of

    home = Home(tmp_path / "home")
    root = tmp_path / "claude"
    f = root / "projects" / "-p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"".join(claude_line(f"u0{i}", "user", f"filler {i}") for i in range(6))
                  + claude_line("u1", "user", "capybara one"))

    def found(word: str) -> bool:
        return bool(run_search(home.history_db, word)["hits"])

    # batch_events=2: ticks commit full batches themselves, which must be indexed too
    opts: dict[str, Any] = {"roots": roots_of(claude=root), "settle_s": 0.0, "events": False,
                            "takeover_s": 0.05, "poll_s": 0.1,
                            "engine_options": {"batch_events": 2}}
    first = CaptureLoop(home, **opts).start()
    second: CaptureLoop | None = None
    try:
        _until(lambda: found("capybara"), "first capture")
        second = CaptureLoop(home, **opts).start()
        with open(f, "ab") as fh:
            fh.write(claude_line("u2", "user", "capybara two tapir"))
        _until(lambda: found("tapir"), "polled append")
        assert first.capturing and not second.capturing
        cov = coverage_fields(home, {"events": 10**9})
        assert cov["capturing"] is True
        first.stop()
        _until(lambda: second is not None and second.capturing, "takeover")
        with open(f, "ab") as fh:
            fh.write(claude_line("u3", "user", "after takeover gazelle"))
        _until(lambda: found("gazelle"), "append after takeover")
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert coverage_fields(home, {"events": 0})["capturing"] is False


def test_serve_captures_while_it_runs(home: Path) -> None:
    """`agentlog serve` keeps the home captured: /api/search finds an existing line, then a
    new one, and /api/coverage says it is capturing."""
    from tests.test_http_server import raw_get, start_server, stop

    _transcript("s1.jsonl", claude_line("u1", "user", "served narwhal"))
    served = start_server(home)
    try:
        headers = {"Host": f"127.0.0.1:{served.port}",
                   "Authorization": f"Bearer {served.token}"}

        def hits(word: str) -> list[Any]:
            status, _, body = raw_get(served.port, f"/api/search?q={word}", headers)
            assert status == 200, body
            found: list[Any] = json.loads(body)["hits"]
            return found

        _until(lambda: bool(hits("narwhal")), "existing line through serve")
        _transcript("s1.jsonl", claude_line("u2", "user", "then a manatee"))
        _until(lambda: bool(hits("manatee")), "new line through serve")
        status, _, body = raw_get(served.port, "/api/coverage", headers)
        cov = json.loads(body)["coverage"]
        assert status == 200 and cov["capturing"] is True and cov["lastCaptureAgeS"] is not None
    finally:
        assert stop(served) == 0


def test_capture_watch_waits_for_the_capturing_process_then_takes_over(
    tmp_path: Path, home: Path
) -> None:
    import signal
    import subprocess

    from cli.services.capture.loop import CaptureLoop
    from cli.services.config import Home
    from projections.query import search as run_search
    from tests.capture_helpers import roots_of

    root = tmp_path / "claude"
    f = root / "projects" / "-p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(claude_line("u1", "user", "held by another ibex"))
    h = Home(home)
    holder = CaptureLoop(h, roots=roots_of(claude=root), settle_s=0.0, events=False,
                         poll_s=0.1).start()
    _until(lambda: bool(run_search(h.history_db, "ibex")["hits"]), "holder captured")
    err = tmp_path / "watch.err"
    with open(err, "wb") as err_f:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "--home", str(home), "capture", "--watch",
             "--claude-dir", str(root), "--settle", "0"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_f)
    try:
        _until(lambda: b"waiting to take over" in err.read_bytes(), "watch says it waits")
        assert _writers(home, shared=True) == {os.getpid()}
        holder.stop()
        with open(f, "ab") as fh:
            fh.write(claude_line("u2", "user", "taken over by the watch jackal"))
        _until(lambda: bool(run_search(h.history_db, "jackal")["hits"]), "watch captured")
        assert _writers(home, shared=True) == {os.getpid(), proc.pid}
    finally:
        holder.stop()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, err.read_bytes().decode()
