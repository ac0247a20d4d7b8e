"""`agentlog demo`: capture a small synthetic multi-agent history, then search it.

The demo sources go to `--dir` (default `<home>/demo-sources`); they are captured into the
home's log like real ones (same engine, same events), history.db catches up, and each
distinctive phrase is searched when the `search` command is available.
"""

from __future__ import annotations

from pathlib import Path

import click

from cli.services.config import get_home


@click.command()
@click.option("--dir", "dir_", type=click.Path(file_okay=False), default=None,
              help="Where to write the demo sources (default: <home>/demo-sources).")
@click.option("--no-search", is_flag=True, help="Capture only; do not run the searches.")
@click.pass_context
def demo(ctx: click.Context, dir_: str | None, no_search: bool) -> None:
    """Write a demo Claude/Codex/opencode/runs history, capture it and search it."""
    from cli.services import catchup
    from cli.services.demo_corpus import PHRASES, write_demo
    from readers.capture import Capturer, Options
    from readers.roots import Root

    home = get_home(ctx)
    base = Path(dir_).absolute() if dir_ else home.root / "demo-sources"
    paths = write_demo(base)
    roots = [Root(agent, p, "flag", p.is_dir()) for agent, p in paths.items()]
    stats = Capturer(home.log(), roots, Options(settle_s=0)).run_once()
    click.echo(f"demo sources in {base}")
    click.echo(f"captured {stats.files} files, {stats.bytes} bytes, "
               f"{stats.appended} events appended into {home.log_dir}")
    if stats.appended:
        catchup.after_append(home)
    if no_search:
        click.echo("try: agentlog search " + next(iter(PHRASES.values())))
        return
    from cli.commands.search import search

    for name, phrase in PHRASES.items():
        click.echo(f"\n$ agentlog search {phrase}      # {name}")
        try:
            ctx.invoke(search, query=tuple(phrase.split()), mode="words")
        except SystemExit as exc:  # a search with no hits exits non-zero: keep going
            if exc.code not in (0, None):
                click.echo(f"(search exited {exc.code})")
    from cli.services.search import embed

    click.echo("\n$ agentlog embed      # search by meaning: the capture loop does it too")
    done = embed(home)
    click.echo(f"embedded {done['chunks']} chunk(s) in {done['seconds']} s")
    text = "retry a dropped live connection"
    click.echo(f"\n$ agentlog search --mode meaning {text}      # other words, same task")
    try:
        ctx.invoke(search, query=tuple(text.split()), mode="meaning", limit=3)
    except SystemExit as exc:
        if exc.code not in (0, None):
            click.echo(f"(search exited {exc.code})")
