"""Registering `agentlog mcp` with the agents' MCP clients, idempotently.

Promises (docs/mcp.md#register):
- one entry named `agentlog` per client: installing again, with another `--home` or from a
  moved venv, replaces it (in place, keeping keys the user added to it) and says so;
- uninstall removes only that entry;
- files are edited through `settings_files` (backup, atomic, format kept): Codex's
  config.toml with tomlkit (a file already broken by duplicate `[mcp_servers.agentlog]`
  tables is repaired), opencode's `opencode.jsonc` (read first when present, comments kept)
  or `opencode.json`, Claude Code's `~/.claude.json` (`--file` only: its CLI owns it); the
  `JSON_CLIENTS` files (a JSONC one edited surgically, comments kept), Goose's config.yaml
  with ruamel.yaml, and Continue's block file `mcpServers/agentlog.yaml` written whole;
- the client's own CLI is used for Claude Code and Codex when it is on PATH: the old entry
  is removed first, so a second run never fails with "already exists".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.services.errors import Failure
from cli.services.settings import files as sf

if TYPE_CHECKING:
    from cli.services.config import Home

NAME = "agentlog"


@dataclass(frozen=True)
class Outcome:
    """What a registration did: "added", "replaced", "unchanged" or "removed"/"absent"."""

    action: str
    where: str


class RegistrationError(Failure):
    """A client CLI failed, or a config file cannot be edited safely."""


# --- where -------------------------------------------------------------------------------


def claude_json(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~")
    return Path(base) / ".claude.json"


def opencode_config(env: dict[str, str] | None = None) -> Path:
    """The file opencode reads: `opencode.jsonc` when present, else `opencode.json`."""
    env = dict(os.environ) if env is None else env
    base = Path(env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config"))
    folder = base / "opencode"
    jsonc = folder / "opencode.jsonc"
    return jsonc if jsonc.exists() else folder / "opencode.json"


# --- client CLIs ---------------------------------------------------------------------------


def _cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RegistrationError(f"{argv[0]}: {exc}") from exc


def add_argv(client: str, command: list[str]) -> list[str]:
    if client == "claude":
        return ["claude", "mcp", "add", "-s", "user", NAME, "--", *command]
    return [client, "mcp", "add", NAME, "--", *command]


def remove_argv(client: str) -> list[str]:
    if client == "claude":
        return ["claude", "mcp", "remove", "-s", "user", NAME]
    return [client, "mcp", "remove", NAME]


def register_cli(client: str, command: list[str]) -> Outcome:
    removed = _cli(remove_argv(client)).returncode == 0
    argv = add_argv(client, command)
    proc = _cli(argv)
    if proc.returncode != 0:
        raise RegistrationError(f"{client} mcp add failed (exit {proc.returncode}): "
                                f"{(proc.stderr or proc.stdout).strip()[:500]}")
    return Outcome("replaced" if removed else "added", " ".join(argv))


def unregister_cli(client: str) -> Outcome:
    argv = remove_argv(client)
    proc = _cli(argv)
    return Outcome("removed" if proc.returncode == 0 else "absent", " ".join(argv))


def has_cli(client: str) -> bool:
    return shutil.which(client) is not None


# --- files ---------------------------------------------------------------------------------


def _merge(old: Any, new: dict[str, Any]) -> dict[str, Any]:
    return {**old, **new} if isinstance(old, dict) else dict(new)


# Clients whose MCP servers live in a JSON file under `mcpServers` (no CLI of theirs is
# used: agentlog edits the file). name -> (its file, the environment variable that moves
# its folder, the entry). Sources (docs/mcp.md's table): geminicli.com/docs/tools/mcp-server,
# the Qwen Code docs (a Gemini CLI fork: the same file under ~/.qwen), docs.cursor.com
# (Model Context Protocol), docs.github.com (Copilot CLI: add MCP servers), kiro.dev/docs/
# cli/mcp/configuration.
JSON_CLIENTS: dict[str, tuple[str, str | None, str]] = {
    "gemini": (".gemini/settings.json", None, "plain"),
    "qwen": (".qwen/settings.json", None, "plain"),
    "cursor": (".cursor/mcp.json", None, "plain"),
    "copilot": (".copilot/mcp-config.json", "COPILOT_HOME", "copilot"),
    "kiro": (".kiro/settings/mcp.json", None, "plain"),
    # ampcode.com/manual (MCP): user settings, servers under the literal key "amp.mcpServers"
    "amp": (".config/amp/settings.json", None, "plain"),
    # docs.cline.bot (MCP, configuring servers): the VS Code extension's settings (Linux path)
    "cline": (".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
              "cline_mcp_settings.json", None, "plain"),
    # github.com/charmbracelet/crush docs/config (Legacy JSON; the MCP shape: crush.json's
    # schema and README): `mcp.<name>` = {type: "stdio", command, args}, JSONC allowed
    "crush": (".config/crush/crush.json", "XDG_CONFIG_HOME", "crush"),
}
# A second home of a client's file, used when its folder exists and the first's does not:
# the Cline CLI (npm `cline`, 3.x) reads ~/.cline/data/settings/ (what `cline config mcp`
# printed, session 28), the VS Code extension the file above.
OTHER_FILE: dict[str, str] = {"cline": ".cline/data/settings/cline_mcp_settings.json"}
# The object holding the servers, when it is not `mcpServers`.
SERVERS_KEY: dict[str, str] = {"amp": "amp.mcpServers", "crush": "mcp"}
# Clients that read their file as JSON with comments: a file that is not plain JSON is
# edited surgically (`settings.jsonc`: only the text of our member changes, comments and
# trailing commas stay). Crush documents crush.json as JSONC (docs/config, Legacy JSON);
# Gemini CLI (and Qwen Code, its fork) and Amp read their settings with comments allowed.
JSONC_CLIENTS = frozenset({"gemini", "qwen", "amp", "crush"})


def servers_key(client: str) -> str:
    return SERVERS_KEY.get(client, "mcpServers")


def json_client_config(client: str, env: dict[str, str] | None = None) -> Path:
    """The settings file of a `JSON_CLIENTS` client (its folder moved by its variable)."""
    e = os.environ if env is None else env
    rel, var, _ = JSON_CLIENTS[client]
    if var == "XDG_CONFIG_HOME" and e.get(var):  # the file's path below ~/.config
        return Path(e[var]) / Path(rel).relative_to(".config")
    if var and e.get(var):
        return Path(e[var]) / Path(rel).name
    home = Path(e.get("HOME") or Path.home())
    other = OTHER_FILE.get(client)
    if other is not None and not (home / rel).parent.is_dir() and (
            home / other).parent.parent.is_dir():
        return home / other
    return home / rel


def json_client_entry(client: str, command: list[str]) -> dict[str, Any]:
    if JSON_CLIENTS[client][2] == "copilot":
        return {"type": "local", "command": command[0], "args": command[1:], "tools": ["*"]}
    if JSON_CLIENTS[client][2] == "crush":
        return {"type": "stdio", "command": command[0], "args": command[1:]}
    return {"command": command[0], "args": command[1:]}


def _plain_json(text: str | None) -> bool:
    """True when `text` is missing, blank or plain JSON (no comments, no trailing commas)."""
    if text is None or not text.strip():
        return True
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def register_json_file(path: Path, entry: dict[str, Any], key: str = "mcpServers", *,
                       jsonc: bool = False) -> Outcome:
    """Our entry in `key` (`mcpServers`) of a JSON settings file (see `settings.files`:
    format kept, atomic, byte-identical after install + uninstall); with `jsonc`, a file
    holding comments or trailing commas is edited surgically (`register_jsonc_file`)."""
    if jsonc:
        old = sf.read_text(path)
        if not _plain_json(old):
            return register_jsonc_file(path, entry, key, old or "")
    state = {"had": False}

    def change(data: dict[str, Any]) -> None:
        servers = data.setdefault(key, {})
        if not isinstance(servers, dict):
            raise sf.SettingsError(f"{path}: '{key}' is not an object")
        state["had"] = NAME in servers
        servers[NAME] = _merge(servers.get(NAME), entry)

    changed = sf.edit_json(path, change, clean=lambda d: NAME not in d.get(key, {}))
    return Outcome(_action(changed, state["had"]), str(path))


def register_claude_file(path: Path, command: list[str]) -> Outcome:
    entry = {"type": "stdio", "command": command[0], "args": command[1:], "env": {}}
    state = {"had": False}

    def change(data: dict[str, Any]) -> None:
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise sf.SettingsError(f"{path}: 'mcpServers' is not an object")
        state["had"] = NAME in servers
        servers[NAME] = _merge(servers.get(NAME), entry)

    changed = sf.edit_json(path, change, clean=lambda d: NAME not in d.get("mcpServers", {}))
    return Outcome(_action(changed, state["had"]), str(path))


def unregister_json_file(path: Path, key: str = "mcpServers", *, jsonc: bool = False) -> Outcome:
    if jsonc:
        old = sf.read_text(path)
        if not _plain_json(old):
            return unregister_jsonc_file(path, key, old or "")
    return unregister_claude_file(path, key)


def register_jsonc_file(path: Path, entry: dict[str, Any], key: str, old: str) -> Outcome:
    """Our entry in `key` of a JSONC file: only the text of `key.agentlog` is inserted or
    replaced (comments, trailing commas and layout elsewhere stay byte for byte)."""
    from cli.services.settings import jsonc as je

    try:
        data = je.parse(old)
    except je.JsoncError as exc:
        raise sf.SettingsError(f"{path}: {exc}; fix it or edit it by hand") from exc
    if not isinstance(data, dict):
        raise sf.SettingsError(f"{path}: expected a JSON object")
    servers = data.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise sf.SettingsError(f"{path}: '{key}' is not an object")
    mine = (servers or {}).get(NAME)
    new = _merge(mine, entry)
    if mine == new:
        return Outcome("unchanged", str(path))
    try:
        text = je.set_member(old, [key, NAME], new)
    except je.JsoncError as exc:
        raise sf.SettingsError(f"{path}: {exc}; fix it or edit it by hand") from exc
    if mine is None:
        sf.keep_orig(path, old)
    sf.write_text(path, old, text)
    return Outcome("replaced" if mine is not None else "added", str(path))


def unregister_jsonc_file(path: Path, key: str, old: str) -> Outcome:
    """Remove `key.agentlog` from a JSONC file (and `key` when ours was its last member and
    agentlog made it); the user's original bytes come back when the meaning is theirs."""
    from cli.services.settings import jsonc as je

    try:
        text = je.remove_member(old, [key, NAME])
        if text == old:
            return Outcome("absent", str(path))
        gone = je.parse(text)
        bare, bare_text = gone, text
        if isinstance(gone, dict) and gone.get(key) == {}:  # our entry was its last
            bare_text = je.remove_member(text, [key])
            bare = je.parse(bare_text)

        def same(pristine: str) -> bool:
            if not pristine.strip():
                return bool(bare == {})
            return bool(je.parse(pristine) in (gone, bare))

        had_orig = sf.orig_path(path).exists()
        text = sf.restored(path, text, same)
    except je.JsoncError as exc:
        raise sf.SettingsError(f"{path}: {exc}; fix it or edit it by hand") from exc
    marker = sf.new_path(path)
    if bare == {} and marker.exists():  # the install created this file: remove it
        sf.remove_created(path)
        marker.unlink()
        sf.backup_path(path).unlink(missing_ok=True)
        return Outcome("removed", str(path))
    if had_orig and sf.orig_path(path).exists():  # not restored: drop the empty key we made
        text = bare_text
    sf.write_text(path, old, text)
    if had_orig and not sf.orig_path(path).exists():  # back to the user's bytes
        sf.backup_path(path).unlink(missing_ok=True)
    return Outcome("removed", str(path))


