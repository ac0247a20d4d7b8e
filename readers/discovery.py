"""Discovery: which files under a root are agent history, and of what layout.

Promises:
- read-only: directories are listed with `os.scandir`, nothing else is touched;
- streaming: `walk(root)` is a generator that yields every directory entry it examines
  (so the capture engine can stop after 32 entries a tick and resume later) and only
  descends into the folders that can hold history (never `file-history/`, `todos/`, …);
- `classify(agent, rel)` is a pure function of the relative POSIX path; the layout strings
  are the parsers' dispatch keys and are never renamed:
  claude.session, claude.subagent, claude.subagent_meta, claude.tool_result,
  claude.history, codex.rollout, codex.history, opencode.json, opencode.db,
  runs.log, runs.meta.
- credential files (opencode `auth.json`, `*.key`) are never classified.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from readers.records import LINE_LAYOUTS, ROW_LAYOUTS

# top-level names worth descending into, per agent ("" = the root itself)
_TOP_DIRS = {
    "claude": {"projects"},
    "codex": {"sessions", "archived_sessions"},
    "opencode": {"storage", "project"},
    "runs": {"archive"},
}


class Entry(NamedTuple):
    """One examined directory entry; `layout` is None for folders and ignored files."""

    rel: str
    layout: str | None


def kind_of(layout: str) -> str:
    """"append", "snapshot" or "rows"."""
    if layout in LINE_LAYOUTS:
        return "append"
    if layout in ROW_LAYOUTS:
        return "rows"
    return "snapshot"


def classify(agent: str, rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if agent == "claude":
        return _claude(parts, name)
    if agent == "codex":
        if parts == ["history.jsonl"]:
            return "codex.history"
        if parts[0] == "sessions" and name.startswith("rollout-") and name.endswith(".jsonl"):
            return "codex.rollout"
        if parts[0] == "archived_sessions" and name.endswith(".jsonl"):
            return "codex.rollout"
        return None
    if agent == "opencode":
        if parts == ["opencode.db"]:
            return "opencode.db"
        if not name.endswith(".json") or name == "auth.json":
            return None
        if parts[0] == "storage" and len(parts) >= 3:
            return "opencode.json"
        if parts[0] == "project" and len(parts) >= 5 and parts[2] == "storage":
            return "opencode.json"
        return None
    if agent == "runs":
        if len(parts) == 1 or (len(parts) == 2 and parts[0] == "archive"):
            if name.endswith(".log"):
                return "runs.log"
            if name.endswith(".json"):
                return "runs.meta"
        return None
    return None


def _claude(parts: list[str], name: str) -> str | None:
    if parts == ["history.jsonl"]:
        return "claude.history"
    if parts[0] != "projects" or len(parts) < 3:
        return None
    depth = len(parts)
    if depth == 3:  # projects/<enc>/<file>
        if name.endswith(".jsonl"):
            return "claude.subagent" if name.startswith("agent-") else "claude.session"
        return None
    # projects/<enc>/<session>/...
    sub = parts[3]
    if sub == "subagents" and name.startswith("agent-"):
        if name.endswith(".meta.json"):
            return "claude.subagent_meta"
        if name.endswith(".jsonl"):
            return "claude.subagent"
        return None
    if sub == "tool-results" and depth == 5 and name.endswith(".txt"):
        return "claude.tool_result"
    return None


def _descend(agent: str, rel_dir: str) -> bool:
    """Whether a folder (relative to the root) can hold history."""
    parts = rel_dir.split("/")
    top = _TOP_DIRS.get(agent, set())
    if parts[0] not in top:
        return False
    if agent == "claude":
        # projects/<enc>/<session>/{subagents/**,tool-results}; never memory/ etc.
        if len(parts) >= 4:
            return parts[3] in ("subagents", "tool-results")
        return len(parts) < 3 or parts[2] not in ("memory",)
    if agent == "runs":
        return len(parts) == 1
    if agent == "opencode" and parts[0] == "project" and len(parts) >= 3:
        return parts[2] == "storage"
    return True


def layout_of(agent: str, rel: str) -> str | None:
    """The layout of the file at `rel` if `walk` would find it there (every parent folder
    is one it descends into), else None."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        if not _descend(agent, "/".join(parts[:i])):
            return None
    return classify(agent, rel)


def top_dirs(agent: str) -> set[str]:
    """The folders directly under a root that can hold history (the rest is never read)."""
    return set(_TOP_DIRS.get(agent, set()))


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
