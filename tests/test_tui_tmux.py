"""`agentlog browse` in a real terminal (tmux), on a home of the shared corpora (issue 30).

The pilot tests (tests/test_tui.py) drive the app in-process; this one runs the installed
command in a tmux pane, types into it as a person would and reads the screen back with
`capture-pane`: the query typed, the results drawn with their agents, the preview pane.
(It found that a transcript holding "[/home/…]" ended the browser: string cells of a
DataTable are Rich markup.)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from eventlog.store import EventLog
from projections.catchup import catch_up
from tests.conftest import ROOT, need
from tests.corpus_home import capture_all, corpus_roots


def _screen(sock: str) -> str:
    return subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", "t"],
                          capture_output=True, text=True, timeout=10).stdout


def _wait(sock: str, ok: object, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(sock)
        if ok(screen):  # type: ignore[operator]
            return screen
        time.sleep(0.3)
    raise AssertionError(f"the screen never showed it:\n{screen}")


def test_browse_under_tmux_on_a_real_corpus_home(tmp_path: Path, corpus: Path,
                                                 corpus_more: Path) -> None:
    need(shutil.which("tmux"), "tmux is not installed (scripts/install-browser.sh installs it)")
    home = tmp_path / "home"
    log = EventLog(home / "log")
    assert capture_all(log, corpus_roots(corpus, corpus_more, tmp_path / "stage")) > 0
    catch_up(home / "history.db", log)
    log.close()
    sock = f"agentlog-test-{tmp_path.name}"
    cmd = f"cd {ROOT} && {sys.executable} -m cli.main --home {home} browse"
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-s", "t", "-x", "160", "-y",
                    "45", cmd], check=True, timeout=10)
    try:
        _wait(sock, lambda s: "search your agents' history" in s)
        subprocess.run(["tmux", "-L", sock, "send-keys", "-t", "t", "-l", "error"],
                       check=True, timeout=10)
        agents = ("claude", "codex", "opencode", "gemini", "qwen", "aider", "cline")
        screen = _wait(sock, lambda s: "hit(s)" in s)
        rows = [ln for ln in screen.splitlines()
                if any(f" {a} " in ln for a in agents) and ln.strip()[:2] in ("20", "19")]
        assert len(rows) >= 3, screen  # result rows: time, agent, project
        assert any("error" in ln for ln in screen.splitlines()[:3]), screen  # the query box
        assert "│" in rows[0], screen  # the preview pane beside the results
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)
