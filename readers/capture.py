"""The capture engine: bounded ticks of discovery and fair polling into the event log.

Promises (docs/capture.md):
- a tick examines at most `discover_per_tick` (32) directory entries and polls at most
  `polls_per_tick` (2) registered files: one from the backlog queue (files with more to
  read, or just discovered) and one from the round-robin sweep over every registered file;
- a file whose (size, mtime_ns, inode) equal its cursor's is not opened;
- every chunk, snapshot and row is appended in the same `EventLog.append` call as the
  cursor that covers it; a source's `SourceSeen` is in that batch or an earlier one;
- the writer lock is taken only when there is something to write, and held from the
  moment cursors are re-read until the batch commits: an epoch value in the state
  database tells whether another process committed meanwhile (then cursors are
  reloaded), so concurrent captures never read the same bytes twice into different
  chunks, and identical chunks are deduplicated by their keys anyway;
- `run_once` stops when discovery is exhausted, the backlog is empty and one complete
  sweep found nothing new; a long-running caller (cli/services/capture/loop.py) ticks on its own,
  starts a new complete pass with `begin_pass`, and queues the files that file events
  name with `notice` (they are polled before the sweep reaches them); when the stat
  caches show nothing, or only a few files, new or changed, `run_once` polls only those.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from eventlog import EventLog
from eventlog.events import SourceSeen
from readers import capture_files as cf
from readers import cursor as cur
from readers import statcache
from readers.capture_batch import Batch
from readers.capture_state import Options, Source, Stats, is_pending
from readers.discovery import Entry, classify, kind_of, walk
from readers.roots import Root, source_id, split_source
from readers.statcache import unchanged_files

SWEEP_MIN_S = 1.0  # while busy (backlog, discovery) a new sweep starts at most once a second


class Capturer:
    """Capture `roots` into `log`, a bounded tick at a time."""

    def __init__(
        self,
        log: EventLog,
        roots: list[Root],
        options: Options | None = None,
        *,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.log = log
        self.roots = [r for r in roots if r.exists]
        # (agent, root id): Aider and Crush both scan the home, one folder, two roots
        self.by_id = {(r.agent, r.id): r for r in self.roots}
        self.opt = options or Options()
        self.clock = clock
        self.stats = Stats()
        self.sources: dict[str, Source] = {}
        self._ended: set[str] = set()  # with `Options.final`: sources whose end was polled
        self._epoch: bytes | None = None
        self._held: contextlib.ExitStack | None = None
        self._batch = Batch()
        self.ready: deque[str] = deque()
        self._queued: set[str] = set()
        self._sweep: list[str] = []
        self._sweep_pos = 0
        self._sweep_dirty = False  # a file polled by this sweep had news
        self._changes = 0
        self._sweep_closed = False
        self._sweep_started = 0.0
        self.sweeps_clean = 0
        self.sweeps_done = 0
        self._walker: Iterator[tuple[Root, Entry]] | None = self._walk_all()
        self.discovery_done = False
        self._next_discovery = 0.0
        self._loaded = False
        self._failed = False
        self._forgot: set[bytes] = set()  # `cur.forgot_key`s: sources and sessions not taken

    def _ensure_loaded(self) -> None:
        if not self._loaded:
            self._loaded = True
            self._load()
            self._load_forgotten()
            self._new_sweep()

    def _load_forgotten(self) -> None:
        self._forgot = {k for k, _ in self.log.iter_state(cur.FORGOT_PREFIX)}

    # --- state ------------------------------------------------------------------------

    def _load(self) -> None:
        self._epoch = self.log.get_state(cur.EPOCH_KEY)
        by_id = self.by_id
        sources: dict[str, Source] = {}
        for _, value in self.log.iter_state(cur.CURSOR_PREFIX):
            c = cur.decode_cursor(value)
            agent, rid, rel = split_source(c.source)
            root = by_id.get((agent, rid))
            if root is None:
                continue
            old = self.sources.get(c.source)
            src = Source(root, rel, kind_of(c.layout), c)
            if old is not None:
                src.table_idx, src.round_sig = old.table_idx, old.round_sig
            sources[c.source] = src
        self.sources = sources

    def _lock(self) -> bool:
        """Hold the writer lock; True when another process committed since (reloaded)."""
        if self._held is not None:
            return False
        stack = contextlib.ExitStack()
        stack.enter_context(self.log.exclusive())
        self._held = stack
        if self.log.get_state(cur.EPOCH_KEY) != self._epoch:
            before = set(self.sources)
            self._load()
            self._load_forgotten()
            for source in self.sources.keys() - before:
                self._enqueue(source)  # registered by the other process: poll it here too
            self.sweeps_clean = 0  # what the sweep saw may be stale: one more clean sweep
            return True
        return False

    def flush(self) -> None:
        """Commit pending events and cursors in one transaction, then release the lock.

        After a failed commit the engine commits nothing more: its in-memory cursors are
        ahead of the log, and a later batch (or stat cache) would claim bytes it lost."""
        try:
            if self._failed:
                return
            batch = self._batch
            batch.pack()
            if batch:
                token = os.urandom(8)
                batch.state[cur.EPOCH_KEY] = token
                try:
                    res = self.log.append(batch.events, state=batch.state)
                except BaseException:
                    self._failed = True
                    raise
                self._epoch = token
                self.stats.appended += res.appended
                self.stats.duplicates += res.duplicates
        finally:
            self._batch = Batch()
            if self._held is not None:
                self._held.close()
                self._held = None

    def _put(
        self, src: Source, polled: cf.Polled | None = None, c: cur.Cursor | None = None
    ) -> None:
        new = polled.cursor if polled is not None else c
        assert new is not None
        if polled is not None:
            for key, ev in polled.events:
                self._batch.add(key, ev)
            self._batch.bytes += polled.bytes
            self.stats.bytes += polled.bytes
            if polled.events:
                self.stats.changed.add(new.source)
            if polled.rewound:
                self.stats.rewound += 1
        if new != src.cursor:
            src.cursor = new
            self._batch.state[cur.cursor_key(new.source)] = cur.encode(new)
            self._changes += 1

    def close(self) -> None:
        """Commit what is pending, and the stat cache."""
        if self._loaded and not self._failed:
            self._stage_statcache()
        self.flush()

    def _stage_statcache(self) -> None:
        """Stage each root's stat cache (for the no-change check) when it changed."""
        for attempt in range(2):
            staged = statcache.build(self.roots, self.sources.values())
            changed = {k: v for k, v in staged.items() if self.log.get_state(k) != v}
            if not changed:
                return
            if attempt == 0 and self._lock():
                continue  # another process committed meanwhile: rebuild from its cursors
            self._batch.state.update(changed)
            return

    def _maybe_flush(self) -> None:
        if self._batch.full(self.opt.batch_bytes, self.opt.batch_events):
            self.flush()

    # --- discovery --------------------------------------------------------------------

    def _walk_all(self) -> Iterator[tuple[Root, Entry]]:
        for root in self.roots:
            for entry in walk(root.agent, str(root.path)):
                yield root, entry

    def _discover(self) -> None:
        if self._walker is None:
            if time.monotonic() < self._next_discovery:
                return
            self._walker = self._walk_all()
            self.discovery_done = False
        walker = self._walker
        for _ in range(self.opt.discover_per_tick):
            try:
                root, entry = next(walker)
            except StopIteration:
                self._walker = None
                self.discovery_done = True
                self._next_discovery = time.monotonic() + self.opt.rediscover_s
                return
            if entry.skipped is not None or entry.error is not None:
                self.stats.note_skipped(root, entry)
            elif entry.layout is not None:
                source = f"{root.agent}:{root.id}:{entry.rel}"
                if source not in self.sources:
                    self._register(root, entry.rel, entry.layout, source)

    def _register(self, root: Root, rel: str, layout: str, source: str) -> None:
        if self._forgot and cur.forgot_key(b"src", source) in self._forgot:
            self.stats.forgotten.add(source)  # `agentlog forget` took it back: never again
            return
        self._lock()
        if cur.forgot_key(b"src", source) in self._forgot:  # forgotten meanwhile (reloaded)
            self.stats.forgotten.add(source)
            return
        if source in self.sources:  # another process registered it meanwhile
            self._enqueue(source)
            return
        c = cur.Cursor(source=source, layout=layout)
        src = Source(root, rel, kind_of(layout), c)
        self.sources[source] = src
        ev = SourceSeen(
            source=source, agent=root.agent, root=str(root.path), path=rel, layout=layout,
            at=self.clock() // 1_000_000,
        )
        self._batch.add(cur.event_key(b"seen", source), ev)
        self._batch.state[cur.cursor_key(source)] = cur.encode(c)
        self.stats.registered += 1
        self._enqueue(source)

    def _enqueue(self, source: str) -> None:
        if source not in self._queued:
            self._queued.add(source)
            self.ready.append(source)

    # --- polling ----------------------------------------------------------------------

    def _new_sweep(self) -> None:
        self._sweep = list(self.sources)
        self._sweep_pos = 0
        self._sweep_dirty = False
        self._sweep_closed = False
        self._sweep_started = time.monotonic()

    def _next_sweep_source(self) -> str | None:
        """The next swept file that needs a poll, after checking the metadata of at most
        `sweep_checks_per_tick` files (no file is opened); None when the sweep wrapped."""
        for _ in range(self.opt.sweep_checks_per_tick):
            if self._sweep_pos >= len(self._sweep):
                if not self._sweep_closed:
                    self._sweep_closed = True
                    self.sweeps_done += 1
                    self.sweeps_clean = 0 if self._sweep_dirty else self.sweeps_clean + 1
                busy = bool(self.ready) or self._walker is not None
                if busy and time.monotonic() - self._sweep_started < SWEEP_MIN_S:
                    return None  # busy (backlog, discovery): sweep again at most once a second
                self._new_sweep()
                return None
            s = self._sweep[self._sweep_pos]
            self._sweep_pos += 1
            if self._may_need_poll(s):
                return s
        return None

    def _may_need_poll(self, source: str) -> bool:
        src = self.sources.get(source)
        if src is None:
            return False
        if src.kind == "rows" or src.cursor.missing:
            return True
        try:
            st = os.stat(src.path)
        except OSError:
            return True
        return cf.needs_read(src.cursor, st, self.clock(), int(self.opt.settle_s * 1e9),
                             src.kind == "append")

    def poll(self, source: str) -> bool:
        """Poll one registered source; True when it has more to read right away."""
        src = self.sources.get(source)
        if src is None:
            return False
        try:
            if src.kind == "rows":
                return self._poll_rows(src)
            return self._poll_file(src)
        except OSError as exc:
            self.stats.errors.append(f"{source}: {exc.strerror or exc}")
            return False

    def _poll_file(self, src: Source) -> bool:
        path = src.path
        append = src.kind == "append"
        try:
            st = os.stat(path)
        except FileNotFoundError:
            if not src.cursor.missing:
                self._lock()
                self._put(src, c=_replace(src.cursor, missing=True))
            return False
        now = self.clock()
        settle = int(self.opt.settle_s * 1e9)
        # an ended session: its end is news even when unchanged (once a run: `_ended`)
        final = append and self.opt.final and src.cursor.source not in self._ended
        if not final and not cf.needs_read(src.cursor, st, now, settle, append):
            return False
        if self._lock():
            src = self.sources.get(src.cursor.source) or src
            if not final and not cf.needs_read(src.cursor, st, now, settle, append):
                return False
        at = now // 1_000_000
        if append:
            polled = cf.poll_append(path, src.cursor, now_ns=now, settle_ns=settle, at=at,
                                    read_max=self.opt.read_max, final=final)
            if final and not polled.busy and polled.cursor.offset >= polled.cursor.size:
                self._ended.add(src.cursor.source)
        else:
            polled = cf.poll_snapshot(path, src.cursor, at=at, max_size=self.opt.snapshot_max)
            self.stats.snapshots += len(polled.events)
            if polled.cursor.oversized:
                self.stats.oversized += 1
                self.stats.skipped.append(
                    f"{path}: {polled.cursor.size} bytes, over the snapshot bound of "
                    f"{_mib(self.opt.snapshot_max)}: not captured (oversized; raise "
                    "capture.snapshotMaxMiB in config.json to take it)")
        self._put(src, polled)
        return polled.busy

    def _poll_rows(self, src: Source) -> bool:
        from readers import sqlite_rows as sr

        path = src.path
        try:
            sig = sr.db_signature(path)
        except FileNotFoundError:
            if not src.cursor.missing:
                self._lock()
                self._put(src, c=_replace(src.cursor, missing=True))
            return False
        c = src.cursor
        if (c.size, c.mtime_ns, c.ino) == sig and not c.backlog and not c.missing:
            return False
        if c.source in self.stats.locked:  # said once this run; the next run tries again
            return False
        if self._lock():
            src = self.sources.get(c.source) or src
            c = src.cursor
        if src.round_sig is None:
            src.round_sig = sig
            src.table_idx = 0
            src.table_paged = False
        at = self.clock() // 1_000_000
        try:
            with sr.open_readonly(path) as conn:
                tables = sr.tables_present(conn, src.root.agent)
                if src.table_idx >= len(tables):
                    return self._rows_round_done(src)
                table = tables[src.table_idx]
                key = cur.rows_key(c.source, table)
                raw = self._batch.state.get(key) or self.log.get_state(key)
                pos = cur.decode_rows(raw) if raw else cur.RowCursor()
                after_time, after_id = pos.time_updated, pos.row_id
                back = sr.lookback(src.root.agent, table)
                if raw and back and not src.table_paged:  # the round's first page
                    after_time, after_id = pos.time_updated - back, ""
                limit = sr.SESSION_PAGE if table == "session" else sr.PAGE
                rows = sr.fetch_page(conn, table, after_time, after_id, limit, src.root.agent)
                src.table_paged = True
        except sr.RowsError as exc:
            if exc.locked:  # another process holds it: say it once, leave it for later
                self.stats.locked.add(c.source)
                self.stats.errors.append(
                    f"{c.source}: {path} is locked by another process (waited "
                    f"{sr.LOCK_WAIT_S:g} s); the next capture takes it")
                return False
            self.stats.errors.append(f"{c.source}: {exc}")
            return False
        page_full = len(rows) >= limit
        taken = rows
        if self._forgot and rows:
            taken = [r for r in rows if not _of_forgotten_session(r, self._forgot)]
        self.stats.bytes += self._batch.add_rows(c.source, table, taken, at)
        self.stats.rows += len(taken)
        if rows:
            self.stats.changed.add(c.source)
            last = rows[-1]  # past the forgotten ones too
            self._batch.state[key] = cur.encode(cur.RowCursor(last.time_updated, last.row_id))
            self._changes += 1
        if page_full:
            self._put(src, c=_replace(c, backlog=True, missing=False))
            return True
        src.table_idx += 1
        src.table_paged = False
        if src.table_idx < len(tables):
            self._put(src, c=_replace(c, backlog=True, missing=False))
            return True
        return self._rows_round_done(src)

    def _rows_round_done(self, src: Source) -> bool:
        sig = src.round_sig or (0, 0, 0)
        src.round_sig = None
        src.table_idx = 0
        src.table_paged = False
        self._put(src, c=_replace(src.cursor, size=sig[0], mtime_ns=sig[1], ino=sig[2],
                                  backlog=False, missing=False))
        return False

    # --- ticks ------------------------------------------------------------------------

    def tick(self) -> bool:
        """One bounded step; True when there is a backlog (tick again soon)."""
        self._ensure_loaded()
        self._discover()
        polled: list[str] = []
        from_ready = True
        while len(polled) < self.opt.polls_per_tick:
            source: str | None = None
            swept = False
            if from_ready and self.ready and self.ready[0] not in polled:
                source = self.ready.popleft()
                self._queued.discard(source)
            else:
                source = self._next_sweep_source()
                swept = source is not None
                if source is None and self.ready and self.ready[0] not in polled:
                    source = self.ready.popleft()
                    self._queued.discard(source)
            from_ready = not from_ready
            if source is None:
                break
            if source in polled:
                continue  # one poll per source per tick (a db page is a tick's rows)
            polled.append(source)
            before = self._changes
            if self.poll(source):
                self._enqueue(source)
            if swept and self._changes != before:
                self._sweep_dirty = True
        self._maybe_flush()
        return bool(self.ready) or self._walker is not None

    def notice(self, paths: Iterable[str]) -> int:
        """Queue the registered sources among `paths` (absolute; an opencode `-wal` names
        its database) for the next ticks, and register new history files; the rest is
        ignored. Returns how many sources were queued."""
        from readers.capture_watch import sources_for  # file events: the loop's, not a pass's

        self._ensure_loaded()
        queued = 0
        for root, rel, layout in sources_for(self.roots, paths):
            source = f"{root.agent}:{root.id}:{rel}"
            if source in self.sources:
                self._enqueue(source)
            else:
                self._register(root, rel, layout, source)
            queued += 1
        return queued

    def begin_pass(self, *, rediscover: bool = False) -> None:
        """Start a new complete pass: `done()` is false until a fresh sweep over every file
        found nothing new (and, with `rediscover`, the roots were walked again)."""
        self._ensure_loaded()
        self.sweeps_clean = self.sweeps_done = 0
        self._new_sweep()
        if rediscover and self._walker is None:
            self._next_discovery = 0.0
            self.discovery_done = False

    def done(self) -> bool:
        if not self.discovery_done or self.ready:
            return False
        return self.sweeps_clean >= 1 or self.sweeps_done >= self.opt.max_clean_sweeps + 1

    def run_once(self, progress: Callable[[Capturer], None] | None = None,
                 each: Callable[[Capturer], None] | None = None) -> Stats:
        """Tick back to back until idle; several ticks share a transaction. `progress` is
        called every 0.1 s, `each` after every tick.

        The cyclic garbage collector is paused meanwhile: capture creates no cycles, and
        scanning thousands of cursors again and again costs more than the capture."""
        if not self._loaded and (stats := nothing_or_few(self)) is not None:
            return stats
        last = time.monotonic()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._ensure_loaded()
            while not self.done():
                self.tick()
                if each is not None:
                    each(self)
                if progress is not None and time.monotonic() - last > 0.1:
                    last = time.monotonic()
                    progress(self)
        finally:
            self.close()
            if was_enabled:
                gc.enable()
        return self.finish()

    def finish(self) -> Stats:
        s = self.stats
        s.files = sum(1 for x in self.sources.values() if not x.cursor.missing)
        s.missing = sum(1 for x in self.sources.values() if x.cursor.missing)
        s.pending = sum(1 for x in self.sources.values() if is_pending(x.cursor))
        return s


