"""One error style for every command: `agentlog COMMAND: what is wrong — how to fix`.

Promises:
- bad input (an unknown option, an invalid value, an unknown name, a missing home for a
  command that only reads it) exits 2; a failure of the operation itself exits 1;
- every error is one line on stderr in the style above (a hint may be absent only when
  nothing the user can do would help); click's own usage errors are restyled the same way
  by `restyle`, which `cli.main.LazyGroup` applies to everything a command raises.
Commands raise `BadInput(message, hint)` or `Failure(message, hint)`.
"""

from __future__ import annotations

from typing import IO, Any

import click

DASH = " — "


def line(command: str, message: str, hint: str | None = None) -> str:
    """`agentlog COMMAND: message — hint` (the hint is left out when None or empty)."""
    message = " ".join(str(message).split()) or "failed"
    return f"{command}: {message}{DASH}{hint}" if hint else f"{command}: {message}"


class _Styled:
    command: str | None
    hint: str | None

    def styled(self, message: str) -> str:
        return line(self.command or "agentlog", message, self.hint)


class BadInput(_Styled, click.UsageError):
    """Something the user typed is wrong (exit 2)."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None, *, command: str | None = None
                 ) -> None:
        click.UsageError.__init__(self, message)
        self.hint = hint
        self.command = command

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.styled(self.message), err=True, file=file)


class Failure(_Styled, click.ClickException):
    """The operation failed (exit 1)."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None, *, command: str | None = None
                 ) -> None:
        click.ClickException.__init__(self, message)
        self.hint = hint
        self.command = command

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.styled(self.message), err=True, file=file)


def restyle(exc: click.ClickException, command: str) -> click.ClickException:
    """`exc` as a BadInput/Failure naming `command` (click's errors get a --help hint)."""
    if isinstance(exc, (BadInput, Failure)):
        exc.command = exc.command or command
        return exc
    if isinstance(exc, click.UsageError):
        path = exc.ctx.command_path if exc.ctx is not None else command
        return BadInput(exc.format_message().rstrip("."), f"see `{path} --help`",
                        command=path)
    out = Failure(exc.format_message(), None, command=command)
    out.exit_code = exc.exit_code  # type: ignore[misc]  # keep the command's own code
    return out


def no_log(root: object) -> Failure:
    """The error of a command that needs the log when the home holds none."""
    return Failure(f"no event log in {root} (nothing captured yet)",
                   "run `agentlog capture` (or `agentlog import`) first")
