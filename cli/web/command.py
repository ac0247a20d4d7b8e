"""`agentlog serve`: the HTTP API and the dashboard page on loopback."""

from __future__ import annotations

import click

from cli.services.config import get_home


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback only unless --allow-remote).")
@click.option("--port", type=click.IntRange(0, 65535), metavar="INTEGER", default=0,
              help="Port to listen on (default: a free port).")
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host (anyone who can reach it still needs the token).")
@click.option("--postgres", "postgres", default=None, metavar="URL",
              help="Answer searches from the team server (`config` = team.postgres).")
@click.option("--capture/--no-capture", default=True, show_default=True,
              help="Keep the home captured while serving (one process per home captures).")
@click.option("--header-timeout", type=click.FloatRange(0.1, 3600), default=None, hidden=True,
              help="Seconds a connection may take to send a request's headers (10).")
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, allow_remote: bool,
          postgres: str | None = None, capture: bool = True,
          header_timeout: float | None = None) -> None:
    """Serve the HTTP API and the dashboard until interrupted.

    Prints one line: the URL with a fresh token. Opening it sets a session cookie and drops
    the token from the address bar. The URL, port, pid and token are also written to
    <home>/server.json (mode 0600) while the server runs.
    """
    from cli.web.server import serve as run

    home = get_home(ctx)
    if postgres is not None:
        from cli.services.team_sync import resolve_url

        home.postgres = resolve_url(home, postgres)
    run(home, host=host, port=port, allow_remote=allow_remote, capture=capture,
        header_timeout=header_timeout)
