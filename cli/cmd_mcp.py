"""`agentlog mcp`: run the stdio MCP server, or register it with an agent client.

Registration always names the home explicitly (`--home <abs path>`): MCP clients pass
few environment variables to the servers they spawn, so AGENTLOG_HOME would be lost.
The client's own CLI is used when it is on PATH (it knows its config format); otherwise
Codex and opencode config files are edited in place, adding one entry and keeping the
rest. `--print` only shows what would be registered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from cli.config import Home, get_home

NAME = "agentlog"
CLIENTS = ("claude", "codex", "opencode")


@click.group(invoke_without_command=True)
@click.option("--postgres", "postgres", default=None, metavar="URL",
              help="Answer from the team server (`config` = team.postgres; docs/team.md).")
@click.pass_context
def mcp(ctx: click.Context, postgres: str | None = None) -> None:
    """Run the MCP server on stdio (tools: search_history, get_conversation).

    With a sub-command, register the server with a client instead.
    """
    if ctx.invoked_subcommand is None:
        from cli.mcp_server import serve_stdio

        home = get_home(ctx)
        if postgres is not None:
            from cli.team_sync import resolve_url

            home.postgres = resolve_url(home, postgres)
        serve_stdio(home)


def server_command(home: Home) -> list[str]:
    """The absolute command line a client should spawn."""
    exe = Path(sys.executable).parent / "agentlog"
    found = str(exe) if exe.exists() else shutil.which("agentlog")
    base = [found] if found else [sys.executable, "-m", "cli.main"]
    return [*base, "--home", str(home.root), "mcp"]


def snippet(client: str, command: list[str]) -> str:
    """The configuration text (or command) that registers the server with `client`."""
    if client == "claude":
        entry = {"type": "stdio", "command": command[0], "args": command[1:], "env": {}}
        return json.dumps({"mcpServers": {NAME: entry}}, indent=2)
    if client == "codex":
        args = ", ".join(json.dumps(a) for a in command[1:])
        return f"[mcp_servers.{NAME}]\ncommand = {json.dumps(command[0])}\nargs = [{args}]\n"
    entry_oc = {"type": "local", "command": command, "enabled": True}
    return json.dumps({"$schema": "https://opencode.ai/config.json", "mcp": {NAME: entry_oc}},
                      indent=2)


def cli_command(client: str, command: list[str]) -> list[str]:
    """The client's own registration command."""
    if client == "claude":
        return ["claude", "mcp", "add", "-s", "user", NAME, "--", *command]
    return [client, "mcp", "add", NAME, "--", *command]


def _codex_config() -> Path:
    base = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
    return Path(base) / "config.toml"


def _opencode_config() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "opencode" / "opencode.json"


def write_codex(path: Path, command: list[str]) -> str:
    """Add (or replace) the [mcp_servers.agentlog] table, keeping every other line."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    header = f"[mcp_servers.{NAME}]"
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            skipping = stripped == header or stripped.startswith(f"[mcp_servers.{NAME}.")
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip("\n")
    new = (body + "\n\n" if body else "") + snippet("codex", command)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, new)
    return str(path)


def write_opencode(path: Path, command: list[str]) -> str:
    """Set mcp.agentlog in opencode.json (a JSONC file with comments is not touched)."""
    data: dict[str, Any] = {"$schema": "https://opencode.ai/config.json"}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise click.ClickException(
                f"{path} is not plain JSON ({exc.msg}); add the entry by hand "
                "(agentlog mcp install opencode --print)"
            ) from exc
        if not isinstance(loaded, dict):
            raise click.ClickException(f"{path}: expected a JSON object")
        data = loaded
    servers = data.setdefault("mcp", {})
    if not isinstance(servers, dict):
        raise click.ClickException(f"{path}: 'mcp' is not an object")
    servers[NAME] = {"type": "local", "command": command, "enabled": True}
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, json.dumps(data, indent=2) + "\n")
    return str(path)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".agentlog-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@mcp.command()
@click.argument("client", type=click.Choice(CLIENTS))
@click.option("--print", "print_only", is_flag=True, help="Show the registration; change nothing.")
@click.option("--file", "use_file", is_flag=True,
              help="Edit the config file even when the client's CLI is on PATH (codex, opencode).")
@click.pass_context
def install(ctx: click.Context, client: str, print_only: bool, use_file: bool) -> None:
    """Register `agentlog mcp` (with this home) with claude, codex or opencode."""
    home = get_home(ctx)
    command = server_command(home)
    if print_only:
        click.echo(f"# {' '.join(cli_command(client, command))}")
        click.echo(snippet(client, command))
        return
    if shutil.which(client) and not use_file:
        argv = cli_command(client, command)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise click.ClickException(
                f"{client} mcp add failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[:500]}"
            )
        click.echo(f"registered {NAME} with {client}: {' '.join(argv)}")
        return
    if client == "claude":
        raise click.ClickException(
            "claude is not on PATH; register by hand (agentlog mcp install claude --print)"
        )
    where = write_codex(_codex_config(), command) if client == "codex" else write_opencode(
        _opencode_config(), command
    )
    click.echo(f"registered {NAME} with {client} in {where}")
