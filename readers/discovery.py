"""Discovery: which files under a root are agent history, and of what layout.

Promises:
- read-only: directories are listed with `os.scandir`, nothing else is touched;
- streaming: `walk(root)` is a generator that yields every directory entry it examines
  (so the capture engine can stop after 32 entries a tick and resume later) and only
  descends into the folders that can hold history (never `file-history/`, `todos/`, …);
- `classify(agent, rel)` is a pure function of the relative POSIX path, answered by the
  agent's reader module (readers/registry.py); the layout strings are the parsers' dispatch
  keys and are never renamed (the registry lists them with their capture mode);
- credential files (opencode `auth.json`, `*.key`) are never classified;
- capture never leaves a root through a link: a symbolic link under a root (to a file or
  a folder, inside the root or out of it, looping or dangling) is never followed. `walk`
  decides entry by entry: a link where history could be is yielded with `skipped` set to
  the reason, a folder that cannot be listed (permissions, vanished) with `error` set, and
  one bad entry never hides its siblings. A root that is itself a link is followed (the
  user configured it).

Real annotations, not `from __future__ import annotations`: its named tuples (and msgspec
structs) read their field types when the class is made, and a string costs a
`typing.ForwardRef` compile each (docs/history/performance-journal.md, "Annotations").
"""

import os
from collections.abc import Iterator
from typing import NamedTuple

from readers import registry


class Entry(NamedTuple):
    """One examined directory entry; `layout` is None for folders and ignored files.

    `skipped`: why a link was not followed; `error`: why a folder could not be listed."""

    rel: str
    layout: str | None
    skipped: str | None = None
    error: str | None = None


LINK_SKIPPED = "symbolic link, not followed (capture stays inside its roots)"
NOT_A_FILE_SKIPPED = "not a regular file (a FIFO, socket or device): not read"


def kind_of(layout: str) -> str:
    """"append", "snapshot" or "rows" (the layout's capture mode in the registry)."""
    return registry.mode_of(layout)


def classify(agent: str, rel: str) -> str | None:
    """The layout of a file (None: not history), by the agent's reader module."""
    if not registry.known(agent):
        return None
    layout: str | None = registry.rules(agent)[0](rel)
    return layout


def _descend(agent: str, rel_dir: str) -> bool:
    """Whether a folder (relative to the root) can hold history."""
    return registry.known(agent) and bool(registry.rules(agent)[1](rel_dir))


def _kind(e: os.DirEntry[str]) -> str:
    """"link", "dir", "file" or "other" (a FIFO, socket, device) of an entry, never
    following a link (so never ELOOP); the type comes with the listing (no stat)."""
    try:
        if e.is_symlink():
            return "link"
        if e.is_dir(follow_symlinks=False):
            return "dir"
        return "file" if e.is_file(follow_symlinks=False) else "other"
    except OSError:
        return "file"  # vanished while listed: the poll reports it missing


def layout_of(agent: str, rel: str) -> str | None:
    """The layout of the file at `rel` if `walk` would find it there (every parent folder
    is one it descends into), else None."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        if not _descend(agent, "/".join(parts[:i])):
            return None
    return classify(agent, rel)


def descends(agent: str, rel_dir: str) -> bool:
    """Whether `walk` looks inside the folder `rel_dir` (relative to the root)."""
    return _descend(agent, rel_dir)


def walk(agent: str, root: str) -> Iterator[Entry]:
    """Every entry examined under `root`, depth first in name order (see the module
    promises); never raises: an unreadable folder is an `Entry` with `error` set."""
    stack: list[str] = [""]
    while stack:
        rel_dir = stack.pop()
        path = os.path.join(root, rel_dir) if rel_dir else root
        try:
            with os.scandir(path) as it:
                items = sorted((e.name, _kind(e)) for e in it)
        except FileNotFoundError:
            continue  # vanished since it was listed
        except OSError as exc:
            yield Entry(rel_dir or ".", None, error=f"cannot list folder: {exc.strerror or exc}")
            continue
        subdirs: list[str] = []
        for name, kind in items:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if kind == "dir":
                if _descend(agent, rel):
                    subdirs.append(rel)
                yield Entry(rel, None)
            elif kind == "link":
                wanted = _descend(agent, rel) or classify(agent, rel) is not None
                yield Entry(rel, None, skipped=LINK_SKIPPED if wanted else None)
            elif kind == "other":  # never read, so never a source (it would stay pending)
                wanted = classify(agent, rel) is not None
                yield Entry(rel, None, skipped=NOT_A_FILE_SKIPPED if wanted else None)
            else:
                yield Entry(rel, classify(agent, rel))
        stack.extend(reversed(subdirs))
