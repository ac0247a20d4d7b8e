"""The registry of `agentlog` commands: name -> the click command that answers it.

Commands are imported only when invoked (`cli.group.LazyGroup`), so `agentlog search` or
`agentlog mcp` never pay for the imports of the others. Each front end owns its commands:
the terminal's in `cli/commands/`, the MCP server's launcher and registration in
`cli/mcp/command.py`, the web server's in `cli/web/command.py`, the terminal browser's in
`cli/tui/command.py`.
"""

from __future__ import annotations

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
    "embed": "cli.commands.search:embed",
    "mcp": "cli.mcp.command:mcp",
    "serve": "cli.web.command:serve",
    "browse": "cli.tui.command:browse",
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
    "secrets": "cli.commands.secrets:secrets",
    "forget": "cli.commands.forget:forget",
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
    "embed": "Embed the history for search by meaning (else done in the background).",
    "mcp": "Run the MCP server on stdio, or register it with a client.",
    "serve": "Serve the HTTP API and the dashboard on loopback.",
    "browse": "Search as you type in the terminal; Enter resumes the session in its agent.",
    "history": "Browse one project's turns with filters.",
    "export": "Export a project's turns (or the whole log) as JSON, or a transcript as md/html.",
    "import": "Import an export envelope (dry run unless --apply).",
    "archive": "Archive sessions older than N days.",
    "demo": "Capture a small demo corpus into a home and search it.",
    "hooks": "Install agent hooks that capture each transcript as it is written.",
    "service": "Run `capture --watch` as a user service (systemd, launchd).",
    "retention": "Show or raise Claude Code's transcript cleanup period.",
    "sync": "Copy the log to the team PostgreSQL server and project it there.",
    "team": "Set up the team PostgreSQL server (schema, roles) and show this host id.",
    "secrets": "List the secrets redacted from history (kind, session, time; never a value).",
    "forget": "Forget a session, a project or a string for real (dry run unless --apply).",
}

# Commands that only read the home: a home that does not exist is a mistake (a typo in
# --home or AGENTLOG_HOME), never silently an empty history. The others create it.
READ_ONLY = frozenset({"browse", "search", "show", "conversation", "history", "export",
                       "verify", "audit", "backup", "restore", "reindex", "secrets",
                       "embed"})

# Commands whose work turns the cyclic collector back on itself (`cli.services.startup`): a
# one-shot `capture` imports the log and the capture engine quietly too, and its pass
# (`cli.services.capture.run`) turns it on once the engine is ready. Every other command has
# it back as soon as its module is loaded (`cli.group.LazyGroup.get_command`).
QUIET_UNTIL_WORK = frozenset({"capture"})
