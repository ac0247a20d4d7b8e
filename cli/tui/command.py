"""`agentlog browse`: search as you type, read, and resume a session in its agent.

The command catches history.db up once, runs the app (`cli/tui/app.py`) and does what
Enter chose: with a resume command whose program is on PATH, it runs it in the session's
project folder (replacing this process, so the agent owns the terminal); otherwise, or with
`--print`, it prints the line to run (`cd <project> && <command>`, or the
`agentlog conversation` command when the agent has no resume).
"""

from __future__ import annotations

import os
import shutil
import sys

import click

from cli.services.config import get_home
from readers.registry import search_agents


@click.command()
@click.argument("query", nargs=-1)
@click.option("--agent", default=None, help=f"Start filtered to one of "
              f"{', '.join(search_agents())}.")
@click.option("--project", default=None, help="Start filtered to a project (canonical path).")
@click.option("--print", "print_only", is_flag=True,
              help="On Enter, print the resume command instead of running it.")
@click.pass_context
def browse(ctx: click.Context, query: tuple[str, ...], agent: str | None,
           project: str | None, print_only: bool) -> None:
    """Browse the history in the terminal: type to search (F2–F5: agent, project, time,
    kind), read the conversation beside the results (Ctrl+O unfolds tool calls), Enter to
    resume the session in its agent in its project folder, Escape to leave."""
    from cli.services.catchup import ensure_current
    from cli.services.errors import BadInput
    from cli.services.search import ensure_current_quietly
    from cli.tui.app import BrowseApp
    from cli.tui.model import Filters
    from projections.sessions import known_projects

    if not sys.stdin.isatty() or not sys.stdout.isatty():
        raise BadInput("browse needs a terminal (standard input and output)",
                       "use `agentlog search WORDS` in scripts and pipes")
    home = get_home(ctx)
    ensure_current_quietly(home, ensure_current)
    projects = known_projects(home.history_db)
    app = BrowseApp(home, query=" ".join(query), filters=Filters(agent=agent, project=project),
                    projects=projects, agents=list(search_agents()))
    chosen = app.run()
    if chosen is None:
        return
    runnable = chosen.argv is not None and shutil.which(chosen.argv[0]) is not None
    if print_only or not runnable:
        if chosen.argv is not None and not print_only:
            click.echo(f"{chosen.argv[0]} is not on PATH; to resume, run:", err=True)
        elif chosen.argv is None:
            click.echo(f"{chosen.agent} has no resume command; to read the session:", err=True)
        click.echo(chosen.command)
        return
    assert chosen.argv is not None
    if chosen.cwd and os.path.isdir(chosen.cwd):
        os.chdir(chosen.cwd)
    elif chosen.cwd:
        click.echo(f"the project folder {chosen.cwd} is gone; resuming here", err=True)
    click.echo(f"$ {chosen.command}", err=True)
    os.execvp(chosen.argv[0], chosen.argv)
