"""`agentlog forget --session ID | --project P | --text STRING [--apply]`.

A dry run by default (what would go, nothing written), like `import`; `--apply` forgets for
real: the records leave the log (the chain still verifies, the forget event names them),
every file of the home is rid of them, and capture never takes them again
(`cli.services.forget`, docs/secrets.md "Forgetting").
"""

from __future__ import annotations

import click

from cli.services.config import get_home
from cli.services.output import emit_json, human_bytes


@click.command()
@click.option("--session", default=None, metavar="ID",
              help="A session (its id, an alias, or a unique prefix of 6 or more).")
@click.option("--project", default=None, metavar="P", help="Every session of a project.")
@click.option("--text", default=None, metavar="STRING",
              help="One string (4+ characters), wherever it occurs; nothing else changes.")
@click.option("--apply", is_flag=True, help="Forget for real (default: a dry run).")
@click.option("--delete-sources", is_flag=True,
              help="With --apply: also delete the agent's own files of the forgotten "
                   "sessions (otherwise they are left, and never captured again).")
@click.option("--finish", is_flag=True,
              help="Finish a forget a crash interrupted (free pages, history.db, backups).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan or the result as JSON.")
@click.pass_context
def forget(ctx: click.Context, session: str | None, project: str | None, text: str | None,
           apply: bool, delete_sources: bool, finish: bool, as_json: bool) -> None:
    """Forget a session, a project or a string from the history, for real.

    Without --apply this only shows what would be forgotten. With --apply the records are
    removed from the log (their place and hash stay, so `agentlog verify` still proves the
    rest and names the forget event), history.db is rebuilt, archive files and backups
    that hold them are removed or replaced, and capture skips them from now on. Copies
    outside the home (exports you made, the agent's own files unless --delete-sources)
    are not touched.
    """
    from cli.services import forget as svc

    home = get_home(ctx)
    if finish:
        out = svc.finish(home)
        if as_json:
            emit_json(out)
        else:
            click.echo(f"finished: {out['scrubbedPages']} free pages overwritten, history.db "
                       f"rebuilt, {len(out['backupsReplaced'])} backup(s) replaced")
        return
    p = svc.plan(home, session=session, project=project, text=text)
    if delete_sources and not apply:
        click.echo("agentlog forget: --delete-sources only with --apply", err=True)
        ctx.exit(2)
    if not apply:
        out = p.to_dict(home)
        out["dryRun"] = True
        if as_json:
            emit_json(out)
            return
        _say_plan(out)
        return
    if svc.pending(home):
        svc.finish(home)
    out = svc.apply(home, p, delete_sources=delete_sources)
    out["dryRun"] = False
    if as_json:
        emit_json(out)
        return
    click.echo(f"forgot {out['forgotten']} records and amended {out['amended']} "
               f"({human_bytes(out['bytes'])}) of {out['sessions']} session(s); forget "
               f"event at record {out['event']}")
    click.echo(f"  log: {out['scrubbedPages']} free pages overwritten; history.db rebuilt")
    for f in out.get("archiveFilesRemoved", []):
        click.echo(f"  archive: {f}")
    if out.get("backupsReplaced"):
        click.echo(f"  backups: {len(out['backupsReplaced'])} old backup(s) replaced by a new one")
    left = [f for f in out["sourceFilesOnDisk"] if f not in out.get("sourceFilesDeleted", [])]
    for f in out.get("sourceFilesDeleted", []):
        click.echo(f"  deleted the agent's file {f}")
    if left:
        click.echo(f"  {len(left)} of the agent's own file(s) still exist (never captured "
                   "again; delete them yourself or rerun with --delete-sources):")
        for f in left[:20]:
            click.echo(f"    {f}")
    click.echo("  not reached: copies outside the home (exports you made, other machines, "
               "a team server synced before this)")


def _say_plan(out: dict[str, object]) -> None:
    if not out["records"]:
        click.echo("nothing to forget: no record holds it")
        return
    click.echo(f"would forget {out['forgotten']} records and amend {out['amended']} "
               f"({human_bytes(int(str(out['bytes'])))}) of {out['sessions']} session(s), "
               f"{out['sources']} source file(s) (dry run; add --apply)")
    for key, label in (("archiveFiles", "archive file"), ("backups", "backup to replace"),
                       ("sourceFilesOnDisk", "agent's file left on disk")):
        items = out[key]
        assert isinstance(items, list)
        for f in items[:20]:
            click.echo(f"  {label}: {f}")
