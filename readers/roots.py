"""Where agent history lives: resolving the capture roots.

Promises:
- pure: flags, config values, environment values and the user's home directory are passed
  in as arguments (only `cli` reads the environment and config files);
- precedence per agent: flag, else `config.json` key, else environment, else default (the
  agents, their keys, variables and defaults come from readers/registry.py);
- a root that does not exist is returned with `exists=False` (reported, never an error);
- a folder named twice for one agent (directly or through a symlink) is returned once;
- `root_id(path)` is a short, stable hash of the absolute root path: it names the root
  inside source ids ("<agent>:<root-id>:<relative posix path>").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eventlog.digest import sha256
from readers import registry

AGENTS = registry.names()

# config.json keys (a string, a comma-separated string, or a list of strings)
CONFIG_KEYS = {a.name: a.config_key for a in registry.REGISTRY}


class Root:
    """One configured source root of one agent (`id` = `root_id(path)`)."""

    __slots__ = ("agent", "exists", "id", "origin", "path")

    def __init__(self, agent: str, path: Path, origin: str, exists: bool) -> None:
        self.agent = agent
        self.path = path
        self.origin = origin  # "flag", "config", "env", "default"
        self.exists = exists
        self.id = root_id(path)

    def __repr__(self) -> str:
        return f"Root({self.agent!r}, {str(self.path)!r}, {self.origin!r}, {self.exists})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Root) and (self.agent, self.path, self.origin, self.exists) == (
            other.agent, other.path, other.origin, other.exists)

    def __hash__(self) -> int:
        return hash((self.agent, self.path))

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "path": str(self.path),
            "id": self.id,
            "origin": self.origin,
            "exists": self.exists,
        }


def root_id(path: Path | str) -> str:
    """Ten hex digits of SHA-256 over the absolute root path (stable across runs)."""
    return sha256(os.fspath(path).encode("utf-8", "surrogateescape")).hexdigest()[:10]


def source_id(agent: str, root: Path | str, rel: str) -> str:
    return f"{agent}:{root_id(root)}:{rel}"


def split_source(source: str) -> tuple[str, str, str]:
    """(agent, root id, relative path) of a source id."""
    agent, rid, rel = source.split(":", 2)
    return agent, rid, rel


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, Sequence):
        return [str(v).strip() for v in value if str(v).strip()]
    return [str(value)]


def _abs(p: str, user_home: Path) -> Path:
    if p == "~" or p.startswith("~/"):
        p = str(user_home) + p[1:]
    return Path(os.path.abspath(p))


def resolve_roots(
    *,
    flags: Mapping[str, str | Sequence[str] | None],
    config: Mapping[str, Any],
    env: Mapping[str, str],
    user_home: Path,
    agents: Sequence[str] = AGENTS,
    project_dirs: Sequence[str] = (),
) -> list[Root]:
    """Every root of every agent, in a stable order, existing or not.

    Agents that write into project folders (registry `extra["projects"]`: Aider, Crush) also
    get the `project_roots` folders (flag `project_roots`, else config key `project_roots`;
    origin "project_roots") and each of `project_dirs` (the cwds captured sessions name;
    origin "cwd") that exists and that no other root of the agent already reaches within
    its scan depth (readers/project_scan.py). At most `MAX_CWD_ROOTS` cwd roots are added."""
    out: list[Root] = []
    for agent in agents:
        seen_real: set[str] = set()
        candidates = (
            ("flag", _as_list(flags.get(agent))),
            ("config", _as_list(config.get(CONFIG_KEYS[agent]))),
            ("env", _as_list(_env_value(agent, env))),
            ("default", _defaults(agent, env, user_home)),
        )
        origin, values = next(((o, v) for o, v in candidates if v), ("default", []))
        for v in values:
            path = _abs(v, user_home)
            real = os.path.realpath(path)
            if real in seen_real:  # the same folder twice (a symlink): capture it once
                continue
            seen_real.add(real)
            out.append(Root(agent, path, origin, path.is_dir()))
        if registry.get(agent).extra.get("projects"):
            extra = _as_list(flags.get(PROJECT_ROOTS)) or _as_list(config.get(PROJECT_ROOTS))
            mine = [r for r in out if r.agent == agent]
            for v in extra:
                path = _abs(v, user_home)
                if os.path.realpath(path) not in seen_real:
                    seen_real.add(os.path.realpath(path))
                    root = Root(agent, path, PROJECT_ROOTS, path.is_dir())
                    out.append(root)
                    mine.append(root)
            out.extend(_cwd_roots(agent, mine, project_dirs, user_home))
    return out


PROJECT_ROOTS = "project_roots"  # config key and flag name (a path list, like <agent>_dir)
MAX_CWD_ROOTS = 64


def _cwd_roots(
    agent: str, roots: list[Root], dirs: Sequence[str], user_home: Path
) -> list[Root]:
    """Roots for the project folders sessions named that no scan of `roots` reaches."""
    from readers.project_scan import MAX_DEPTH, descend

    home_real = os.path.realpath(user_home)
    scans = [os.path.realpath(r.path) for r in roots if r.exists]
    out: list[Root] = []
    for d in sorted({d for d in dirs if isinstance(d, str) and os.path.isabs(d)}, key=len):
        if len(out) >= MAX_CWD_ROOTS:
            break
        real = os.path.realpath(d)
        if home_real.startswith(real.rstrip(os.sep) + os.sep) or real == os.sep:
            continue  # "/" or an ancestor of the home: far too wide to scan
        if not os.path.isdir(real) or any(_reaches(s, real, MAX_DEPTH, descend) for s in scans):
            continue
        scans.append(real)
        out.append(Root(agent, Path(os.path.abspath(d)), "cwd", True))
    return out


def _reaches(scan: str, target: str, depth: int, descend: Any) -> bool:
    """Whether a walk from `scan` descends into `target` (or is it)."""
    if target == scan:
        return True
    if not target.startswith(scan.rstrip(os.sep) + os.sep):
        return False
    rel = os.path.relpath(target, scan).replace(os.sep, "/")
    return rel.count("/") < depth and bool(descend(rel))


def _env_value(agent: str, env: Mapping[str, str]) -> str | None:
    for var, suffix in registry.get(agent).env:
        value = env.get(var)
        if value:
            return os.path.join(value, suffix) if suffix else value
    return None


def _defaults(agent: str, env: Mapping[str, str], user_home: Path) -> list[str]:
    spec = registry.get(agent)
    out = [str(user_home / d) for d in spec.defaults]
    for d, marker in spec.optional_defaults:
        if d.startswith(".config/"):  # XDG_CONFIG_HOME moves ~/.config
            base = env.get("XDG_CONFIG_HOME") or str(user_home / ".config")
            path = os.path.join(base, d[len(".config/"):])
        else:
            path = str(user_home / d)
        if os.path.isdir(os.path.join(path, marker)):
            out.append(path)
    return out