def _of_forgotten_session(row: Any, forgot: set[bytes]) -> bool:
    """A row of a forgotten session (its id as the row's key or as its session column)."""
    if cur.forgot_key(b"ses", row.row_id) in forgot:
        return True
    import json

    try:
        obj = json.loads(row.data)
    except ValueError:
        return False
    if not isinstance(obj, dict):
        return False
    for name in ("session_id", "sessionID", "sessionId", "session"):
        v = obj.get(name)
        if isinstance(v, str) and cur.forgot_key(b"ses", v) in forgot:
            return True
    return False


def _replace(c: cur.Cursor, **kw: Any) -> cur.Cursor:
    return msgspec.structs.replace(c, **kw)


# Capture of named files only: the fast path behind `capture --path` and the agent hooks.
#
# Promises:
# - only the named files (and, for a Claude Code session, the files of its own session folder:
#   subagents and tool results) are stat-ed and read; no other cursor is loaded, no root is
#   walked, so the cost does not grow with the size of the history;
# - the same engine, keys and cursors as a full capture (`readers.capture.Capturer`): a file
#   captured here and later by `capture` is stored once, and a full capture finds its cursor
#   up to date;
# - a path outside every capture root is reported in `Named.outside`, never guessed into a
#   new root (a root's id is part of every source id);
# - the per-root stat cache (the no-change fast path of a full capture) is left as it is: it
#   no longer matches the file just captured, so the next full capture stats that file again
#   and finds its cursor current; except in `capture_few`, the full capture's own path for a
#   few new or changed files, which updates their entries with their cursors (under the
#   writer lock, in the same transaction).


