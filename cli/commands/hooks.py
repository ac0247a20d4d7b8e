"""`agentlog hooks install|uninstall|status|run`: capture from inside Claude Code and Codex.

`run` is what the agents call: `cli.hook_run` (which `cli.fast` also runs without click).
It captures only the transcript they name (see `readers.capture_one`) and always exits
0, so a failing capture never blocks a session end or a compaction (Claude Code blocks
`PreCompact` on exit 2); a failure is one line on stderr. Transcript contents are never
printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from cli.config import Home, get_home
from cli.hook_run import CLIENTS


def base_command() -> list[str]:
    """The absolute agentlog program (as registered with MCP clients)."""
    from cli.commands.mcp import program

    return program()


def install_hooks(home: Home, client: str) -> tuple[Path, str]:
    """Install our hook for `client`; (settings file, "added"|"updated"|"chained"|…)."""
    from cli.commands import agent_hooks as ah

    argv = ah.hook_argv(base_command(), home.root, client)
    if client == "claude":
        path = ah.claude_settings()
        return path, ah.install_claude(path, argv)
    path = ah.codex_config()
    return path, ah.install_codex(path, argv)


def uninstall_hooks(client: str) -> tuple[Path, bool]:
    from cli.commands import agent_hooks as ah

    if client == "claude":
        path = ah.claude_settings()
        return path, ah.uninstall_claude(path)
    path = ah.codex_config()
    return path, ah.uninstall_codex(path)


def _settings_error(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group()
def hooks() -> None:
    """Agent hooks that capture each transcript as the agent finishes with it."""


@hooks.command()
@click.argument("client", type=click.Choice(CLIENTS))
@click.pass_context
def install(ctx: click.Context, client: str) -> None:
    """Install the hook (Claude Code: SessionEnd, PreCompact; Codex: notify)."""
    from cli.settings_files import SettingsError

    try:
        path, what = install_hooks(get_home(ctx), client)
    except SettingsError as exc:
        raise _settings_error(exc) from exc
    words = {"added": "installed", "updated": "updated (replaced our earlier entry)",
             "chained": "installed (your notify program still runs after it)",
             "unchanged": "already installed"}
    click.echo(f"{client} hooks {words[what]} in {path}")


@hooks.command()
@click.argument("client", type=click.Choice(CLIENTS))
def uninstall(client: str) -> None:
    """Remove only agentlog's hook entries."""
    from cli.settings_files import SettingsError

    try:
        path, changed = uninstall_hooks(client)
    except SettingsError as exc:
        raise _settings_error(exc) from exc
    click.echo(f"{client} hooks removed from {path}" if changed
               else f"no agentlog {client} hooks in {path}")


@hooks.command()
@click.option("--json", "as_json", is_flag=True)
def status(as_json: bool) -> None:
    """Whether the hooks are installed, per client."""
    from cli.commands import agent_hooks as ah

    out = {"claude": {"file": str(ah.claude_settings()),
                      "installed": ah.claude_installed(ah.claude_settings())},
           "codex": {"file": str(ah.codex_config()),
                     "installed": ah.codex_installed(ah.codex_config())}}
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    for client, row in out.items():
        click.echo(f"{client}: {'installed' if row['installed'] else 'not installed'} "
                   f"({row['file']})")


@hooks.command(hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("client", type=click.Choice(CLIENTS))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, client: str, args: tuple[str, ...]) -> None:
    """Called by the agent: capture the transcript its payload names (always exit 0)."""
    from cli.hook_run import run as run_hook

    run_hook(get_home(ctx), client, list(args))
