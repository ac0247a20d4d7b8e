"""A reader that closes the pipe early (`agentlog search … | head -1`) ends agentlog quietly:
nothing on stderr (no traceback, no "Broken pipe" line), a non-zero exit (click's 1 when it
meets the closed pipe, `cli.main`'s 141 = 128 + SIGPIPE when it is met after click)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_search_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    demo = subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), "demo"],
                          capture_output=True, cwd=ROOT, timeout=300)
    assert demo.returncode == 0, demo.stderr
    # `history` pages through every turn: far more than one pipe buffer read by nobody
    for args in (["history", "--json"], ["search", "saffron", "rate", "limiter"]):
        proc = subprocess.Popen([sys.executable, "-m", "cli.main", "--home", str(home), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(1)  # the first byte, then hang up like `head -c1`
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
        assert err == b"", err
        assert code in (0, 1, 141), (args, code, err)
