"""Search by meaning kept current in the background: the capture loop's idle step starts
`agentlog embed` as a child process, niced (os.nice 10) and on one thread, whenever
history.db has documents the embedding projection has not read (`projections.meaning.behind`,
two small SQLite reads, no model). One child at a time per loop (and one embedder per home:
the projection's own lock); each runs for at most `CHILD_S` and the next idle step starts
another while work is left. Its memory (the model, ~150 MB) is never the loop's process's.

config.json `{"meaning": {"background": false}}` or AGENTLOG_EMBED=0 turns it off (`agentlog embed`
still works; the test suite sets AGENTLOG_EMBED=0 but for the tests of this module).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from cli.services.config import Home

CHILD_S = 120      # seconds one child embeds before it exits (the next one resumes)
CHECK_EVERY_S = 5  # how often an idle loop asks whether the projection is behind
FAILED_WAIT_S = 600  # after a child that failed (a bad model setting, a broken install)


class Embedder:
    def __init__(self, home: Home) -> None:
        self.home = home
        self._proc: subprocess.Popen[bytes] | None = None
        self._next = 0.0

    def enabled(self) -> bool:
        if not allowed():
            return False
        conf = self.home.config.get("meaning") or {}
        return not (isinstance(conf, dict) and conf.get("background") is False)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def poke(self) -> bool:
        """Start a child if none runs and the projection is behind; whether one runs."""
        if self.running():
            return True
        now = time.monotonic()
        if self._proc is not None:  # the last child ended
            if self._proc.returncode != 0:  # a child that fails is not started every 5 s
                self._next = now + FAILED_WAIT_S
            self._proc = None
        if now < self._next or not self.enabled():
            return False
        self._next = now + CHECK_EVERY_S
        from projections.meaning.progress import behind

        if not behind(self.home.history_db, self.home.meaning_dir):
            return False
        self._proc = spawn(self.home, "--json", "--seconds", str(CHILD_S), lower=True)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """End the child (its append is crash-safe: a cut append is cut off)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _lower() -> None:
    """In the child before it runs: niced, and (Linux) sent SIGTERM when the thread that
    started it ends, so a loop killed outright never leaves a child embedding for minutes."""
    os.nice(10)
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def allowed() -> bool:
    """Whether agentlog may start a background process of search by meaning at all
    (AGENTLOG_EMBED=0: never; the test suite sets it)."""
    return os.environ.get("AGENTLOG_EMBED", "1") != "0"


def spawn(home: Home, *args: str, lower: bool = False) -> subprocess.Popen[bytes]:
    """`agentlog --home HOME embed ARGS…` detached (its own session, no standard streams), on
    one BLAS thread (background work beside the agent the user runs); `lower`: niced and
    ended with the thread that starts it (`_lower`)."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(home.root), "embed", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=_lower if lower else None, start_new_session=True, env=env)
