"""The no-change fast path: one stat cache per root in the log's `state` database.

Promises:
- a root's cache maps each registered file (relative path) to the (size, mtime_ns, inode)
  its cursor was idle at, `NEVER` when it still has work pending, `GONE` when its file was
  missing; it is written in the same transaction as the last cursors of a run;
- `unchanged_files` answers "is everything exactly as captured?" by listing the roots and
  stat-ing their files only: no file is opened and no cursor is loaded.
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


def build(roots: list[Root], sources: Iterable[Source]) -> dict[bytes, bytes]:
    """The encoded stat cache of every root, by state key."""
    # one cache per (agent, root): two agents may scan the same folder (Aider, Crush: the home)
    caches: dict[str, cur.StatCache] = {_scope(r): {} for r in roots}
    for src in sources:
        c = src.cursor
        if c.missing:
            stat = cur.GONE
        elif is_idle(c, src):
            stat = (c.size, c.mtime_ns, c.ino)
        else:
            stat = cur.NEVER
        cache = caches.get(_scope(src.root))
        if cache is not None:
            cache[src.rel] = stat
    return {cur.statcache_key(rid): cur.encode_statcache(v) for rid, v in caches.items()}


def unchanged_files(log: EventLog, roots: list[Root]) -> tuple[int, int] | None:
    """(files, missing files) when every file under `roots` has exactly the metadata of
    the last capture (read from the stat caches, one small value per root); else None.

    This is the no-change fast path: no cursor is loaded and no file is opened."""
    total = gone = 0
    for root in roots:
        if not root.exists:
            continue
        raw = log.get_state(cur.statcache_key(_scope(root)))
        if raw is None:
            return None
        cache = cur.decode_statcache(raw)
        missing = sum(1 for v in cache.values() if v == cur.GONE)
        seen = 0
        for rel, entry in files(root.agent, str(root.path), known=cache):
            want = cache.get(rel)
            if want is None:
                return None  # a new file
            try:
                if _is_db(root.agent, rel):
                    got = cf.db_signature(entry.path)
                else:
                    st = entry.stat()
                    got = (st.st_size, st.st_mtime_ns, st.st_ino)
            except OSError:
                return None
            if got != want:
                return None
            seen += 1
        if seen + missing != len(cache):
            return None
        total += seen
        gone += missing
    return total, gone


def _is_db(agent: str, rel: str) -> bool:
    """A SQLite source (its signature includes the -wal), by its layout's capture mode."""
    return rel.endswith(".db") and registry.mode_of(classify(agent, rel) or "") == registry.ROWS


def _scope(root: Root) -> str:
    return f"{root.agent}:{root.id}"
