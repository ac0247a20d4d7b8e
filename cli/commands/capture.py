"""`agentlog capture` and `agentlog restore`: thin front ends of readers.capture/restore.

The capture roots are read from flags, `config.json` and the environment in
`cli.services.capture.ops` (shared with the hooks); the library gets them as values. The
capture path imports rich only when drawing a progress bar on a terminal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cli.services.config import Home, get_home
from cli.services.output import emit_json, human_bytes
from readers.registry import names as _agent_names

_ROOT_FLAGS = _agent_names()  # one --<agent>-dir flag per registered agent
WATCH_POLL_S = 0.25  # how soon `capture --watch` notices a SIGINT/SIGTERM its handler noted


def _root_options(f: Any) -> Any:
    for agent in reversed(_ROOT_FLAGS):
        f = click.option(
            f"--{agent}-dir",  # readers/registry.py: Agent.flag
            f"{agent}_dir",
            default=None,
            help=f"{agent} root(s), comma-separated (default: config, env, then the usual place).",
        )(f)
    return f


@click.command()
@_root_options
@click.option("--project-roots", "project_roots", default=None,
              help="Folders of projects (comma-separated) scanned for Aider and Crush files "
                   "(default: config project_roots).")
@click.option("--watch", is_flag=True, help="Keep capturing until SIGINT/SIGTERM.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--index/--no-index", default=True, show_default=True,
              help="Bring history.db up to date after capturing (search also catches up).")
@click.option("--path", "paths", multiple=True, type=click.Path(dir_okay=False),
              help="Capture only this file (repeatable; a Claude Code session brings its "
                   "subagents and tool results).")
@click.option("--settle", type=float, default=2.0, show_default=True, hidden=True,
              help="Seconds an unterminated final line must be quiet before it is captured.")
@click.pass_context
def capture(
    ctx: click.Context,
    /,
    watch: bool,
    as_json: bool,
    index: bool,
    paths: tuple[str, ...],
    settle: float,
    **dirs: str | None,
) -> None:
    """Capture agent history into the log (read-only on the sources).

    One pass until discovery and a full polling sweep are idle, or with --watch until
    interrupted. Summary: files, bytes, appended, duplicates (--json for scripts).
    """

    home = get_home(ctx)
    flags = {agent: dirs.get(f"{agent}_dir") for agent in _ROOT_FLAGS}
    flags["project_roots"] = dirs.get("project_roots")
    from cli.services.capture.ops import capture_roots

    roots = capture_roots(home, flags)
    if not watch and not paths:
        from cli.services.capture.run import run

        # turns the collector on once its engine is ready (cli.registry.QUIET_UNTIL_WORK)
        run(home, roots, as_json=as_json, index=index, settle=settle,
            progress=not as_json and sys.stderr.isatty())
        return None
    from cli.services.startup import startup_done

    startup_done()
    if paths:
        if watch:
            raise click.UsageError("--path and --watch do not go together")
        return _capture_paths(home, roots, paths, settle, index, as_json)
    from cli.services.capture.retention import warn_once

    warn_once(home)
    stats = _watch(home, index, settle, roots=roots, announce=not as_json)
    from cli.services.capture.run import report

    report(stats, roots, as_json=as_json)
    return None


def _capture_paths(home: Home, roots: list[Any], paths: tuple[str, ...], settle: float,
                   index: bool, as_json: bool) -> None:
    from cli.commands.capture_path import capture_named, summary

    named = capture_named(home, [Path(p) for p in paths], roots, settle=settle, index=index)
    from cli.services.capture.retention import warn_once

    warn_once(home)
    out = summary(named)
    if as_json:
        emit_json(out)
        return
    click.echo(f"captured {out['files']} files, {human_bytes(out['bytes'])} new, "
               f"{out['appended']} events appended ({out['duplicates']} duplicates)")
    for p in named.outside:
        click.echo(f"warning: {p} is under no capture root "
                   f"({', '.join(str(r.path) for r in roots if r.exists) or 'none exist'})",
                   err=True)
    for p in named.ignored:
        click.echo(f"warning: {p} is not agent history", err=True)
    for r in named.refused:
        click.echo(f"refused: {r['path']} {r['reason']}: nothing recorded", err=True)
    if (named.outside or named.refused) and not named.sources:
        raise SystemExit(1)


def _watch(home: Home, index: bool, settle: float, *, roots: list[Any],
           announce: bool) -> Any:
    """Capture until SIGINT/SIGTERM with the shared loop (cli/services/capture/loop.py): only while
    no other agentlog process of this home captures. Unless --json: a start line and one
    line per commit on stderr (counts only, never transcript text)."""
    import signal
    import time

    from cli.services.capture.loop import CaptureLoop

    seen = [0, 0]

    def committed(engine: Any) -> None:
        if announce:
            appended, size = engine.stats.appended, engine.stats.bytes
            click.echo(f"{time.strftime('%H:%M:%S')} +{appended - seen[0]} events, "
                       f"{human_bytes(size - seen[1])}", err=True)
            seen[:] = [appended, size]

    def waiting(who: str) -> None:
        click.echo(f"{who} captures this home; waiting to take over when it stops", err=True)

    loop = CaptureLoop(home, roots=roots, settle_s=settle, index=index, on_commit=committed,
                       on_wait=waiting if announce else None)
    # The loop runs in a thread; this one waits for it, and the signal handlers only note
    # the signal. A handler that stopped the loop itself (setting its `threading.Event`)
    # could run inside this thread's own `Event.wait` and deadlock on the event's lock.
    asked: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        asked.append(signum)  # no lock taken here

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _watch_until_asked(home, loop, roots, asked, announce)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _watch_until_asked(home: Home, loop: Any, roots: list[Any], asked: list[int],
                       announce: bool) -> Any:
    """Run `loop` on a worker thread and wait here until a signal is noted in `asked` (or
    the loop ends on its own); then stop it: its Stats, or its exception raised here."""
    import threading

    from cli.services.archive_ops import start_archive_ticker  # the 24 h auto-archive tick

    start_archive_ticker(home, loop.stop_event)
    if announce:
        watched = ", ".join(f"{r.agent} {r.path}" for r in roots if r.exists) or "nothing"
        click.echo(f"watching {watched}; Ctrl-C stops", err=True)
    ended: list[Any] = []  # run's Stats, or the exception that ended it

    def run() -> None:
        try:
            ended.append(loop.run())
        except BaseException as exc:
            ended.append(exc)

    worker = threading.Thread(target=run, name="agentlog-capture")
    worker.start()
    while not asked and worker.is_alive():
        worker.join(WATCH_POLL_S)
    loop.stop()  # sets its events from this thread; the worker commits what is pending
    worker.join()
    if isinstance(ended[0], BaseException):
        raise ended[0]
    return ended[0]


REFUSED_EXIT = 3  # restore wrote what it could; some sources were refused (unsafe, clashing)


@click.command()
@click.option("--to", "to", required=True, type=click.Path(file_okay=False),
              help="Folder to write the captured files into.")
@click.option("--agent", type=click.Choice(list(_ROOT_FLAGS)), default=None)
@click.option("--session", default=None, help="Only files (and rows) of this session id.")
@click.option("--skip-damaged", is_flag=True,
              help="On a damaged log, write what is intact and list what was left out.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def restore(ctx: click.Context, to: str, agent: str | None, session: str | None,
            skip_damaged: bool, as_json: bool) -> None:
    """Write captured files back under DIR/<agent>/<path>, byte-identical to the newest
    captured generation; database rows as JSON Lines per table.

    Every record is checked against the log's hash chain first: a damaged log writes
    nothing and exits 1 naming the record, unless --skip-damaged. Sources refused as unsafe
    (a path leaving DIR, a link, a clash, a crafted offset) are listed: exit 3."""
    from eventlog import CorruptRecord, EventLogError, LogMissing
    from eventlog.records import DAMAGE_HINT
    from readers.restore import RestoreError
    from readers.restore import restore as run_restore

    home = get_home(ctx)
    try:
        log = home.log(readonly=True)
    except LogMissing:
        from cli.services.errors import Failure

        raise Failure(f"no event log in {home.root} (nothing captured yet)",
                      "run `agentlog capture` first") from None
    try:
        report = run_restore(log, Path(to).absolute(), agent=agent, session=session,
                             skip_damaged=skip_damaged)
    except CorruptRecord as exc:
        if skip_damaged:  # a damaged page where no record was being read: no way around it
            raise click.ClickException(f"{exc}; nothing restored: {DAMAGE_HINT}") from None
        raise click.ClickException(
            f"{exc}; nothing restored: {DAMAGE_HINT}; `restore --skip-damaged` writes what "
            "is intact") from None
    except (EventLogError, RestoreError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    if session is not None and not (report.files or report.rows or report.skipped):
        from cli.services.errors import BadInput

        raise BadInput(f"--session: no captured file or row belongs to session {session!r}"
                       + (f" of {agent}" if agent else ""),
                       "session ids are listed by `agentlog history --project P --sessions`")
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(f"restored {report.files} files ({human_bytes(report.bytes)}) and "
                   f"{report.rows} rows in {report.tables} tables to {to}")
        for r in report.refused:
            click.echo(f"skipped unsafe path: {r['source']!r}: {r['reason']}", err=True)
        if report.damaged:
            seqs = ", ".join(map(str, report.damaged[:20]))
            click.echo(f"left out {len(report.damaged)} damaged record(s): {seqs}", err=True)
        if report.unreadable_from is not None:
            click.echo(f"the log cannot be read from record {report.unreadable_from} on (a "
                       "damaged LMDB page): files are restored as far as the records before "
                       f"it: {DAMAGE_HINT}", err=True)
        for src in report.incomplete:
            click.echo(f"left out (a damaged record belonged to it): {src!r}", err=True)
    if report.damaged or report.incomplete:
        ctx.exit(1)
    if report.refused:  # written, but not everything: a distinct code (docs/capture.md)
        ctx.exit(REFUSED_EXIT)
