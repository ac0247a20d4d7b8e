"""Discovery: which files under a root are agent history, and of what layout.

Promises:
- read-only: directories are listed with `os.scandir`, nothing else is touched;
- streaming: `walk(root)` is a generator that yields every directory entry it examines
  (so the capture engine can stop after 32 entries a tick and resume later) and only
  descends into the folders that can hold history (never `file-history/`, `todos/`, …);
- `classify(agent, rel)` is a pure function of the relative POSIX path, answered by the
  agent's reader module (readers/registry.py); the layout strings are the parsers' dispatch
  keys and are never renamed (the registry lists them with their capture mode);
- credential files (opencode `auth.json`, `*.key`) are never classified.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from readers import registry


class Entry(NamedTuple):
    """One examined directory entry; `layout` is None for folders and ignored files."""

    rel: str
    layout: str | None


def kind_of(layout: str) -> str:
    """"append", "snapshot" or "rows" (the layout's capture mode in the registry)."""
    return registry.mode_of(layout)


def classify(agent: str, rel: str) -> str | None:
    """The layout of a file (None: not history), by the agent's reader module."""
    if not registry.known(agent):
        return None
    layout: str | None = registry.reader(agent).classify(rel)
    return layout


def _descend(agent: str, rel_dir: str) -> bool:
    """Whether a folder (relative to the root) can hold history."""
    return registry.known(agent) and bool(registry.reader(agent).descend(rel_dir))


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
    """Every entry examined under `root`, depth first in name order; never raises on
    unreadable or vanished folders (they are skipped)."""
    stack: list[str] = [""]
    while stack:
        rel_dir = stack.pop()
        path = os.path.join(root, rel_dir) if rel_dir else root
        try:
            with os.scandir(path) as it:
                items = sorted((e.name, e.is_dir()) for e in it)
        except OSError:
            continue
        subdirs: list[str] = []
        for name, is_dir in items:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if is_dir:
                if _descend(agent, rel):
                    subdirs.append(rel)
                yield Entry(rel, None)
            else:
                yield Entry(rel, classify(agent, rel))
        stack.extend(reversed(subdirs))


def files(
    agent: str, root: str, known: Mapping[str, object] | None = None
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(rel, entry) of every history file under `root`, in no particular order: the lean
    walk of the no-change check (same folders and layouts as `walk`). Names in `known`
    are yielded without classifying them again."""
    known = known or {}
    stack: list[str] = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(os.path.join(root, rel_dir) if rel_dir else root)
        except OSError:
            continue
        with it:
            for e in it:
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                if rel in known:
                    yield rel, e
                    continue
                try:
                    is_dir = e.is_dir()
                except OSError:
                    continue
                if is_dir:
                    if _descend(agent, rel):
                        stack.append(rel)
                elif classify(agent, rel) is not None:
                    yield rel, e
