"""`agentlog sync` and `agentlog team …`: the team server from the command line.

Thin: `projections.pg` does the work; this module resolves the URL (an argument, or
`team.postgres` from config.json), the host id, and prints. Connection strings are printed
only through `describe`/`redact` (never with a password), except the ones `team init`
creates to hand out, which it prints once, on stdout, on purpose.
"""

from __future__ import annotations

from typing import Any

import click

from cli.services.config import get_home
from cli.services.output import emit_json, human_bytes


@click.command()
@click.option("--to", "to", default=None, metavar="URL",
              help="PostgreSQL connection string (default: team.postgres in config.json).")
@click.option("--no-project", is_flag=True, help="Only ship records; do not project documents.")
@click.option("--all-hosts", is_flag=True,
              help="Project every host's records, not only this home's (e.g. after an upgrade).")
@click.option("--rebuild", is_flag=True,
              help="Replay the projection from seq 1 (this host, or every host with --all-hosts).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def sync(ctx: click.Context, to: str | None, no_project: bool, all_hosts: bool, rebuild: bool,
         as_json: bool) -> None:
    """Copy this home's log to the team server (idempotent, resumable), then project it."""
    from cli.services.team_sync import host_id, resolve_url, run_sync
    from projections.pg.conn import describe

    home = get_home(ctx)
    if not home.has_log():
        raise click.ClickException(f"no event log in {home.root} (nothing captured yet)")
    url = resolve_url(home, to)
    result, projected = run_sync(home, home.log(readonly=True), url, project=not no_project,
                                 all_hosts=all_hosts, rebuild=rebuild)
    out: dict[str, Any] = {"server": describe(url), **result.to_dict()}
    if projected is not None:
        out["projection"] = projected
    if as_json:
        emit_json(out)
        return
    click.echo(f"{describe(url)}: host {host_id(home)} shipped {result.shipped} records "
               f"({human_bytes(result.bytes)}) in {result.batches} batches; server head "
               f"{result.server_head} of {result.local_head}")
    if projected is not None:
        if projected["busy"]:
            click.echo(f"projection: another projector holds {', '.join(projected['busyHosts'])};"
                       " it will catch up")
        else:
            click.echo(f"projection: {projected['events']} events, {projected['documents']} "
                       f"document rows written; hosts {projected['hosts']}")


@click.group()
def team() -> None:
    """Set up and inspect the team server (PostgreSQL)."""


@team.command("host")
@click.pass_context
def host(ctx: click.Context) -> None:
    """Print this home's host id (created once, kept forever)."""
    from cli.services.team_sync import host_id

    click.echo(host_id(get_home(ctx)))


@team.command("init")
@click.argument("url")
@click.option("--writer", "writers", multiple=True, metavar="NAME",
              help="Create a writer role for one machine (agentlog_w_NAME). Repeatable.")
@click.option("--reader", "readers", multiple=True, metavar="NAME",
              help="Create a read-only searcher role (agentlog_r_NAME). Repeatable.")
@click.option("--reset-passwords", is_flag=True,
              help="Issue new passwords for the named roles that already exist.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def init(url: str, writers: tuple[str, ...], readers: tuple[str, ...], reset_passwords: bool,
         as_json: bool) -> None:
    """Create the team schema, roles and policies on URL (run as the database owner).

    Idempotent. Prints each new role's connection string once: hand it to that machine
    (as team.postgres in its config.json) or searcher; it is not stored anywhere.
    """
    from cli.services.errors import Failure
    from projections.pg.conn import connect, describe, driver, explain, redact
    from projections.pg.roles import init_team

    psycopg = driver()

    try:
        con = connect(url)
        try:
            issued = init_team(con, url, list(writers), list(readers), reset=reset_passwords)
        finally:
            con.close()
    except psycopg.errors.InsufficientPrivilege as exc:
        raise Failure(redact(
            f"{describe(url)}: {str(exc).strip().splitlines()[0]} — team init creates the "
            "agentlog_writer/agentlog_reader group roles and one login role per name, so it "
            "needs the database owner with CREATEROLE (or a superuser); see docs/team.md "
            "\"What team init needs\"")) from None
    except psycopg.Error as exc:
        raise Failure(redact(f"{describe(url)}: {explain(exc)}")) from None
    if as_json:
        emit_json({"server": describe(url), "roles": [i.to_dict() for i in issued]})
        return
    click.echo(f"{describe(url)}: schema, roles and policies are in place")
    for i in issued:
        if i.url is None:
            click.echo(f"{i.kind} {i.role}: exists (password unchanged; --reset-passwords)")
        else:
            click.echo(f"{i.kind} {i.role}: {i.url}")