def _orig_has(path: Path, key: str, load: Any) -> bool:
    """Whether the user's original bytes (`.agentlog.orig`) held `key` themselves: then an
    uninstall that empties it keeps it empty, as it was."""
    pristine = sf.read_text(sf.orig_path(path))
    if pristine is None:
        return False
    try:
        return key in load(path, pristine)
    except sf.SettingsError:
        return False


def _drop_ours(doc: Any, key: str, servers: Any, path: Path, load: Any) -> None:
    """Our entry out of `servers` (`doc[key]`); `key` goes too when that empties it, unless
    the user's original bytes held it (`_orig_has`)."""
    del servers[NAME]
    if not servers and not _orig_has(path, key, load):
        del doc[key]


def unregister_claude_file(path: Path, key: str = "mcpServers") -> Outcome:
    def change(data: dict[str, Any]) -> None:
        servers = data.get(key)
        if isinstance(servers, dict) and NAME in servers:
            _drop_ours(data, key, servers, path, sf.load_json)

    return Outcome("removed" if sf.edit_json(path, change, removing=True) else "absent",
                   str(path))


def _action(changed: bool, had: bool) -> str:
    return "unchanged" if not changed else ("replaced" if had else "added")


def _dedupe_codex(text: str) -> str:
    """Drop every `[mcp_servers.agentlog]` table (and its sub-tables) line by line: the
    repair for files that hold it twice, which no TOML parser accepts."""
    header = f"[mcp_servers.{NAME}]"
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s.startswith("["):
            skipping = s == header or s.startswith(f"[mcp_servers.{NAME}.")
        if not skipping:
            kept.append(line)
    return "".join(kept)


