"""Bounded scans for agents that write into project folders (Aider, Crush).

A project-root agent's root is a folder that holds projects (by default the home directory;
also every `project_roots` entry and every project directory a captured session names as its
cwd). Its history files sit in a project folder at most `MAX_DEPTH` folders below the root.

Promises (pure functions of relative POSIX paths; no I/O):
- `descend(rel_dir, data_dirs)` allows a folder when it is at most `MAX_DEPTH` deep, is not
  hidden and is not a dependency, cache or build folder (`SKIP`); a hidden folder named in
  `data_dirs` (Crush's `.crush`) is allowed one level below such a folder;
- so a walk visits only the folders that can hold a project's files, and the tick bounds of
  discovery (32 directory entries a tick) apply to these walks as to every other.
"""

from __future__ import annotations

MAX_DEPTH = 3

SKIP = frozenset({
    "node_modules", "bower_components", "jspm_packages", "vendor", "venv", "virtualenv",
    "site-packages", "__pycache__", "build", "dist", "target", "_build", "coverage", "Pods",
    "DerivedData", "Library", "Applications", "Pictures", "Music", "Movies", "Videos",
    "snap",
})


def descend(rel_dir: str, data_dirs: frozenset[str] = frozenset()) -> bool:
    parts = rel_dir.split("/")
    *dirs, last = parts
    if last in data_dirs:
        return len(dirs) <= MAX_DEPTH and all(_plain(p) for p in dirs)
    return len(parts) <= MAX_DEPTH and all(_plain(p) for p in parts)


def _plain(name: str) -> bool:
    return not name.startswith(".") and name not in SKIP and not name.endswith(".egg-info")


def depth_ok(rel: str) -> bool:
    """A file `rel` sits in a project folder the scan reaches."""
    parts = rel.split("/")
    return len(parts) - 1 <= MAX_DEPTH and all(_plain(p) for p in parts[:-1])
