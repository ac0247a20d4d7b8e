"""The click group of `agentlog`: resolves the home, then loads the invoked command lazily."""

from __future__ import annotations

import importlib
from typing import Any

import click

from cli.config import resolve_home
from cli.main import COMMANDS, HELP, READ_ONLY, VERSION


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
        _integer_metavars(cmd)
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; every click error leaves in the one style of `cli.errors`."""
        ctx.meta["agentlog.help"] = any(a in ("--help", "-h") for a in ctx.args)
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            from cli.errors import restyle

            name = f"agentlog {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "agentlog"
            raise restyle(exc, name) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _integer_metavars(cmd: click.Command) -> None:
    """Integer options read INTEGER in --help, ranges included (the range is in the help)."""
    for param in cmd.params:
        if isinstance(param.type, click.IntRange) and param.metavar is None:
            param.metavar = "INTEGER"
    for sub in getattr(cmd, "commands", {}).values():
        _integer_metavars(sub)


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
    if (ctx.invoked_subcommand in READ_ONLY and not ctx.meta.get("agentlog.help")
            and not ctx.obj.root.is_dir()):
        from cli.errors import BadInput

        raise BadInput(f"home {ctx.obj.root} does not exist",
                       "check --home / AGENTLOG_HOME, or run `agentlog capture` to create it")
