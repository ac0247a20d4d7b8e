"""The capture loop: the one module that keeps a home captured for every front end.

`agentlog mcp` and `agentlog serve` run it in a background thread, `capture --watch` in
the foreground. Promises:

- One capture loop per home: a process captures only while it holds the home's capture
  lease (`eventlog.lock.Lease`, `<home>/log/capture.lock`, beside the writer lock). Every
  other process of the home only reads, and tries the lease again every `takeover_s`
  (2 s): when the capturing process exits (even kill -9) another one takes over within a
  few seconds. The lease holder still takes the writer lock only while it appends.
- Bounded like `capture`: the same tick engine, a commit at least every 0.5 s while busy.
  File events (`readers.capture_watch`: inotify on Linux) name the files to poll first;
  a complete pass over every file runs every `safety_s` (30 s, walking the roots again),
  or `settle_s` after a pass that left an unterminated tail. Without file events a
  complete pass runs every `poll_s` (2 s). Idle, the loop sleeps.
- A full disk never ends the loop: a failed commit (`LogFull`) is said once, and the loop
  waits `retry_s` and starts again from the committed cursors until there is space (a
  history.db that cannot follow is reported once by `cli.services.catchup`).
- While idle the loop makes the champion lists a rebuild or catch-up left wanted
  (`projections.catchup.make_lists`), one bounded step (~0.2 s) per `list_pause_s`, so no
  hook or one-shot capture pays for them; a busy history.db only postpones a step.
- When no list is wanted, the idle step keeps search by meaning current: a niced child
  `agentlog embed` whenever history.db has documents not embedded yet
  (`cli.services.capture.embedder`; AGENTLOG_EMBED=0 or config `meaning.background: false`
  turns it off).
- After every commit history.db is caught up (`cli.services.catchup.after_append`).
  A search answers from history.db as it is, and `coverage_fields` says what is still
  pending (from the note the holder publishes in the lease file: first when elected, so a
  predecessor's note never speaks for it, then at every commit and every 0.25 s of a pass).
  `caughtUp` only after the holder's own first complete pass, with no file unread (never
  read, a backlog, queued by a file event, an unfinished line) and no event unindexed.
- The one wait: while the first pass of a home no loop ever caught up runs, a search waits
  for it up to ~3 s (`cli.services.capture.status.first_pass`, which reads the note and
  this process's running loops, `status.LOOPS`).
- Importing this module imports nothing of the capture machinery; the loop imports it
  once elected. Transcript text is never logged.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from cli.services.capture.status import LOOPS, holder, key, lease, now_ms, read_note
from cli.services.config import Home

COMMIT_EVERY_S = 0.5
PUBLISH_EVERY_S = 0.25  # the note's figures while a pass runs (coverage, first answers)
LIST_PAUSE_S = 0.5  # idle time between two steps of champion-list making
# a process that captures in a thread (mcp, serve) hands the GIL on every 0.5 ms instead of
# Python's 5 ms, so a request's thread never waits long behind the catch-up's Python loops
# (bench/burst.py: a needle's p99 during a burst in the capturing process 83 -> 46-49 ms)
SWITCH_INTERVAL_S = 0.0005


def _warn(message: str) -> None:
    sys.stderr.write(f"agentlog: {message}\n")
    sys.stderr.flush()


class CaptureLoop:
    """Elect, then capture until stopped (see the module doc)."""

    def __init__(
        self,
        home: Home,
        *,
        roots: list[Any] | None = None,
        settle_s: float = 2.0,
        index: bool = True,
        events: bool | None = None,
        on_commit: Callable[[Any], None] | None = None,
        on_wait: Callable[[str], None] | None = None,
        takeover_s: float = 2.0,
        poll_s: float = 2.0,
        safety_s: float = 30.0,
        retry_s: float = 10.0,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        self.home = home
        self.roots = roots
        self.settle_s = settle_s
        self.index = index
        # AGENTLOG_FILE_EVENTS=0 forces polling (a filesystem without events; benchmarks)
        self.events = events if events is not None else (
            os.environ.get("AGENTLOG_FILE_EVENTS", "1") != "0")
        self.on_commit = on_commit
        self.on_wait = on_wait
        self.takeover_s = takeover_s
        self.poll_s = poll_s
        self.safety_s = safety_s
        self.retry_s = retry_s
        self.engine_options = dict(engine_options or {})  # more readers.capture.Options
        self.stop_event = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lease = lease(home)
        self.engine: Any = None
        self.mode = "none"  # "events" or "poll" while capturing
        self._since = 0
        self._initial_done = False
        self._full_said = False
        self._behind = False  # history.db was not caught up after the last commit (busy)
        self._indexed = 0  # engine.stats.appended when history.db was last caught up
        self._wanted = False  # champion lists may be wanted (after a catch-up)
        self._embedder: Any = None  # the embedding child's keeper (capture/embedder.py)
        # set once this process knows its first pass is no search's business any more: it
        # ended, another process captures (its note speaks), or the loop stopped or failed
        self.first_pass_over = threading.Event()
        self._ever = False  # some loop finished a complete pass of this home (`everCaughtUp`)

    # --- running ----------------------------------------------------------------------

    def start(self) -> CaptureLoop:
        """Run in a daemon thread (mcp, serve)."""
        if self._thread is None:
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
            LOOPS[key(self.home)] = self
            self._thread = threading.Thread(target=self.run, name="agentlog-capture",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current tick; pending events are committed first."""
        self.stop_event.set()
        self._wake.set()
        self.first_pass_over.set()
        if LOOPS.get(key(self.home)) is self:
            del LOOPS[key(self.home)]
        if self._thread is not None:
            self._thread.join(timeout)
        if self._embedder is not None:
            self._embedder.stop()

    @property
    def capturing(self) -> bool:
        return bool(self._lease.held)

    def run(self) -> Any:
        """Capture while elected, until stopped; the Stats of the last elected term."""
        told = False
        while not self.stop_event.is_set():
            if not self._lease.try_acquire():
                self.first_pass_over.set()  # the holder's note says how far it got
                if not told and self.on_wait is not None:
                    self.on_wait(holder(self.home))
                    told = True
                self.stop_event.wait(self.takeover_s)
                continue
            failed = False
            try:
                self._capture()
            except Exception as exc:  # keep the process (an MCP session) alive
                self.first_pass_over.set()
                self._failed(exc)
                failed = True
            finally:
                self._lease.release()
                self.mode = "none"
            if failed:
                self.stop_event.wait(self.retry_s)
        if self.engine is not None:
            return self.engine.finish()
        from readers.capture_state import Stats

        return Stats()

    def _failed(self, exc: Exception) -> None:
        from eventlog import LogFull

        if not isinstance(exc, LogFull):
            _warn(f"capture stopped: {type(exc).__name__}: {exc}; retrying in "
                  f"{self.retry_s:g} s")
        elif not self._full_said:  # a full disk: said once, waited out
            _warn(f"{exc}; waiting for free space (retrying every {self.retry_s:g} s)")
            self._full_said = True

    def _roots(self) -> list[Any]:
        if self.roots is not None:
            return [r for r in self.roots if r.exists]
        from cli.services.capture.ops import capture_roots

        found = capture_roots(self.home, {})  # no flags: config, environment, defaults
        return [r for r in found if r.exists]

    def _capture(self) -> None:
        self._since = now_ms()
        self._initial_done = False
        before = read_note(self.home) or {}
        self._ever = self._ever or bool(before.get("everCaughtUp") or before.get("caughtUp"))
        # the note is ours now: a predecessor's never speaks for this pass
        self._publish(None, pending=None)
        roots = self._roots()
        while not roots:  # nothing to capture (yet): say so, look again now and then
            self._initial_done = True
            self.first_pass_over.set()
            self._publish(None, pending=0)
            if self.stop_event.wait(self.safety_s):
                return
            roots = self._roots()
        from cli.services.capture.ops import engine_options
        from readers.capture import Capturer, Options

        more = {**engine_options(self.home), **self.engine_options}
        engine = self.engine = Capturer(self.home.log(), roots,
                                        Options(settle_s=self.settle_s, **more))
        self._indexed = 0
        watcher = self._watch(engine.roots)
        try:
            self._pass(engine, rediscover=False)  # the initial pass: every file
            self._initial_done = True
            self._ever = self._ever or engine.done()  # not when stopped mid-pass
            self._publish(engine)
            self.first_pass_over.set()
            next_pass = time.monotonic() + self._interval(engine, watcher)
            while not self.stop_event.is_set():
                idle = max(0.0, next_pass - time.monotonic())
                if not self._wake.wait(min(idle, LIST_PAUSE_S) if self._wanted else idle):
                    self._lists(engine)  # woken by nothing: idle
                self._wake.clear()
                if self.stop_event.is_set():
                    break
                if watcher is not None and watcher.failed:
                    _warn(f"file events stopped ({watcher.failed}); polling instead")
                    watcher.close()
                    watcher = None
                    self.mode = "poll"
                if watcher is not None:
                    paths = watcher.take()
                    if paths and engine.notice(paths):
                        self._drain(engine)
                if self._behind:
                    self._index(engine)
                    self._publish(engine)
                if time.monotonic() >= next_pass:
                    self._pass(engine, rediscover=watcher is not None)
                    next_pass = time.monotonic() + self._interval(engine, watcher)
        finally:
            if watcher is not None:
                watcher.close()
            engine.close()
            self._committed(engine)

    def _watch(self, roots: list[Any]) -> Any:
        self.mode = "poll"
        if not self.events:
            return None
        try:
            from readers.capture_watch import FileEvents

            watcher = FileEvents(roots, self._wake).start()
        except Exception as exc:  # no watchfiles, no backend: polling works everywhere
            _warn(f"no file events ({type(exc).__name__}: {exc}); polling every "
                  f"{self.poll_s:g} s")
            return None
        self.mode = "events"
        return watcher

    def _interval(self, engine: Any, watcher: Any) -> float:
        if watcher is None:
            return self.poll_s
        if self._pending(engine) or self._behind:
            return min(self.safety_s, max(self.settle_s, 0.2))
        return self.safety_s

    # --- work -------------------------------------------------------------------------

    def _tick(self, engine: Any) -> None:
        from eventlog import WriterBusy

        try:
            engine.tick()
        except WriterBusy as exc:  # another writer held the lock too long: later
            engine.stats.errors.append(str(exc))
            self.stop_event.wait(0.2)

    def _pass(self, engine: Any, *, rediscover: bool) -> None:
        """One complete pass over every file (and, with `rediscover`, a new walk)."""
        engine.begin_pass(rediscover=rediscover)
        last = said = time.monotonic()
        while not self.stop_event.is_set() and not engine.done():
            self._tick(engine)
            now = time.monotonic()
            if now - last >= COMMIT_EVERY_S:
                self._commit(engine)
                last = said = time.monotonic()
            elif now - said >= PUBLISH_EVERY_S:
                self._publish(engine)
                said = now
        self._commit(engine)

    def _drain(self, engine: Any) -> None:
        """Poll the queued files (those file events named) until none has more to read."""
        last = time.monotonic()
        while engine.ready and not self.stop_event.is_set():
            self._tick(engine)
            if time.monotonic() - last >= COMMIT_EVERY_S:
                self._commit(engine)
                last = time.monotonic()
        self._commit(engine)

    def _commit(self, engine: Any) -> None:
        engine.flush()
        self._committed(engine)

    def _committed(self, engine: Any) -> None:
        # compared with what was last indexed: a tick commits by itself when its batch is
        # full, so the appends are not all made by our own flush
        if engine.stats.appended != self._indexed:
            self._indexed = engine.stats.appended
            if self._full_said:
                _warn("the log is writable again")
                self._full_said = False
            self._index(engine)
            if self.on_commit is not None:
                self.on_commit(engine)
        self._publish(engine)

    def _index(self, engine: Any) -> None:
        """Catch history.db up; when it could not (busy), try again at the next wake."""
        if not self.index:
            return
        from cli.services import catchup
        from projections.catchup import status

        catchup.after_append(self.home)
        self._behind = status(self.home.history_db, engine.log.head().seq) == "behind"
        self._wanted = True

    def _lists(self, engine: Any) -> None:
        """One bounded step of champion-list making while idle (projections.rank); when no
        list is wanted, the embedding child started if the projection is behind."""
        if not self.index or self._behind or engine.ready:
            return
        if not self._wanted:
            self._embed()
            return
        from projections.catchup import make_some_lists

        self._wanted = make_some_lists(self.home.history_db)

    def _embed(self) -> None:
        if self._embedder is None:
            from cli.services.capture.embedder import Embedder

            self._embedder = Embedder(self.home)
        self._embedder.poke()

    @staticmethod
    def _pending(engine: Any) -> int:
        """Files with bytes not read yet: discovered and never read, with a backlog or an
        unfinished last line, or queued by a file event and not polled yet."""
        from readers.capture_state import is_pending

        pending = {k for k, s in engine.sources.items() if is_pending(s.cursor)}
        pending.update(engine.ready)
        return len(pending)

    def _publish(self, engine: Any, *, pending: int | None = -1) -> None:
        """Write the note: `pending` files as given (None: not known yet, nor the head;
        -1: counted from `engine`)."""
        if pending == -1:
            pending = self._pending(engine)
        head = engine.log.head().seq if engine is not None else (0 if pending == 0 else None)
        files = len(engine.sources) if engine is not None else 0
        discovering = (not engine.discovery_done) if engine is not None else (
            not self._initial_done)
        note = {
            "pid": os.getpid(), "command": " ".join(sys.argv[1:4])[:100],
            "since": self._since, "passAt": now_ms(), "mode": self.mode,
            "pendingFiles": pending, "head": head, "files": files,
            "firstPass": not self._initial_done, "discovering": discovering,
            "everCaughtUp": self._ever,
            # the first pass ends only once discovery has walked every root
            "caughtUp": self._initial_done and pending == 0,
        }
        self._lease.publish(json.dumps(note).encode())
