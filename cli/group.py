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
import sys
from typing import Any

import click

from cli import VERSION
from cli.registry import COMMANDS, HELP, QUIET_UNTIL_WORK, READ_ONLY
from cli.services.config import resolve_home
from cli.services.errors import AgentlogError, BadInput, Failure, from_exception
from cli.services.startup import startup_done


class LazyGroup(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Bare `agentlog` on a terminal (standard input and output) is `agentlog browse`;
        elsewhere (a pipe, a script) it prints the help, as click does."""
        if not args and not ctx.resilient_parsing and _on_terminal():
            args = ["browse"]
        return super().parse_args(ctx, args)

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
        if cmd_name not in QUIET_UNTIL_WORK:
            startup_done()  # its imports are done; its work makes garbage
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        saved = (list(getattr(ctx, "_protected_args", [])), list(ctx.args))
        try:
            return self._invoke(ctx)
        except _RetryAfterRebuild as exc:
            # history.db is derived: rebuild it from the log, then answer once more
            from cli.services.catchup import rebuild_damaged

            rebuild_damaged(ctx.obj, exc)
            if hasattr(ctx, "_protected_args"):
                ctx._protected_args = saved[0]
            ctx.args = saved[1]
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        """Run the command; every error leaves as one line in the style of
        `cli.services.errors` with its exit code (never a traceback; see the module doc)."""
        ctx.meta["agentlog.help"] = any(a in ("--help", "-h") for a in ctx.args)
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, BrokenPipeError):
            raise  # a closed pipe: `cli.main` ends quietly
        except click.ClickException as exc:
            raise Shown(restyle(exc, _name(ctx))) from None
        except Exception as exc:
            import os

            if os.environ.get("AGENTLOG_DEBUG") and not isinstance(exc, AgentlogError):
                raise
            if _is_damage(exc) and ctx.invoked_subcommand in RETRY_AFTER_REBUILD and not getattr(
                    ctx, "_agentlog_retried", False):
                ctx._agentlog_retried = True  # type: ignore[attr-defined]
                raise _RetryAfterRebuild(str(exc)) from None
            err = from_exception(exc)
            err.command = err.command or _name(ctx)
            raise Shown(err) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# read-only commands answered again after a damaged history.db was rebuilt from the log
RETRY_AFTER_REBUILD = frozenset({"search", "show", "conversation", "history", "export"})


class _RetryAfterRebuild(Exception):
    """history.db failed while a read-only command answered (see `LazyGroup.invoke`)."""


def _is_damage(exc: BaseException) -> bool:
    from projections.errors import ProjectionDamaged

    return isinstance(exc, ProjectionDamaged)


def _name(ctx: click.Context) -> str:
    return f"agentlog {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "agentlog"


class Shown(click.ClickException):
    """An `AgentlogError` as click shows it: its one line on stderr, its exit code."""

    def __init__(self, err: AgentlogError) -> None:
        super().__init__(err.message)
        self.err = err
        self.exit_code = err.exit_code  # type: ignore[misc]  # click: a class default

    def show(self, file: Any = None) -> None:
        click.echo(self.err.styled(), err=True, file=file)


def restyle(exc: click.ClickException, command: str) -> AgentlogError:
    """click's own errors in the one style (a usage error is bad input with a --help hint;
    any other keeps the command's own exit code)."""
    if isinstance(exc, Shown):
        exc.err.command = exc.err.command or command
        return exc.err
    if isinstance(exc, click.UsageError):
        path = exc.ctx.command_path if exc.ctx is not None else command
        return BadInput(exc.format_message().rstrip("."), f"see `{path} --help`",
                        command=path)
    out = Failure(exc.format_message(), None, command=command)
    out.exit_code = exc.exit_code
    return out


def _on_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


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
        raise BadInput(f"home {ctx.obj.root} does not exist",
                       "check --home / AGENTLOG_HOME, or run `agentlog capture` to create it")
