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
- credential files (opencode `auth.json`, `*.key`) are never classified;
- capture never leaves a root through a link: a symbolic link under a root (to a file or
  a folder, inside the root or out of it, looping or dangling) is never followed. `walk`
  decides entry by entry: a link where history could be is yielded with `skipped` set to
  the reason, a folder that cannot be listed (permissions, vanished) with `error` set, and
  one bad entry never hides its siblings. A root that is itself a link is followed (the
  user configured it).
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
    """One examined directory entry; `layout` is None for folders and ignored files.

    `skipped`: why a link was not followed; `error`: why a folder could not be listed."""

    rel: str
    layout: str | None
    skipped: str | None = None
    error: str | None = None


LINK_SKIPPED = "symbolic link, not followed (capture stays inside its roots)"


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


def _kind(e: os.DirEntry[str]) -> str:
    """"link", "dir" or "file" of an entry, never following a link (so never ELOOP)."""
    try:
        if e.is_symlink():
            return "link"
        return "dir" if e.is_dir(follow_symlinks=False) else "file"
    except OSError:
        return "file"  # vanished while listed: the poll reports it missing


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
                try:
                    if e.is_symlink():
                        continue  # never followed (see `walk`)
                    if rel in known:
                        yield rel, e
                        continue
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if _descend(agent, rel):
                        stack.append(rel)
                elif classify(agent, rel) is not None:
                    yield rel, e