def _codex_servers(doc: Any, path: Path) -> Any:
    """`mcp_servers` of a Codex config (None when absent); a value of another shape (an
    array, a number, an entry that is not a table) is the user's to fix, never guessed at."""
    servers = doc.get("mcp_servers")
    if servers is None:
        return None
    if not isinstance(servers, dict):
        raise sf.SettingsError(f"{path}: 'mcp_servers' is not a table; fix it or edit it by hand")
    if NAME in servers and not isinstance(servers[NAME], dict):
        raise sf.SettingsError(f"{path}: 'mcp_servers.{NAME}' is not a table; fix it or edit "
                               "it by hand")
    return servers


def _codex_clean(data: Any) -> bool:
    servers = data.get("mcp_servers", {})
    return not isinstance(servers, dict) or NAME not in servers


def register_codex_file(path: Path, command: list[str]) -> Outcome:
    text = sf.read_text(path)
    if text is not None and text.count(f"[mcp_servers.{NAME}]") > 1:
        sf.write_text(path, text, _dedupe_codex(text))  # backup first, like every edit
    state = {"had": False}

    def change(doc: Any) -> None:
        import tomlkit

        servers = _codex_servers(doc, path)
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc["mcp_servers"] = servers
        mine = servers.get(NAME)
        state["had"] = mine is not None
        if mine is None:
            table = tomlkit.table()
            table["command"] = command[0]
            table["args"] = command[1:]
            servers[NAME] = table
            return
        if mine.get("command") != command[0]:
            mine["command"] = command[0]
        if list(mine.get("args", [])) != command[1:]:
            mine["args"] = command[1:]

    changed = sf.edit_toml(path, change, clean=_codex_clean)
    return Outcome(_action(changed, state["had"]), str(path))


