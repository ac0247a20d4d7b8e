"""Capture of named files only: the fast path behind `capture --path` and the agent hooks.

Promises:
- only the named files (and, for a Claude Code session, the files of its own session folder:
  subagents and tool results) are stat-ed and read; no other cursor is loaded, no root is
  walked, so the cost does not grow with the size of the history;
- the same engine, keys and cursors as a full capture (`readers.capture.Capturer`): a file
  captured here and later by `capture` is stored once, and a full capture finds its cursor
  up to date;
- a path outside every capture root is reported in `Named.outside`, never guessed into a
  new root (a root's id is part of every source id);
- the per-root stat cache (the no-change fast path of a full capture) is left as it is: it
  no longer matches the file just captured, so the next full capture stats that file again
  and finds its cursor current; except in `capture_few`, the full capture's own path for a
  few new or changed files, which updates their entries with their cursors (under the
  writer lock, in the same transaction).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from eventlog import EventLog
from readers import cursor as cur
from readers import statcache
from readers.capture import Capturer
from readers.capture_state import Options, Source, Stats
from readers.discovery import Entry, classify, kind_of
from readers.roots import Root, source_id


class Named:
    """The outcome of `capture_paths` (a plain class: `dataclasses` costs the hook start-up)."""

    def __init__(self, stats: Stats, sources: list[str] | None = None,
                 outside: list[str] | None = None, ignored: list[str] | None = None) -> None:
        self.stats = stats
        self.sources = sources if sources is not None else []  # captured (or up to date)
        self.outside = outside if outside is not None else []  # paths under no capture root
        self.ignored = ignored if ignored is not None else []  # under a root, not history


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
    """Capture exactly `paths` (and, with `companions`, a session's own folder)."""
    wanted: list[tuple[Root, str, str]] = []
    outside: list[str] = []
    ignored: list[str] = []
    seen: set[tuple[str, str]] = set()
    for path in paths:
        found = locate(roots, path)
        if found is None:
            outside.append(str(path))
            continue
        root, rel = found
        rels = [rel, *(session_companions(root, rel) if companions else [])]
        for r in rels:
            layout = classify(root.agent, r)
            if layout is None:
                ignored.append(str(Path(root.path, r)))
                continue
            if (root.id, r) not in seen:
                seen.add((root.id, r))
                wanted.append((root, r, layout))
    engine = _NamedCapturer(log, roots, options or Options(), wanted)
    done = engine.capture() if wanted else []
    return Named(engine.stats, done, outside, ignored)


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
