"""Agent hooks that capture the transcript an agent just wrote (docs/capture.md#hooks).

- Claude Code: `SessionEnd` and `PreCompact` command hooks in `settings.json`
  (`$CLAUDE_CONFIG_DIR` or `~/.claude`); Claude Code passes JSON on stdin with
  `transcript_path`.
- Codex: the top-level `notify` program in `config.toml` (`$CODEX_HOME` or `~/.codex`);
  Codex appends one JSON argument (`type`, `thread-id`, …) and names no file, so the
  rollout is found by its thread id. An existing `notify` program is kept: ours runs it
  after capturing (`… hooks run codex -- PROGRAM…`), and uninstall puts it back.

Promises: only entries whose command is `… agentlog … hooks run CLIENT` are ours; install
replaces ours in place (a new home or a moved venv) and never duplicates it; uninstall
removes only ours; every edit goes through `settings_files` (backup first, atomic, format
kept, byte-identical after install + uninstall).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.services.capture.retention import claude_dir as claude_dir  # the Claude folder, shared
from cli.services.capture.retention import claude_settings as claude_settings
from cli.services.settings import files as sf

if TYPE_CHECKING:
    from cli.services.config import Home

CLAUDE_EVENTS = ("SessionEnd", "PreCompact")
HOOK_TIMEOUT_S = 60
_OURS = re.compile(r"(agentlog|cli\.main)\S*['\"]?\s.*\bhooks run (claude|codex)\b")


def codex_config(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return Path(base) / "config.toml"


def hook_argv(base: list[str], home: Path, client: str) -> list[str]:
    return [*base, "--home", str(home), "hooks", "run", client]


def is_ours(command: Any, client: str) -> bool:
    if isinstance(command, list):
        command = shlex.join(str(c) for c in command)
    if not isinstance(command, str):
        return False
    m = _OURS.search(command)
    return m is not None and m.group(2) == client


# --- Claude Code --------------------------------------------------------------------------


def _strip_claude(settings: dict[str, Any]) -> int:
    """Remove every agentlog hook; how many were removed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in CLAUDE_EVENTS:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not (isinstance(h, dict)
                                             and is_ours(h.get("command"), "claude"))]
            removed += len(inner) - len(kept)
            if kept:
                group["hooks"] = kept
                kept_groups.append(group)
            elif len(kept) == len(inner):
                kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed


def _find_claude(settings: dict[str, Any], event: str) -> dict[str, Any] | None:
    hooks = settings.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    for group in groups if isinstance(groups, list) else []:
        inner = group.get("hooks") if isinstance(group, dict) else None
        for h in inner if isinstance(inner, list) else []:
            if isinstance(h, dict) and is_ours(h.get("command"), "claude"):
                return h
    return None


def install_claude(path: Path, argv: list[str]) -> str:
    """Add (or update) our SessionEnd and PreCompact hooks: "added", "updated", "unchanged"."""
    command = shlex.join(argv)
    state = {"found": 0}

    def change(settings: dict[str, Any]) -> None:
        hooks = settings.get("hooks")
        if hooks is not None and not isinstance(hooks, dict):
            raise sf.SettingsError(f"{path}: 'hooks' is not an object")
        for event in CLAUDE_EVENTS:
            mine = _find_claude(settings, event)
            if mine is not None:
                state["found"] += 1
                mine["type"], mine["command"] = "command", command
                mine["timeout"] = HOOK_TIMEOUT_S
                continue
            groups = settings.setdefault("hooks", {}).setdefault(event, [])
            if not isinstance(groups, list):
                raise sf.SettingsError(f"{path}: hooks.{event} is not a list")
            groups.append({"hooks": [{"type": "command", "command": command,
                                      "timeout": HOOK_TIMEOUT_S}]})

    def clean(settings: dict[str, Any]) -> bool:
        return _strip_claude(settings) == 0

    changed = sf.edit_json(path, change, clean=clean)
    return "unchanged" if not changed else ("updated" if state["found"] else "added")


def uninstall_claude(path: Path) -> bool:
    def change(settings: dict[str, Any]) -> None:
        _strip_claude(settings)

    return sf.edit_json(path, change, removing=True)


def claude_installed(path: Path) -> bool:
    data = sf.load_json(path, sf.read_text(path))
    return all(_find_claude(data, e) is not None for e in CLAUDE_EVENTS)


# --- Codex ---------------------------------------------------------------------------------


def _chained(notify: Any) -> list[str] | None:
    """The user's own program kept after `--` in our notify command, if any."""
    items = [str(x) for x in notify]
    if "--" in items:
        return items[items.index("--") + 1:]
    return None


def install_codex(path: Path, argv: list[str]) -> str:
    """Set `notify` to our program (keeping a user's program chained after `--`)."""
    state = {"was": "added"}

    def change(doc: Any) -> None:
        current = doc.get("notify")
        new = list(argv)
        if current is not None:
            items = current.unwrap() if hasattr(current, "unwrap") else current
            if not isinstance(items, list) or not items:
                raise sf.SettingsError(f"{path}: notify is not a list of strings")
            if is_ours(items, "codex"):
                state["was"] = "updated"
                chained = _chained(items)
                if chained:
                    new += ["--", *chained]
            else:
                state["was"] = "chained"
                new += ["--", *(str(x) for x in items)]
            if [str(x) for x in items] == new:
                return
        doc["notify"] = _like(current, new)

    def clean(data: dict[str, Any]) -> bool:
        return not is_ours(data.get("notify"), "codex")

    changed = sf.edit_toml(path, change, clean=clean)
    return state["was"] if changed else "unchanged"


def _like(current: Any, values: list[str]) -> Any:
    import tomlkit

    arr = tomlkit.array()
    arr.extend(values)
    multiline = current is not None and "\n" in getattr(current, "as_string", str)()
    return arr.multiline(multiline)


def uninstall_codex(path: Path) -> bool:
    def change(doc: Any) -> None:
        current = doc.get("notify")
        if current is None:
            return
        items = current.unwrap() if hasattr(current, "unwrap") else current
        if not isinstance(items, list) or not is_ours(items, "codex"):
            return
        chained = _chained(items)
        if chained:
            doc["notify"] = _like(current, chained)
        else:
            del doc["notify"]

    return sf.edit_toml(path, change, removing=True)


def codex_installed(path: Path) -> bool:
    import tomllib

    text = sf.read_text(path)
    if not text:
        return False
    try:
        notify = tomllib.loads(text).get("notify")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(notify, list) and is_ours(notify, "codex")


def base_command() -> list[str]:
    """The absolute agentlog program (as registered with MCP clients)."""
    from cli.services.settings.mcp_clients import program

    return program()


def install_hooks(home: Home, client: str) -> tuple[Path, str]:
    """Install our hook for `client`; (settings file, "added"|"updated"|"chained"|…)."""
    argv = hook_argv(base_command(), home.root, client)
    if client == "claude":
        path = claude_settings()
        return path, install_claude(path, argv)
    path = codex_config()
    return path, install_codex(path, argv)


def uninstall_hooks(client: str) -> tuple[Path, bool]:
    if client == "claude":
        path = claude_settings()
        return path, uninstall_claude(path)
    path = codex_config()
    return path, uninstall_codex(path)
