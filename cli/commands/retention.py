"""`agentlog retention claude [--days N] [--json]`: show or raise Claude Code's cleanup period.

Without `--days` it reports what Claude Code will delete within 7 days and whether each is
captured; with `--days N` it sets `cleanupPeriodDays` in settings.json (backup first, every
other key kept) — only upwards, and only when asked.
"""

from __future__ import annotations

import json

import click

from cli.services.config import get_home


@click.command()
@click.argument("client", type=click.Choice(["claude"]))
@click.option("--days", type=click.IntRange(1, 100_000), default=None,
              help="Set cleanupPeriodDays to N (never lowers it).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def retention(ctx: click.Context, client: str, days: int | None, as_json: bool) -> None:
    """Claude Code's transcript cleanup: what it will delete soon; raise it with --days."""
    from cli.services.capture.retention import message, report
    from cli.services.settings import files as sf
    from cli.services.settings.agent_hooks import claude_settings
    from readers.retention import read_setting

    path = claude_settings()
    changed = False
    if days is not None:
        current = read_setting(path)
        if current is not None and current >= days:
            click.echo(f"cleanupPeriodDays is already {current} (>= {days}); unchanged", err=True)
        else:
            def change(data: dict[str, object]) -> None:
                data["cleanupPeriodDays"] = days

            changed = sf.edit_json(path, change)
    risk = report(get_home(ctx))
    if as_json:
        click.echo(json.dumps({**risk.to_dict(), "settings": str(path), "changed": changed},
                              indent=2))
        return
    if changed:
        click.echo(f"set cleanupPeriodDays to {days} in {path} "
                   f"(previous file: {sf.backup_path(path)})")
    if risk.risky:
        click.echo(message(risk).removeprefix("warning: "))
    else:
        click.echo(f"cleanupPeriodDays is {risk.setting}: transcripts stay "
                   f"{risk.period_days} days")
