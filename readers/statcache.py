"""The no-change fast path: one stat cache per root in the log's `state` database.

Promises:
- a root's cache maps each registered file (relative path) to the (size, mtime_ns, inode)
  its cursor was idle at, `NEVER` when it still has work pending, `GONE` when its file was
  missing; it is written in the same transaction as the last cursors of a run;
- `unchanged_files` answers "is everything exactly as captured?" by listing the roots and
  stat-ing their files only: no file is opened and no cursor is loaded;
- `changed_files` answers the same walk with the few files (at most `FEW`) that are new or
  changed, when nothing vanished: a capture then polls only those (`patch` brings their
  cache entries up to date in the same transaction as their cursors);
- the walk lists a folder only when it may have changed: a root's folder cache (written by
  `patch` with the stat caches) holds, per folder, its mtime and the history files and
  folders the walk found in it. A folder whose mtime equals the cached one has the same
  entries (creating, deleting or renaming an entry changes it), so its files are stat-ed
  from the cache, unlisted (a file's growth or rewrite shows in its own stat, never in its
  folder's). A listing is cached only when the folder's mtime was at least `RACY_NS` older
  than the listing (a filesystem with coarse timestamps gives an entry created in the same
  tick the same mtime: such a folder is listed again next time, as git does with racy
  files); the cache also names `DIRS_VERSION`, the discovery rules it was made with.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from eventlog import EventLog
from readers import capture_files as cf
from readers import cursor as cur
from readers import registry
from readers.capture_state import Source, is_idle
from readers.discovery import classify, descends
from readers.roots import Root

FEW = 32  # new or changed files a capture takes on their own (`changed_files`)
RACY_NS = 2_000_000_000  # a folder changed this recently (or later) is listed again
DIRS_VERSION = 2  # bump when discovery's rules (which files, which folders) change
# (2: a FIFO, socket or device is no longer a file)


def build(roots: list[Root], sources: Iterable[Source]) -> dict[bytes, bytes]:
    """The encoded stat cache of every root, by state key."""
    # one cache per (agent, root): two agents may scan the same folder (Aider, Crush: the home)
    caches: dict[str, cur.StatCache] = {_scope(r): {} for r in roots}
    for src in sources:
        cache = caches.get(_scope(src.root))
        if cache is not None:
            cache[src.rel] = entry(src)
    return {cur.statcache_key(rid): cur.encode_statcache(v) for rid, v in caches.items()}


def entry(src: Source) -> tuple[int, int, int]:
    """What the stat cache holds for `src`: its idle stat triple, `GONE` or `NEVER`."""
    c = src.cursor
    if c.missing:
        return cur.GONE
    if is_idle(c, src):
        return (c.size, c.mtime_ns, c.ino)
    return cur.NEVER


def patch(log: EventLog, sources: Iterable[Source],
          dirs: Mapping[str, cur.DirCache] | None = None) -> dict[bytes, bytes]:
    """The encoded stat caches of `sources`' roots with their entries brought up to date
    (only caches that exist and change), and the folder caches `dirs` (by scope) of the
    walk that found them: what a capture of a few files commits with its last cursors, so
    the next no-change check does not look at them again."""
    out: dict[bytes, bytes] = {}
    for scope, listing in (dirs or {}).items():
        key, new = cur.dircache_key(scope), cur.encode_dircache(DIRS_VERSION, listing)
        if log.get_state(key) != new:
            out[key] = new
    by_scope: dict[str, list[Source]] = {}
    for src in sources:
        by_scope.setdefault(_scope(src.root), []).append(src)
    for scope, srcs in by_scope.items():
        key = cur.statcache_key(scope)
        raw = log.get_state(key)
        if raw is None:
            continue  # no cache yet: the next full capture writes it
        cache = cur.decode_statcache(raw)
        for src in srcs:
            cache[src.rel] = entry(src)
        new = cur.encode_statcache(cache)
        if new != raw:
            out[key] = new
    return out


def unchanged_files(log: EventLog, roots: list[Root]) -> tuple[int, int] | None:
    """(files, missing files) when every file under `roots` has exactly the metadata of
    the last capture (read from the stat caches, one small value per root); else None.

    This is the no-change fast path: no cursor is loaded and no file is opened."""
    try:
        return _unchanged(log, roots)
    except OSError:  # an unreadable folder: the full walk reports it
        return None


class Few:
    """What `changed_files` found: `files` under the roots, `missing` ones, the new or
    `changed` files, and each root's folder cache as the walk saw it (`dirs`, by scope)."""

    __slots__ = ("changed", "dirs", "files", "missing")

    def __init__(self, files: int, missing: int, changed: list[tuple[Root, str]],
                 dirs: dict[str, cur.DirCache]) -> None:
        self.files, self.missing, self.changed, self.dirs = files, missing, changed, dirs


def changed_files(log: EventLog, roots: list[Root], limit: int = FEW) -> Few | None:
    """The walk's `Few` when at most `limit` files are new or differ from the last
    capture's metadata and none has vanished; else None.

    Every file not named has exactly the metadata its cursor was idle at, so capturing
    only the named ones does what a full run would (`readers.capture.Capturer.run_once`)."""
    try:
        return _changed(log, roots, limit)
    except OSError:  # an unreadable folder: the full walk reports it
        return None


