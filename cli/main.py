"""The `agentlog` command: the entry point, straight to the click group (`cli.group`).

Commands are imported only when invoked (`cli.registry`), so `agentlog search` or `agentlog
mcp` never pay for the imports of the others (start-up time is part of the product). The
console's own process (`main()` reading `sys.argv`) starts without the cyclic collector
(`cli.services.startup.quiet_startup`) until the invoked command is loaded, or, for
`capture`, until its engine is ready; and it ends without the interpreter's final
collection (`cli.services.startup.skip_final_collection`): its objects are left to the
operating system, every commit being durable already.
"""

from __future__ import annotations

import sys
from typing import Any

from cli.services import startup  # tiny: loaded with this module, so main() starts quiet


def main(argv: list[str] | None = None) -> Any:
    if argv is not None:  # called by a program (tests, embedding): its collector is its own
        from cli.group import cli

        return cli.main(args=argv, prog_name="agentlog")
    startup.quiet_startup()  # this process's own command line: no collection while it starts
    from cli import stdio

    stdio.whole_writes()  # PYTHONUNBUFFERED: output that survives short writes
    from cli.group import cli

    try:
        return cli.main(args=sys.argv[1:], prog_name="agentlog")
    except BrokenPipeError:  # `agentlog search … | head`: the reader has all it wanted
        _quiet_closed_pipe()
    finally:  # the process ends right after the answer (click exits with its code)
        startup.skip_final_collection()


def _quiet_closed_pipe() -> None:
    """Exit 141 (128 + SIGPIPE, what a shell reports for a program its pipe closed on) with
    nothing on stderr: standard output is pointed at /dev/null first, so the interpreter's
    own flush at exit cannot fail again (the recipe of Python's `signal` docs)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(141)


if __name__ == "__main__":
    main()
