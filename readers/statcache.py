"""The no-change fast path: one stat cache per root in the log's `state` database.

Promises:
- a root's cache maps each registered file (relative path) to the (size, mtime_ns, inode)
  its cursor was idle at, `NEVER` when it still has work pending, `GONE` when its file was
  missing; it is written in the same transaction as the last cursors of a run;
- `unchanged_files` answers "is everything exactly as captured?" by listing the roots and
  stat-ing their files only: no file is opened and no cursor is loaded;
- `changed_files` answers the same walk with the few files (at most `FEW`) that are new or
  changed, when nothing vanished: a capture then polls only those (`patch` brings their
  cache entries up to date in the same transaction as their cursors).
"""

from __future__ import annotations

from collections.abc import Iterable

from eventlog import EventLog
from readers import capture_files as cf
from readers import cursor as cur
from readers import registry
from readers.capture_state import Source, is_idle
from readers.discovery import classify, files
from readers.roots import Root

FEW = 32  # new or changed files a capture takes on their own (`changed_files`)


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


def patch(log: EventLog, sources: Iterable[Source]) -> dict[bytes, bytes]:
    """The encoded stat caches of `sources`' roots with their entries brought up to date
    (only caches that exist and change): what a capture of a few files commits with its
    last cursors, so the next no-change check does not look at them again."""
    by_scope: dict[str, list[Source]] = {}
    for src in sources:
        by_scope.setdefault(_scope(src.root), []).append(src)
    out: dict[bytes, bytes] = {}
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


def changed_files(log: EventLog, roots: list[Root], limit: int = FEW
                  ) -> tuple[int, int, list[tuple[Root, str]]] | None:
    """(files, missing files, the new or changed files) when at most `limit` files are new
    or differ from the last capture's metadata and none has vanished; else None.

    Every file not named has exactly the metadata its cursor was idle at, so capturing
    only the named ones does what a full run would (`readers.capture.Capturer.run_once`)."""
    try:
        return _changed(log, roots, limit)
    except OSError:  # an unreadable folder: the full walk reports it
        return None


def _changed(log: EventLog, roots: list[Root], limit: int
             ) -> tuple[int, int, list[tuple[Root, str]]] | None:
    total = gone = 0
    changed: list[tuple[Root, str]] = []
    for root in roots:
        if not root.exists:
            continue
        raw = log.get_state(cur.statcache_key(_scope(root)))
        if raw is None:
            return None
        cache = cur.decode_statcache(raw)
        missing = sum(1 for v in cache.values() if v == cur.GONE)
        seen = new = 0
        for rel, found in files(root.agent, str(root.path), known=cache):
            want = cache.get(rel)
            if want is None:
                new += 1  # a new file
                changed.append((root, rel))
            else:
                seen += 1
                try:
                    if _is_db(root.agent, rel):
                        got = cf.db_signature(found.path)
                    else:
                        st = found.stat()
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
    return total, gone, changed


def _unchanged(log: EventLog, roots: list[Root]) -> tuple[int, int] | None:
    found = _changed(log, roots, 0)
    return None if found is None or found[2] else (found[0], found[1])


def _is_db(agent: str, rel: str) -> bool:
    """A SQLite source (its signature includes the -wal), by its layout's capture mode."""
    return rel.endswith(".db") and registry.mode_of(classify(agent, rel) or "") == registry.ROWS


def _scope(root: Root) -> str:
    return f"{root.agent}:{root.id}"
