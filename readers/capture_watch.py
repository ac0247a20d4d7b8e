"""File events for the capture engine: which sources to poll now, without a full sweep.

Promises:
- `FileEvents` watches the folders that can hold history (each root's top folders,
  recursively, and the root itself, not recursively) with `watchfiles` (inotify on Linux,
  FSEvents on macOS, kqueue/ReadDirectoryChanges elsewhere); it only collects paths and
  sets a wake event. It never reads a file. If the watcher cannot start or dies (no
  backend, the inotify watch limit), `failed` says why and the caller falls back to
  polling; nothing is lost, since the engine's sweeps and cursors do not depend on events.
- `sources_for` maps paths to (root, rel, layout) exactly as discovery would classify
  them: an opencode `opencode.db-wal`/`-shm` names its database; anything else is ignored.
- A folder's event names the files already in it (at most `FOLDER_FILES`, 3 levels): the
  files of a new folder may be written before the watcher watches it.
- Latency and idle cost: a change is handed over once `step_ms` (20 ms) passed without
  another (so 20–40 ms after the write); the watcher threads sleep in the kernel/Rust
  side, waking every `step_ms` only to check the stop flag.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator

from readers.discovery import descends, layout_of
from readers.roots import Root

FOLDER_FILES = 256  # files named by one folder's event (a new folder holds a few)


def sources_for(roots: list[Root], paths: Iterable[str]) -> Iterator[tuple[Root, str, str]]:
    """(root, rel, layout) of each path that is a history file under one of `roots`."""
    seen: set[tuple[str, str]] = set()
    bases = [(r, str(r.path).rstrip(os.sep) + os.sep) for r in roots]
    for path in paths:
        for root, base in bases:
            if not path.startswith(base):
                continue
            rel = path[len(base):].replace(os.sep, "/")
            for suffix in ("-wal", "-shm", "-journal"):
                if rel.endswith(".db" + suffix):
                    rel = rel[: -len(suffix)]
            layout = layout_of(root.agent, rel)
            if layout is not None and (root.id, rel) not in seen:
                seen.add((root.id, rel))
                yield root, rel, layout


def files_under(folder: str, limit: int = FOLDER_FILES, depth: int = 3) -> list[str]:
    """Up to `limit` files in `folder` and its folders `depth` levels down (links not
    followed); [] when it cannot be listed."""
    out: list[str] = []
    todo = [(folder, 0)]
    while todo and len(out) < limit:
        path, level = todo.pop()
        try:
            with os.scandir(path) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        if level < depth:
                            todo.append((entry.path, level + 1))
                    elif entry.is_file(follow_symlinks=False):
                        out.append(entry.path)
                        if len(out) >= limit:
                            break
        except OSError:
            continue
    return out


def watch_plan(roots: list[Root]) -> tuple[list[str], list[str]]:
    """(folders to watch recursively, folders to watch alone): what exists right now."""
    deep: list[str] = []
    flat: list[str] = []
    for root in roots:
        if not root.path.is_dir():
            continue
        flat.append(str(root.path))
        try:
            with os.scandir(root.path) as it:
                tops = sorted(e.name for e in it if e.is_dir())
        except OSError:
            continue
        deep.extend(str(root.path / top) for top in tops if descends(root.agent, top))
    return deep, flat


class FileEvents:
    """Collects changed paths under `roots` in background threads (see module doc)."""

    def __init__(self, roots: list[Root], wake: threading.Event, *, step_ms: int = 20,
                 debounce_ms: int = 300) -> None:
        self.wake = wake
        self.plan = watch_plan(roots)
        self.failed: str | None = None
        self._paths: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._step_ms = step_ms
        self._debounce_ms = debounce_ms

    def start(self) -> FileEvents:
        import watchfiles  # noqa: F401  (fails here, not in a thread, when it is missing)

        deep, flat = self.plan
        for paths, recursive in ((deep, True), (flat, False)):
            if paths:
                t = threading.Thread(target=self._run, args=(paths, recursive),
                                     name="agentlog-file-events", daemon=True)
                t.start()
                self._threads.append(t)
        return self

    def _run(self, paths: list[str], recursive: bool) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(
                *paths, watch_filter=None, debounce=self._debounce_ms, step=self._step_ms,
                stop_event=self._stop, recursive=recursive, raise_interrupt=False,
                ignore_permission_denied=True, force_polling=False,
            ):
                with self._lock:
                    self._paths.update(p for _, p in changes)
                self.wake.set()
        except Exception as exc:  # no backend, watch limit, a root that vanished
            self.failed = f"{type(exc).__name__}: {exc}"
            self.wake.set()

    def take(self) -> set[str]:
        """The paths changed since the last call, and the files of folders among them.

        A folder's event also names the files already in it: a file written right after
        its folder was made (a new Claude project) can come before the watcher watches
        that folder, and would otherwise wait for the next complete pass."""
        with self._lock:
            out, self._paths = self._paths, set()
        for path in [p for p in out if os.path.isdir(p)]:
            out.update(files_under(path))
        return out

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