def unregister_codex_file(path: Path) -> Outcome:
    def change(doc: Any) -> None:
        servers = _codex_servers(doc, path)
        if servers is not None and NAME in servers:
            del servers[NAME]
            if not servers:
                del doc["mcp_servers"]

    return Outcome("removed" if sf.edit_toml(path, change, removing=True) else "absent",
                   str(path))


def opencode_entry(command: list[str]) -> dict[str, Any]:
    return {"type": "local", "command": command, "enabled": True}


OPENCODE_SCHEMA = "https://opencode.ai/config.json"


def register_opencode_file(path: Path, command: list[str]) -> Outcome:
    from cli.services.settings import jsonc as je

    entry = opencode_entry(command)
    old = sf.read_text(path)
    if old is None or not old.strip():
        body = {"$schema": OPENCODE_SCHEMA, "mcp": {NAME: entry}}
        changed = sf.edit_json(path, lambda d: d.update(body), clean=lambda d: True)
        return Outcome("added" if changed else "unchanged", str(path))
    try:
        data = je.parse(old)
    except je.JsoncError as exc:
        raise sf.SettingsError(f"{path}: {exc}") from exc
    servers = data.get("mcp") if isinstance(data, dict) else None
    if servers is not None and not isinstance(servers, dict):
        raise sf.SettingsError(f"{path}: 'mcp' is not an object")
    mine = (servers or {}).get(NAME)
    new = _merge(mine, entry)
    if mine == new:
        return Outcome("unchanged", str(path))
    try:
        text = je.set_member(old, ["mcp", NAME], new)
    except je.JsoncError as exc:
        raise sf.SettingsError(f"{path}: {exc}") from exc
    if mine is None:
        sf.keep_orig(path, old)
    sf.write_text(path, old, text)
    return Outcome("replaced" if mine is not None else "added", str(path))


