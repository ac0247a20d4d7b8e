"""The `agentlog` command: a lazy click group over thin command modules.

Commands are imported only when invoked, so `agentlog search` or `agentlog mcp` never pay
for the imports of the others (start-up time is part of the product).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from cli.config import resolve_home

VERSION = "0.1.0"

# command name -> "module:attribute"; each module owns its commands.
COMMANDS: dict[str, str] = {
    "record": "cli.cmd_log:record",
    "verify": "cli.cmd_log:verify",
    "audit": "cli.cmd_log:audit",
    "backup": "cli.cmd_log:backup",
    "capture": "cli.cmd_capture:capture",
    "restore": "cli.cmd_capture:restore",
    "search": "cli.cmd_search:search",
    "show": "cli.cmd_search:show",
    "conversation": "cli.cmd_search:conversation",
    "reindex": "cli.cmd_search:reindex",
    "mcp": "cli.cmd_mcp:mcp",
    "serve": "cli.cmd_serve:serve",
    "history": "cli.cmd_archive:history",
    "export": "cli.cmd_archive:export",
    "import": "cli.cmd_archive:import_",
    "archive": "cli.cmd_archive:archive",
    "demo": "cli.cmd_demo:demo",
    "hooks": "cli.commands.hooks:hooks",
    "service": "cli.commands.service:service",
    "retention": "cli.commands.retention:retention",
    "sync": "cli.commands.team:sync",
    "team": "cli.commands.team:team",
}

HELP: dict[str, str] = {
    "record": "Append broker facts (JSON Lines on stdin) to the log.",
    "verify": "Check the log's hash chain, key index and structure.",
    "audit": "Report what the log holds and who wrote it.",
    "backup": "Write a consistent, verified copy of the log.",
    "capture": "Capture the history of every registered coding agent into the log.",
    "restore": "Write captured files back, byte for byte.",
    "search": "Search the history.",
    "show": "Show one source document by hit id.",
    "conversation": "Page through a conversation.",
    "reindex": "Rebuild history.db from the log.",
    "mcp": "Run the MCP server on stdio, or register it with a client.",
    "serve": "Serve the HTTP API and the dashboard on loopback.",
    "history": "Browse one project's turns with filters.",
    "export": "Export a project's turns (or the whole log) as JSON.",
    "import": "Import an export envelope (dry run unless --apply).",
    "archive": "Archive sessions older than N days.",
    "demo": "Capture a small demo corpus into a home and search it.",
    "hooks": "Install agent hooks that capture each transcript as it is written.",
    "service": "Run `capture --watch` as a user service (systemd, launchd).",
    "retention": "Show or raise Claude Code's transcript cleanup period.",
    "sync": "Copy the log to the team PostgreSQL server and project it there.",
    "team": "Set up the team PostgreSQL server (schema, roles) and show this host id.",
}


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


# Commands that only read the home: a home that does not exist is a mistake (a typo in
# --home or AGENTLOG_HOME), never silently an empty history. The others create it.
READ_ONLY = frozenset({"search", "show", "conversation", "history", "export", "verify",
                       "audit", "backup", "restore", "reindex"})


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


def main(argv: list[str] | None = None) -> Any:
    return cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="agentlog")


if __name__ == "__main__":
    main()
