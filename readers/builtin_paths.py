"""Discovery rules (classify / descend) of the first four agents: Claude Code, Codex CLI,
opencode and delegated runs. Their parser modules re-export them as `classify`/`descend`
(the reader protocol of readers/registry.py).

Promises: pure functions of the relative POSIX path; never classify credential files
(opencode `auth.json`); only descend into folders that can hold history (never Claude's
`file-history/`, `todos/`, `memory/`, …).
"""

from __future__ import annotations


def claude_classify(rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
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


def claude_descend(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] != "projects":
        return False
    # projects/<enc>/<session>/{subagents/**,tool-results}; never memory/ etc.
    if len(parts) >= 4:
        return parts[3] in ("subagents", "tool-results")
    return len(parts) < 3 or parts[2] not in ("memory",)


def codex_classify(rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if parts == ["history.jsonl"]:
        return "codex.history"
    if parts[0] == "sessions" and name.startswith("rollout-") and name.endswith(".jsonl"):
        return "codex.rollout"
    if parts[0] == "archived_sessions" and name.endswith(".jsonl"):
        return "codex.rollout"
    return None


def codex_descend(rel_dir: str) -> bool:
    return rel_dir.split("/", 1)[0] in ("sessions", "archived_sessions")


def opencode_classify(rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if parts == ["opencode.db"]:
        return "opencode.db"
    if not name.endswith(".json") or name == "auth.json":
        return None
    if parts[0] == "storage" and len(parts) >= 3:
        return "opencode.json"
    if parts[0] == "project" and len(parts) >= 5 and parts[2] == "storage":
        return "opencode.json"
    return None


def opencode_descend(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] == "project":
        return len(parts) < 3 or parts[2] == "storage"
    return parts[0] == "storage"


def runs_classify(rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if len(parts) == 1 or (len(parts) == 2 and parts[0] == "archive"):
        if name.endswith(".log"):
            return "runs.log"
        if name.endswith(".json"):
            return "runs.meta"
    return None


def runs_descend(rel_dir: str) -> bool:
    return rel_dir == "archive"