def unregister_opencode_file(path: Path) -> Outcome:
    from cli.services.settings import jsonc as je

    old = sf.read_text(path)
    if old is None:
        return Outcome("absent", str(path))
    try:
        text = je.remove_member(old, ["mcp", NAME])
        if text == old:
            return Outcome("absent", str(path))
        gone = je.parse(text)
        bare, bare_text = gone, text
        if isinstance(gone, dict) and gone.get("mcp") == {}:  # our entry was its last
            bare_text = je.remove_member(text, ["mcp"])
            bare = je.parse(bare_text)
        created = bare in ({"$schema": OPENCODE_SCHEMA}, {})

        def same(pristine: str) -> bool:
            if not pristine.strip():  # a blank file: install wrote only the schema and mcp
                return created
            return bool(je.parse(pristine) in (gone, bare))

        had_orig = sf.orig_path(path).exists()
        text = sf.restored(path, text, same)
    except je.JsoncError as exc:
        raise sf.SettingsError(f"{path}: {exc}") from exc
    marker = sf.new_path(path)
    if created and marker.exists():  # the install created this file: remove it
        sf.remove_created(path)
        marker.unlink()
        sf.backup_path(path).unlink(missing_ok=True)
        return Outcome("removed", str(path))
    if had_orig and sf.orig_path(path).exists():  # not restored: drop the empty "mcp" we made
        text = bare_text
    sf.write_text(path, old, text)
    if had_orig and not sf.orig_path(path).exists():  # back to the user's bytes
        sf.backup_path(path).unlink(missing_ok=True)
    return Outcome("removed", str(path))


# --- YAML clients: Goose (its config.yaml) and Continue (a block file of our own) ----------


def goose_config(env: dict[str, str] | None = None) -> Path:
    """Goose's config.yaml: `$XDG_CONFIG_HOME/goose/config.yaml`, else ~/.config/goose/
    (block.github.io/goose/docs/guides/config-files)."""
    e = os.environ if env is None else env
    base = e.get("XDG_CONFIG_HOME") or os.path.join(e.get("HOME") or os.path.expanduser("~"),
                                                    ".config")
    return Path(base) / "goose" / "config.yaml"


GOOSE_DESCRIPTION = "Search the history of AI coding agents (agentlog)"
# Keys of our entry set only when missing (what runs, and that it is enabled, is always ours).
GOOSE_DEFAULTS = frozenset({"description", "envs", "env_keys", "timeout"})


def goose_entry(command: list[str]) -> dict[str, Any]:
    """A stdio extension as Goose's config-files guide shows it."""
    return {"type": "stdio", "name": NAME, "description": GOOSE_DESCRIPTION, "enabled": True,
            "cmd": command[0], "args": command[1:], "envs": {}, "env_keys": [],
            "timeout": 300}


def _goose_extensions(doc: Any, path: Path) -> Any:
    extensions = doc.get("extensions")
    if extensions is None:
        return None
    if not isinstance(extensions, dict):
        raise sf.SettingsError(f"{path}: 'extensions' is not a mapping; fix it or edit it by "
                               "hand")
    if NAME in extensions and not isinstance(extensions[NAME], dict):
        raise sf.SettingsError(f"{path}: 'extensions.{NAME}' is not a mapping; fix it or edit "
                               "it by hand")
    return extensions