class Named:
    """The outcome of `capture_paths` (a plain class: `dataclasses` costs the hook start-up)."""

    def __init__(self, stats: Stats, sources: list[str] | None = None,
                 outside: list[str] | None = None, ignored: list[str] | None = None,
                 refused: list[dict[str, str]] | None = None) -> None:
        self.stats = stats
        self.sources = sources if sources is not None else []  # captured (or up to date)
        self.outside = outside if outside is not None else []  # paths under no capture root
        self.ignored = ignored if ignored is not None else []  # under a root, not history
        # {path, reason}: not a regular file (a link, a FIFO, a folder) or missing
        self.refused = refused if refused is not None else []


MISSING = "does not exist"


def not_a_file(path: Path | str) -> str | None:
    """Why `path` cannot be a captured source (None for a regular file): a link is never
    followed and a FIFO, socket, device or folder never read, so none is recorded either
    (it would stay pending forever and come back from restore as an empty file)."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return MISSING
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link (not followed)"
    if stat.S_ISDIR(mode):
        return "is a folder, not a transcript"
    return "is not a regular file (a FIFO, socket or device)"


class _NamedCapturer(Capturer):
    """A Capturer that knows only the sources it is told about."""

    def __init__(self, log: EventLog, roots: list[Root], options: Options,
                 wanted: list[tuple[Root, str, str]], *, patch_statcache: bool = False) -> None:
        super().__init__(log, roots, options)
        self._wanted = wanted
        self._patch = patch_statcache
        self.dirs: dict[str, cur.DirCache] | None = None  # folder caches to write (`patch`)
        self._walker = None
        self.discovery_done = True

    def _walk_all(self) -> Iterator[tuple[Root, Entry]]:
        return iter(())

    def _load(self) -> None:
        self._epoch = self.log.get_state(cur.EPOCH_KEY)
        sources: dict[str, Source] = {}
        for root, rel, _layout in self._wanted:
            sid = source_id(root.agent, root.path, rel)
            raw = self.log.get_state(cur.cursor_key(sid))
            if raw is None:
                continue
            c = cur.decode_cursor(raw)
            old = self.sources.get(sid)
            src = Source(root, rel, kind_of(c.layout), c)
            if old is not None:
                src.table_idx, src.round_sig = old.table_idx, old.round_sig
            sources[sid] = src
        self.sources = sources

    def capture(self) -> list[str]:
        self._ensure_loaded()
        done: list[str] = []
        try:
            for root, rel, layout in self._wanted:
                sid = source_id(root.agent, root.path, rel)
                if sid not in self.sources:
                    self._register(root, rel, layout, sid)
                while self.poll(sid):
                    self._maybe_flush()
                done.append(sid)
            if self._patch and not self._failed:
                self._lock()  # held until the flush: the caches are read and written under it
                self._batch.state.update(statcache.patch(self.log, self.sources.values(),
                                                         self.dirs))
        finally:
            self.flush()  # the stat cache only when told (see `capture_few`)
        self.finish()
        return done


def nothing_or_few(engine: Capturer) -> Stats | None:
    """A full capture's first step (`Capturer.run_once`): its Stats when the stat caches
    show nothing new or changed, or at most `statcache.FEW` files (captured alone, here);
    None when the full run is needed."""
    few = statcache.changed_files(engine.log, engine.roots, statcache.FEW)
    if few is None:
        return None
    if few.changed:  # pending: of these files (every other one is idle)
        engine.stats = capture_few(engine.log, engine.roots, few.changed, engine.opt,
                                   few.dirs)
    engine.stats.files, engine.stats.missing = few.files, few.missing
    return engine.stats


def capture_few(log: EventLog, roots: list[Root], changed: list[tuple[Root, str]],
                options: Options, dirs: dict[str, cur.DirCache] | None = None) -> Stats:
    """Capture the new or changed files a full capture found (`statcache.changed_files`:
    every other file is as captured), and bring their stat cache entries up to date (and
    the folder caches, `dirs`, of the walk that found them)."""
    wanted = [(root, rel, layout) for root, rel in changed
              if (layout := classify(root.agent, rel)) is not None]
    engine = _NamedCapturer(log, roots, options, wanted, patch_statcache=True)
    engine.dirs = dirs
    engine.capture()
    return engine.stats


def locate(roots: list[Root], path: Path) -> tuple[Root, str] | None:
    """The root holding `path` and the path relative to it (POSIX), or None."""
    candidates = {os.path.abspath(path), os.path.realpath(path)}
    for root in roots:
        if not root.exists:
            continue
        for base in {os.path.abspath(root.path), os.path.realpath(root.path)}:
            for p in candidates:
                if p.startswith(base.rstrip(os.sep) + os.sep):
                    return root, Path(os.path.relpath(p, base)).as_posix()
    return None


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


def session_companions(root: Root, rel: str) -> list[str]:
    """A Claude Code session's own files: `<session>/subagents/**` and tool results."""
    parts = rel.split("/")
    if root.agent != "claude" or len(parts) != 3 or not parts[2].endswith(".jsonl"):
        return []
    folder = Path(root.path, *parts[:2], parts[2][: -len(".jsonl")])
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            sub = Path(os.path.relpath(os.path.join(dirpath, name), root.path)).as_posix()
            if classify(root.agent, sub) is not None:
                out.append(sub)
    return out


