"""`agentlog hooks install|uninstall|status|run`: capture from inside Claude Code and Codex.

`run` is what the agents call: `cli.services.capture.hook`. It captures only the transcript
they name (see `readers.capture`) and always exits 0, so a failing capture never blocks a
session end or a compaction (Claude Code blocks `PreCompact` on exit 2); a failure is one
line on stderr. Transcript contents are never printed. An agent waits for `run` at every
session end or turn: the settings editing of install/uninstall/status is imported only by
those commands.
"""

from __future__ import annotations

import json

import click

from cli.services.capture.hook import CLIENTS
from cli.services.config import get_home


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
    from cli.services.settings.agent_hooks import install_hooks
    from cli.services.settings.files import SettingsError

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
    from cli.services.settings.agent_hooks import uninstall_hooks
    from cli.services.settings.files import SettingsError

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
    from cli.services.settings import agent_hooks as ah

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
    from cli.services.capture.hook import run as run_hook

    run_hook(get_home(ctx), client, list(args))
