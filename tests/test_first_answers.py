"""What a search says while a home is being read (issue 29), on real Claude Code transcripts
of ../shared/corpus linked into a temporary user home (never copied into the project).

- Honest coverage: `caughtUp` is never true while a discovered file is unread, not even in
  the moment a new capture loop takes over from one that had caught up (its note is the
  predecessor's until it writes its own); files not read yet count in `pendingFiles`.
- First answer on a new home: `agentlog --home H mcp` spawned by the real MCP client on a
  never-captured home answers an old word of a transcript on its very first call, because a
  search waits (up to ~3 s) for the home's first capture pass; when the pass takes longer,
  the answer says so in one line.

Every wait polls for a condition with a deadline; nothing asserts on elapsed time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.services.capture import loop as capture_loop
from cli.services.capture import status as capture_status
from cli.services.config import Home
from tests.conftest import ROOT

pytestmark = pytest.mark.corpus
DEADLINE_S = 60.0
SESSION = "5eac5945-4cf4-4f5c-a46a-1f8dacb407aa"  # hillviewcap-pai's thinking session


def claude_files(corpus: Path) -> list[Path]:
    """The corpus's top-level Claude Code transcripts that hold records (not subagents)."""
    found = sorted(p for p in (corpus / "claude-code").glob("*/*.jsonl") if p.stat().st_size)
    assert len(found) >= 6, found
    return found


def link(src: Path, user: Path, project: str = "-corpus") -> Path:
    """`src` as a transcript of `user`'s ~/.claude (a hard link; a copy across devices)."""
    name = src.name.split("__", 1)[-1]
    dest = user / ".claude" / "projects" / project / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        dest.write_bytes(src.read_bytes())
    return dest


def _coverage(home: Home) -> dict[str, Any]:
    from cli.services import calls

    return calls.coverage(home)


@pytest.fixture
def slow_ticks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each capture tick takes 0.1 s longer, so a pass over a few files lasts seconds."""
    from readers.capture import Capturer

    tick = Capturer.tick

    def slow(self: Capturer) -> bool:
        time.sleep(0.1)
        return tick(self)

    monkeypatch.setattr(Capturer, "tick", slow)
    yield


def test_caught_up_only_once_every_file_is_read(tmp_path: Path, home: Path, corpus: Path,
                                                slow_ticks: None) -> None:
    from readers.roots import Root

    user = tmp_path / "user"
    files = claude_files(corpus)
    for src in files[:2]:
        link(src, user)
    h = Home(home)
    roots = [Root("claude", user / ".claude", "flag", True)]
    first = capture_loop.CaptureLoop(h, roots=roots, events=False).start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not _coverage(h)["caughtUp"]:
            assert time.monotonic() < deadline, _coverage(h)
            time.sleep(0.05)
    finally:
        first.stop()
    # the note still says caught up; the next loop finds files nobody has read
    for src in files[2:]:
        link(src, user)
    second = capture_loop.CaptureLoop(h, roots=roots, events=False,
                                      engine_options={"polls_per_tick": 1})
    seen: list[tuple[dict[str, Any], bool]] = []
    second.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            cov = _coverage(h)
            seen.append((cov, second._initial_done))  # read after: it only turns true
            if cov["caughtUp"]:
                break
            assert time.monotonic() < deadline, cov
            time.sleep(0.02)
    finally:
        second.stop()
    for cov, done in seen:
        assert not cov["caughtUp"] or done, ("caught up before the pass ended", cov)
    unread = [cov for cov, _ in seen if cov["capturing"] and (cov["pendingFiles"] or 0) > 0]
    assert unread and all(not cov["caughtUp"] for cov in unread), seen[:5]
    last = seen[-1][0]
    assert last["pendingFiles"] == 0 and last["pendingEvents"] == 0


def test_a_long_first_pass_is_said_in_one_line(tmp_path: Path, home: Path, corpus: Path,
                                               slow_ticks: None) -> None:
    from cli.services import calls
    from readers.roots import Root

    user = tmp_path / "user"
    for src in claude_files(corpus):
        link(src, user)
    h = Home(home)
    roots = [Root("claude", user / ".claude", "flag", True)]
    loop = capture_loop.CaptureLoop(h, roots=roots, events=False,
                                    engine_options={"polls_per_tick": 1}).start()
    try:
        # the pass takes more than the search's wait: the answer says how far it got
        deadline = time.monotonic() + DEADLINE_S
        while True:
            line = capture_status.first_pass(h, wait_s=0.2)
            assert line is not None, "the first pass ended before it was seen running"
            if " of " in line:
                break
            assert time.monotonic() < deadline, line
        assert line.startswith("history is still being read: ") and "\n" not in line
        assert line.endswith("files; try again in a few seconds") or "found so far" in line
        res = calls.search(h, "the")
        if not res["coverage"]["caughtUp"]:
            assert res["coverage"]["reading"].startswith("history is still being read")
        # once the pass is over a search no longer waits or says so
        assert loop.first_pass_over.wait(DEADLINE_S)
        assert capture_status.first_pass(h, wait_s=0.0) is None
        assert "reading" not in calls.search(h, "the")["coverage"]
    finally:
        loop.stop()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_new_home_answers_its_first_search(tmp_path: Path, home: Path,
                                                   corpus: Path) -> None:
    from mcp import Client, StdioServerParameters

    user = tmp_path / "user"
    src = next(p for p in claude_files(corpus) if SESSION in p.name)
    link(src, user, "-home-jenkins-Personal-AI-Infrastructure")
    assert not (home / "log").exists() and not (home / "history.db").exists()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(home), "mcp"],
        env={"HOME": str(user), "PATH": os.environ["PATH"]}, cwd=str(ROOT))
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        res = await client.call_tool("search_history", {"query": "placeholder"})
        assert not res.is_error, res.content
        text = res.content[0].text  # type: ignore[union-attr]
        # the very first call, right after the spawn: the word from the transcript
        hits = [line for line in text.splitlines() if line.startswith("@")]
        assert hits, text
        assert all("placeholder" in line.lower() for line in hits)
        heads = [line for line in text.splitlines() if " session " in line]
        assert heads and all(line.endswith(f"session {SESSION}") for line in heads)


def test_no_wait_without_a_first_pass(home: Path) -> None:
    """A home nobody captures is answered at once (no wait, no line)."""
    start = time.monotonic()
    assert capture_status.first_pass(Home(home), wait_s=30.0) is None
    assert time.monotonic() - start < 20.0
