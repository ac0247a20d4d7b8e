"""The `agentlog` command: the registry of commands and the entry point.

Commands are imported only when invoked, so `agentlog search` or `agentlog mcp` never pay
for the imports of the others (start-up time is part of the product). `main` first offers
the arguments to `cli.fast` (`search ... --json`, `hooks run` and a plain `capture` without
click, whose import costs more than the search); everything else, and anything the fast
path does not fully understand, goes to the click group in `cli.group`. A process whose
command a fast path answered leaves its objects to the operating system at exit
(`cli.fast.skip_final_collection`), and the console's process starts without the cyclic
collector (`cli.fast.quiet_startup`) until its work begins.
"""

from __future__ import annotations

import sys
from typing import Any

VERSION = "0.1.0"

# command name -> "module:attribute"; each module owns its commands.
COMMANDS: dict[str, str] = {
    "record": "cli.commands.log:record",
    "verify": "cli.commands.log:verify",
    "audit": "cli.commands.log:audit",
    "backup": "cli.commands.log:backup",
    "capture": "cli.commands.capture:capture",
    "restore": "cli.commands.capture:restore",
    "search": "cli.commands.search:search",
    "show": "cli.commands.search:show",
    "conversation": "cli.commands.search:conversation",
    "reindex": "cli.commands.search:reindex",
    "mcp": "cli.commands.mcp:mcp",
    "serve": "cli.commands.serve:serve",
    "history": "cli.commands.archive:history",
    "export": "cli.commands.archive:export",
    "import": "cli.commands.archive:import_",
    "archive": "cli.commands.archive:archive",
    "demo": "cli.commands.demo:demo",
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

# Commands that only read the home: a home that does not exist is a mistake (a typo in
# --home or AGENTLOG_HOME), never silently an empty history. The others create it.
READ_ONLY = frozenset({"search", "show", "conversation", "history", "export", "verify",
                       "audit", "backup", "restore", "reindex"})


def main(argv: list[str] | None = None) -> Any:
    args = argv if argv is not None else sys.argv[1:]
    if argv is None:  # this process's own command line: no collection while it starts
        from cli import fast, stdio

        fast.quiet_startup()
        stdio.whole_writes()  # PYTHONUNBUFFERED: output that survives short writes
    from cli.fast import capture_plain, hooks_run, search_json, startup_done

    if search_json(args) or hooks_run(args) or capture_plain(args):
        if argv is None:  # this process's own command line: it ends right after the answer
            from cli.fast import skip_final_collection

            skip_final_collection()
        return None
    startup_done()
    from cli.group import cli

    return cli.main(args=args, prog_name="agentlog")


if __name__ == "__main__":
    main()
