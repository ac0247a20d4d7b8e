"""`agentlog secrets [--json]`: what redaction found, so a person can rotate what leaked.

Lists kind, agent, session, how many and when (first and last seen) — never a value: the
values are in the raw log alone (docs/secrets.md). The rows come from history.db's
`secrets` table (`projections.secrets.found`), caught up first like every read.
"""

from __future__ import annotations

import json

import click

from cli.services.config import get_home


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object: {\"secrets\": [...]}.")
@click.pass_context
def secrets(ctx: click.Context, as_json: bool) -> None:
    """List the secrets redacted from history: kind, agent, session, count, time."""
    from cli.services.catchup import ensure_current
    from cli.services.search import ensure_current_quietly
    from projections.secrets import found

    home = get_home(ctx)
    ensure_current_quietly(home, ensure_current)
    rows = found(home.history_db) if home.history_db.exists() else []
    if as_json:
        click.echo(json.dumps({"secrets": rows}, indent=2))
        return
    if not rows:
        click.echo("no secrets found in the history")
        return
    from datetime import UTC, datetime

    def when(ms: int | None) -> str:
        if ms is None:
            return "-"
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")

    click.echo(f"{'kind':<20} {'agent':<10} {'count':>5}  {'last seen':<16}  session")
    for r in rows:
        click.echo(f"{r['kind']:<20} {r['agent'] or '-':<10} {r['count']:>5}  "
                   f"{when(r['last']):<16}  {r['session'] or '-'}")
    click.echo("the values stay in the raw log (agentlog never shows them): rotate these "
               "credentials; see docs/secrets.md")