def capture_paths(
    log: EventLog, roots: list[Root], paths: list[Path], options: Options | None = None,
    *, companions: bool = True,
) -> Named:
    """Capture exactly `paths` (and, with `companions`, a session's own folder); a path that
    is not a regular file is refused (`Named.refused`) and nothing of it recorded."""
    wanted: list[tuple[Root, str, str]] = []
    outside: list[str] = []
    ignored: list[str] = []
    refused: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for path in paths:
        why = not_a_file(path)  # the path itself: a link is refused, not resolved
        found = locate(roots, path)
        if found is None and why in (None, MISSING):
            outside.append(str(path))
            continue
        if why is not None or found is None:
            refused.append({"path": str(path), "reason": why or MISSING})
            continue
        root, rel = found
        rels = [rel, *(session_companions(root, rel) if companions else [])]
        for r in rels:
            layout = classify(root.agent, r)
            if layout is None:
                ignored.append(str(Path(root.path, r)))
                continue
            why = not_a_file(Path(root.path, r)) if r != rel else None
            if why is not None:
                refused.append({"path": str(Path(root.path, r)), "reason": why})
                continue
            if (root.id, r) not in seen:
                seen.add((root.id, r))
                wanted.append((root, r, layout))
    engine = _NamedCapturer(log, roots, options or Options(), wanted)
    done = engine.capture() if wanted else []
    return Named(engine.stats, done, outside, ignored, refused)


def codex_rollout(roots: list[Root], thread_id: str) -> Path | None:
    """The rollout file of a Codex thread id (newest day folders first), or None."""
    if not thread_id or "/" in thread_id or thread_id.startswith("."):
        return None
    suffix = f"{thread_id}.jsonl"
    for root in roots:
        if root.agent != "codex" or not root.exists:
            continue
        for top in ("sessions", "archived_sessions"):
            hit = _newest_first(Path(root.path, top), suffix, depth=3 if top == "sessions" else 0)
            if hit is not None:
                return hit
    return None


def _newest_first(folder: Path, suffix: str, depth: int) -> Path | None:
    try:
        names = sorted(os.listdir(folder), reverse=True)
    except OSError:
        return None
    if depth == 0:
        for name in names:
            if name.endswith(suffix) and name.startswith("rollout-"):
                return folder / name
        return None
    for name in names:
        hit = _newest_first(folder / name, suffix, depth - 1)
        if hit is not None:
            return hit
    return None


__all__ = ["Capturer", "Named", "Options", "Stats", "capture_few", "capture_paths", "is_pending",
           "unchanged_files"]
