"""The `agentlog` command: the registry of commands and the entry point.

Commands are imported only when invoked, so `agentlog search` or `agentlog mcp` never pay
for the imports of the others (start-up time is part of the product). `main` first offers
the arguments to `cli.fast` (`search ... --json`, `hooks run` and a plain `capture` without
click, whose import costs more than the search); everything else, and anything the fast
path does not fully understand, goes to the click group in `cli.group`. A process whose
command a fast path answered leaves its objects to the operating system at exit
(`cli.services.startup.skip_final_collection`), and the console's process starts without the cyclic
collector (`cli.services.startup.quiet_startup`) until its work begins.
"""

from __future__ import annotations

import sys
from typing import Any

from cli.services import startup  # tiny: loaded with this module, so main() starts quiet


def main(argv: list[str] | None = None) -> Any:
    args = argv if argv is not None else sys.argv[1:]
    if argv is None:  # this process's own command line: no collection while it starts
        startup.quiet_startup()
        from cli import stdio

        stdio.whole_writes()  # PYTHONUNBUFFERED: output that survives short writes
    from cli.fast import capture_plain, hooks_run, search_json

    if search_json(args) or hooks_run(args) or capture_plain(args):
        if argv is None:  # this process's own command line: it ends right after the answer
            startup.skip_final_collection()
        return None
    startup.startup_done()
    from cli.group import cli

    return cli.main(args=args, prog_name="agentlog")


if __name__ == "__main__":
    main()