def _changed(log: EventLog, roots: list[Root], limit: int) -> Few | None:
    total = gone = 0
    changed: list[tuple[Root, str]] = []
    dirs: dict[str, cur.DirCache] = {}
    for root in roots:
        if not root.exists:
            continue
        scope = _scope(root)
        raw = log.get_state(cur.statcache_key(scope))
        if raw is None:
            return None
        cache = cur.decode_statcache(raw)
        missing = sum(1 for v in cache.values() if v == cur.GONE)
        seen = new = 0
        listing = dirs[scope] = {}
        stat = os.stat
        for prefix, folder, names in _folders(root.agent, str(root.path), cache,
                                              _dir_cache(log, scope), listing,
                                              _forgotten(log, scope)):
            for name in names:  # (the innermost loop of every capture: kept lean)
                rel = prefix + name
                want = cache.get(rel)
                if want is None:
                    new += 1  # a new file
                    changed.append((root, rel))
                    if len(changed) > limit:
                        return None
                    continue
                seen += 1
                try:
                    if name.endswith(".db") and _is_db(root.agent, rel):
                        got = cf.db_signature(folder + name)
                    else:
                        st = stat(folder + name)
                        got = (st.st_size, st.st_mtime_ns, st.st_ino)
                except OSError:
                    return None
                if got != want:
                    changed.append((root, rel))
                    if len(changed) > limit:
                        return None
        if seen + missing != len(cache):
            return None  # a file vanished (or came back): the full run records it
        total += seen + new
        gone += missing
    return Few(total, gone, changed, dirs)


def _dir_cache(log: EventLog, scope: str) -> cur.DirCache:
    raw = log.get_state(cur.dircache_key(scope))
    if raw is None:
        return {}
    try:
        version, listing = cur.decode_dircache(raw)
    except Exception:  # an older or damaged value: list every folder (and cache it anew)
        return {}
    return listing if version == DIRS_VERSION else {}


def cached_files(agent: str, root: str, known: Mapping[str, object], dirs: cur.DirCache,
                 listed: cur.DirCache) -> Iterator[tuple[str, str]]:
    """(rel, path) of every history file under `root` (what `discovery.walk` finds: the
    same folders and layouts, names in `known` without classifying them again), taking a
    folder's entries from `dirs` when its mtime is the cached one (see the module
    promises). Every folder's entries as found go into `listed` (only those listed long
    enough after their last change to be trusted next time). A folder that cannot be
    listed raises `OSError`; a vanished one is skipped."""
    for prefix, folder, names in _folders(agent, root, known, dirs, listed):
        for name in names:
            yield prefix + name, folder + name


def _forgotten(log: EventLog, scope: str) -> Callable[[str], bool] | None:
    """Whether a file of `scope` is a source `agentlog forget` took back (None: there is
    none). Such a file is left out of the folder cache (its name is not kept) and is not a
    new file."""
    forgot = {k for k, _ in log.iter_state(cur.FORGOT_PREFIX + b"src")}
    if not forgot:
        return None
    return lambda rel: cur.forgot_key(b"src", f"{scope}:{rel}") in forgot


def _folders(agent: str, root: str, known: Mapping[str, object], dirs: cur.DirCache,
             listed: cur.DirCache, skip: Callable[[str], bool] | None = None,
             ) -> Iterator[tuple[str, str, list[str]]]:
    """`cached_files` a folder at a time: (its relative prefix "a/b/" or "", its path with
    a trailing separator, the names of its history files, but those `skip` names)."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        path = os.path.join(root, rel_dir) if rel_dir else root
        try:
            mtime = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            continue
        hit = dirs.get(rel_dir)
        if hit is None or hit[0] != mtime:
            started = time.time_ns()  # before listing: a later change has a later mtime
            hit = _list(agent, path, rel_dir, known, mtime, skip)
            if hit is None:
                continue  # vanished
            if mtime < started - RACY_NS:  # else too recent to trust: listed again next time
                listed[rel_dir] = hit
        else:
            listed[rel_dir] = hit
        prefix = f"{rel_dir}/" if rel_dir else ""
        if hit[1]:
            yield prefix, os.path.join(path, ""), hit[1]
        stack.extend(prefix + name for name in hit[2])


def _list(agent: str, path: str, rel_dir: str, known: Mapping[str, object],
          mtime: int, skip: Callable[[str], bool] | None = None,
          ) -> tuple[int, list[str], list[str]] | None:
    """A folder's history files and the folders the walk goes into (`discovery.walk`'s
    rules: links never followed, known names kept, others by the reader's rules)."""
    files: list[str] = []
    subdirs: list[str] = []
    try:
        it = os.scandir(path)
    except FileNotFoundError:
        return None
    with it:
        for e in it:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            try:
                if e.is_symlink():
                    continue  # never followed (see `discovery.walk`)
                if rel in known:
                    files.append(e.name)
                    continue
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if descends(agent, rel):
                    subdirs.append(e.name)
            elif classify(agent, rel) is not None and (skip is None or not skip(rel)):
                files.append(e.name)
    return mtime, files, subdirs


def _unchanged(log: EventLog, roots: list[Root]) -> tuple[int, int] | None:
    found = _changed(log, roots, 0)
    return None if found is None or found.changed else (found.files, found.missing)


def _is_db(agent: str, rel: str) -> bool:
    """A SQLite source (its signature includes the -wal), by its layout's capture mode."""
    return rel.endswith(".db") and registry.mode_of(classify(agent, rel) or "") == registry.ROWS


def _scope(root: Root) -> str:
    return f"{root.agent}:{root.id}"
