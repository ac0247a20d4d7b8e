"""The click group of `agentlog`: resolves the home, then loads the invoked command lazily."""

from __future__ import annotations

import importlib

import click

from cli.config import resolve_home
from cli.main import COMMANDS, HELP, VERSION


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        mod_name, attr = spec.split(":")
        cmd = getattr(importlib.import_module(mod_name), attr)
        assert isinstance(cmd, click.Command)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.option(
    "--home",
    "home",
    type=click.Path(file_okay=False),
    default=None,
    help="agentlog home (default: $AGENTLOG_HOME, else the platform data dir).",
)
@click.version_option(VERSION, prog_name="agentlog")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """agentlog keeps every AI coding agent conversation, byte for byte, and searches it."""
    ctx.obj = resolve_home(home)
    ctx.obj.command = f"agentlog {ctx.invoked_subcommand or ''}".strip()