def register_goose_file(path: Path, command: list[str]) -> Outcome:
    """`extensions.agentlog` in Goose's config.yaml (ruamel.yaml's round trip: comments and
    layout kept; keys the user added to our entry kept, and their description, envs and
    timeout; `type`, `name`, `cmd`, `args` and `enabled: true` are set each time)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    entry = goose_entry(command)
    state = {"had": False}

    def change(doc: Any) -> None:
        extensions = _goose_extensions(doc, path)
        if extensions is None:
            extensions = CommentedMap()
            doc["extensions"] = extensions
        mine = extensions.get(NAME)
        state["had"] = mine is not None
        if mine is None:
            mine = CommentedMap()
            extensions[NAME] = mine
        for key, value in entry.items():
            if key in GOOSE_DEFAULTS and key in mine:
                continue  # the user's description, envs or timeout stay
            if sf.plain(mine.get(key)) != value:
                mine[key] = CommentedSeq(value) if isinstance(value, list) else (
                    CommentedMap(value) if isinstance(value, dict) else value)

    def clean(data: Any) -> bool:
        extensions = data.get("extensions")
        return not isinstance(extensions, dict) or NAME not in extensions

    changed = sf.edit_yaml(path, change, clean=clean)
    return Outcome(_action(changed, state["had"]), str(path))


def unregister_goose_file(path: Path) -> Outcome:
    def change(doc: Any) -> None:
        extensions = _goose_extensions(doc, path)
        if extensions is not None and NAME in extensions:
            _drop_ours(doc, "extensions", extensions, path, sf.load_yaml)

    return Outcome("removed" if sf.edit_yaml(path, change, removing=True) else "absent",
                   str(path))


CONTINUE_HEADER = ("# agentlog's MCP server for Continue: written by `agentlog mcp install "
                   "continue`,\n# removed by `agentlog mcp uninstall continue`\n")


def continue_block(env: dict[str, str] | None = None) -> Path:
    """Our own block file in Continue's global folder: `$CONTINUE_GLOBAL_DIR` or
    ~/.continue, `mcpServers/agentlog.yaml` (docs.continue.dev/customize/deep-dives/mcp)."""
    e = os.environ if env is None else env
    base = e.get("CONTINUE_GLOBAL_DIR") or os.path.join(
        e.get("HOME") or os.path.expanduser("~"), ".continue")
    return Path(base) / "mcpServers" / f"{NAME}.yaml"


def continue_text(command: list[str]) -> str:
    """The block file: the metadata a standalone block needs, then one stdio server."""
    from ruamel.yaml.comments import CommentedMap

    server = CommentedMap([("name", NAME), ("type", "stdio"), ("command", command[0]),
                           ("args", list(command[1:]))])
    block = CommentedMap([("name", NAME), ("version", "0.0.1"), ("schema", "v1"),
                          ("mcpServers", [server])])
    return CONTINUE_HEADER + sf.dump_yaml(block)


def _ours(path: Path, text: str) -> bool:
    if not text.startswith(CONTINUE_HEADER):
        raise sf.SettingsError(f"{path}: not written by agentlog; rename it or edit it by hand")
    return True


def register_continue_block(path: Path, command: list[str]) -> Outcome:
    """Write our block file whole (Continue loads every YAML file of its mcpServers folder):
    nothing of the user's is edited, and uninstall deletes the file."""
    old = sf.read_text(path)
    if old is not None:
        _ours(path, old)
    new = continue_text(command)
    if not sf.write_owned(path, new):
        return Outcome("unchanged", str(path))
    return Outcome("replaced" if old is not None else "added", str(path))


def unregister_continue_block(path: Path) -> Outcome:
    old = sf.read_text(path)
    if old is None:
        return Outcome("absent", str(path))
    _ours(path, old)
    sf.remove_created(path)
    return Outcome("removed", str(path))


def program() -> list[str]:
    """The absolute agentlog program (this venv's script, else PATH, else `python -m`)."""
    exe = Path(sys.executable).parent / "agentlog"
    found = str(exe) if exe.exists() else shutil.which("agentlog")
    return [found] if found else [sys.executable, "-m", "cli.main"]


def server_command(home: Home) -> list[str]:
    """The absolute command line a client should spawn."""
    return [*program(), "--home", str(home.root), "mcp"]


def snippet(client: str, command: list[str]) -> str:
    """The configuration text (or command) that registers the server with `client`."""
    if client == "claude":
        entry = {"type": "stdio", "command": command[0], "args": command[1:], "env": {}}
        return json.dumps({"mcpServers": {NAME: entry}}, indent=2)
    if client in JSON_CLIENTS:
        return json.dumps({servers_key(client): {NAME: json_client_entry(client, command)}},
                          indent=2)
    if client == "goose":
        return sf.dump_yaml({"extensions": {NAME: goose_entry(command)}})
    if client == "continue":
        return continue_text(command)
    if client == "codex":
        args = ", ".join(json.dumps(a) for a in command[1:])
        return f"[mcp_servers.{NAME}]\ncommand = {json.dumps(command[0])}\nargs = [{args}]\n"
    entry_oc = {"type": "local", "command": command, "enabled": True}
    return json.dumps({"$schema": "https://opencode.ai/config.json", "mcp": {NAME: entry_oc}},
                      indent=2)


def cli_command(client: str, command: list[str]) -> list[str]:
    """The client's own registration command (for a `JSON_CLIENTS` client: the file)."""
    if client in JSON_CLIENTS:
        return ["edit", str(json_client_config(client))]
    if client == "goose":
        return ["edit", str(goose_config())]
    if client == "continue":
        return ["write", str(continue_block())]
    return add_argv(client, command)
