"""`agentlog mcp`: run the stdio MCP server, or register it with an agent client.

Registration always names the home explicitly (`--home <abs path>`): MCP clients pass
few environment variables to the servers they spawn, so AGENTLOG_HOME would be lost.
Registration is idempotent and format-preserving (`cli.services.settings.mcp_clients`); `--print`
only shows what would be registered; `uninstall` removes only our entry.
"""

from __future__ import annotations

from pathlib import Path

import click

from cli.services.config import Home, get_home

NAME = "agentlog"
CLIENTS = ("claude", "codex", "opencode", "gemini", "qwen", "cursor", "copilot", "kiro",
           "amp", "cline", "crush", "goose", "continue")


@click.group(invoke_without_command=True)
@click.option("--postgres", "postgres", default=None, metavar="URL",
              help="Answer from the team server (`config` = team.postgres; docs/team.md).")
@click.option("--capture/--no-capture", default=True, show_default=True,
              help="Keep the home captured while serving (one process per home captures).")
@click.pass_context
def mcp(ctx: click.Context, postgres: str | None = None, capture: bool = True) -> None:
    """Run the MCP server on stdio (tools: search_history, get_conversation).

    With a sub-command, register the server with a client instead.
    """
    if ctx.invoked_subcommand is None:
        from cli.mcp.server import serve_stdio

        home = get_home(ctx)
        if postgres is not None:
            from cli.services.team_sync import resolve_url

            home.postgres = resolve_url(home, postgres)
        serve_stdio(home, capture=capture)


_SAID = {"added": "registered", "replaced": "replaced our earlier entry (new command)",
         "unchanged": "already registered (unchanged)"}


@mcp.command()
@click.argument("client", type=click.Choice(CLIENTS))
@click.option("--print", "print_only", is_flag=True, help="Show the registration; change nothing.")
@click.option("--file", "use_file", is_flag=True,
              help="Edit the config file even when the client's CLI is on PATH "
                   "(claude: ~/.claude.json).")
@click.option("--with-hooks", is_flag=True,
              help="Also install the capture hooks (claude, codex; see `agentlog hooks`).")
@click.pass_context
def install(ctx: click.Context, client: str, print_only: bool, use_file: bool,
            with_hooks: bool) -> None:
    """Register `agentlog mcp` (with this home) with an agent: claude, codex, opencode,
    gemini, qwen, cursor, copilot, kiro, amp, cline, crush, goose or continue (their
    settings files, docs/mcp.md).

    Idempotent: a second run, another --home or a moved venv replaces our entry."""
    from cli.services.settings import mcp_clients as mc

    home = get_home(ctx)
    from cli.services.settings.mcp_clients import cli_command, server_command, snippet

    command = server_command(home)
    if print_only:
        click.echo(f"# {' '.join(cli_command(client, command))}")
        click.echo(snippet(client, command))
        return
    if client in mc.JSON_CLIENTS:
        got = mc.register_json_file(mc.json_client_config(client),
                                    mc.json_client_entry(client, command),
                                    mc.servers_key(client), jsonc=client in mc.JSONC_CLIENTS)
    elif client == "goose":
        got = mc.register_goose_file(mc.goose_config(), command)
    elif client == "continue":
        got = mc.register_continue_block(mc.continue_block(), command)
    elif client == "opencode":
        got = mc.register_opencode_file(mc.opencode_config(), command)
    elif client == "claude" and mc.has_cli(client) and not use_file:
        got = mc.register_cli(client, command)  # codex: always the file (its CLI rewrites
        # config.toml and drops the user's inline comments; its `remove` exits 0 when
        # nothing is there, so what happened could not be said)
    elif client == "claude":
        if not use_file:
            raise click.ClickException(
                "claude is not on PATH; register by hand (agentlog mcp install claude "
                "--print) or let agentlog edit ~/.claude.json (--file)")
        got = mc.register_claude_file(mc.claude_json(), command)
    else:
        got = mc.register_codex_file(_codex_config(), command)
    click.echo(f"{NAME} with {client}: {_SAID[got.action]} ({got.where})")
    if with_hooks:
        _with_hooks(home, client)
    from cli.services.settings.currency import describe

    click.echo(describe(home, client))
    from cli.services.capture.retention import warn_once

    warn_once(home)


def _with_hooks(home: Home, client: str) -> None:
    if client not in ("claude", "codex"):
        click.echo(f"{client} has no hook agentlog installs; the MCP server and the service "
                   "keep its history current")
        return
    from cli.services.settings.agent_hooks import install_hooks

    path, what = install_hooks(home, client)
    click.echo(f"{client} capture hooks: {what} ({path})")


@mcp.command()
@click.argument("client", type=click.Choice(CLIENTS))
@click.option("--file", "use_file", is_flag=True,
              help="Edit the config file even when the client's CLI is on PATH.")
@click.option("--keep-hooks", is_flag=True,
              help="Leave the capture hooks (`install --with-hooks`, `hooks install`).")
def uninstall(client: str, use_file: bool, keep_hooks: bool = False) -> None:
    """Remove only agentlog's entry from the agent's settings, and its capture hooks
    (unless --keep-hooks)."""
    from cli.services.settings import mcp_clients as mc

    if client in mc.JSON_CLIENTS:
        got = mc.unregister_json_file(mc.json_client_config(client), mc.servers_key(client),
                                      jsonc=client in mc.JSONC_CLIENTS)
    elif client == "goose":
        got = mc.unregister_goose_file(mc.goose_config())
    elif client == "continue":
        got = mc.unregister_continue_block(mc.continue_block())
    elif client == "opencode":
        got = mc.unregister_opencode_file(mc.opencode_config())
    elif client == "claude" and mc.has_cli(client) and not use_file:
        got = mc.unregister_cli(client)
    elif client == "claude":
        got = mc.unregister_claude_file(mc.claude_json())
    else:
        got = mc.unregister_codex_file(_codex_config())
    click.echo(f"{NAME} {'removed from' if got.action == 'removed' else 'was not registered with'}"
               f" {client} ({got.where})")
    if client in ("claude", "codex") and not keep_hooks:
        from cli.services.settings.agent_hooks import uninstall_hooks

        path, removed = uninstall_hooks(client)
        if removed:
            click.echo(f"{client} capture hooks removed ({path}); `--keep-hooks` leaves them")


def _codex_config() -> Path:
    from cli.services.settings.agent_hooks import codex_config

    return codex_config()
