"""The click group of `agentlog`: resolves the home, then loads the invoked command lazily.

No input prints a Python traceback: a damaged log record (`CorruptRecord`) is one line
naming the seq and the cure, a full disk one line naming it, and any other unexpected
error one line with its type (exit 1; `AGENTLOG_DEBUG=1` re-raises it for a traceback).
The message of an unexpected error is never printed: it may quote transcript text. A
read-only command that met a damaged history.db is answered again after it was rebuilt
from the log.
"""

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
        saved = (list(getattr(ctx, "_protected_args", [])), list(ctx.args))
        try:
            return self._invoke(ctx)
        except Damaged as exc:
            # history.db is derived: rebuild it from the log, then answer once more
            from cli.catchup import rebuild_damaged

            rebuild_damaged(ctx.obj, exc)
            if hasattr(ctx, "_protected_args"):
                ctx._protected_args = saved[0]
            ctx.args = saved[1]
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        """Run the command; every click error leaves in the one style of `cli.errors`, and
        so does every other failure (one line, never a traceback; see the module doc)."""
        ctx.meta["agentlog.help"] = any(a in ("--help", "-h") for a in ctx.args)
        name = "agentlog"
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            from cli.errors import restyle

            name = f"agentlog {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "agentlog"
            raise restyle(exc, name) from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            import os

            if os.environ.get("AGENTLOG_DEBUG"):
                raise
            if _is_damage(exc) and ctx.invoked_subcommand in RETRY_AFTER_REBUILD and not getattr(
                    ctx, "_agentlog_retried", False):
                ctx._agentlog_retried = True  # type: ignore[attr-defined]
                raise Damaged(str(exc)) from None
            from cli.errors import restyle

            name = f"agentlog {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "agentlog"
            raise restyle(click.ClickException(failure_line(exc)), name) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# read-only commands answered again after a damaged history.db was rebuilt from the log
RETRY_AFTER_REBUILD = frozenset({"search", "show", "conversation", "history", "export"})


class Damaged(Exception):
    """history.db failed while a read-only command answered (see `LazyGroup.invoke`)."""


def _is_damage(exc: BaseException) -> bool:
    from projections.errors import ProjectionDamaged

    return isinstance(exc, ProjectionDamaged)


def failure_line(exc: BaseException) -> str:
    """One line for an error no command handled (see the module docstring)."""
    import errno

    from eventlog import CorruptRecord, LogFull
    from eventlog.records import DAMAGE_HINT

    if isinstance(exc, CorruptRecord):
        return f"{exc}: {DAMAGE_HINT}"
    if isinstance(exc, LogFull):
        return str(exc)
    from cli.catchup import disk_full

    if disk_full(exc) and not isinstance(exc, OSError):
        return "disk full: history.db could not be written; free space and run it again"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"disk full: {exc.strerror} ({exc.filename or 'a file in the home'})"
    if isinstance(exc, OSError):
        return f"{exc.strerror or type(exc).__name__}: {exc.filename or ''}".rstrip(": ")
    if _is_damage(exc):
        return f"{exc}: `agentlog reindex` rebuilds it from the log"
    if isinstance(exc, RecursionError):
        return "input nested too deeply"
    return (f"internal error ({type(exc).__name__}); run with AGENTLOG_DEBUG=1 for the "
            "traceback and please report it")


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
