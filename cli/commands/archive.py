"""Commands: history, export, import, archive (thin: parse, call `cli.services.archive_ops`, print).

Exit codes: 0 ok; 1 nothing to work on (no log, unknown project); 2 bad input (a malformed
or oversized envelope or log file, a bad filter). `--json` prints one JSON object.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from cli.services import archive_ops as ops
from cli.services import log_transfer
from cli.services.archive_ops import archive_tick
from cli.services.config import get_home
from cli.services.dates import HELP as DATE_HELP
from cli.services.dates import local_midnight
from cli.services.errors import AgentlogError, BadInput
from cli.services.output import emit_json

__all__ = ["archive", "archive_tick", "export", "history", "import_"]

ROLES = ("user", "assistant", "tool_use", "tool_result", "thinking", "system")
_MARK = re.compile(r"<mark>(.*?)</mark>", re.S)


def _fail(ctx: click.Context, exc: AgentlogError) -> NoReturn:
    exc.hint = exc.hint or f"see `agentlog {ctx.info_name} --help`"
    raise exc from None


def _short(text: str | None, n: int = 160) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _print_preview(preview: str) -> str:
    """A <mark>ed, HTML-escaped preview as rich markup (the match highlighted)."""
    from rich.markup import escape

    out, pos = [], 0
    for m in _MARK.finditer(preview):
        out.append(escape(html.unescape(preview[pos:m.start()])))
        out.append(f"[bold yellow]{escape(html.unescape(m.group(1)))}[/bold yellow]")
        pos = m.end()
    out.append(escape(html.unescape(preview[pos:])))
    return " ".join("".join(out).split())


@click.command()
@click.argument("query", required=False, default="")
@click.option("--project", "-p", default=None, help="Project id (omit to search all projects).")
@click.option("--session", "-s", default=None, help="Only this session.")
@click.option("--role", type=click.Choice(ROLES), default=None)
@click.option("--tool", default=None, help="Only turns of this tool.")
@click.option("--thread", default="all", show_default=True,
              help="main (main thread only), all, or @NAME (one subagent).")
@click.option("--agent", default=None, help="Only turns of this agent (claude, codex, …).")
@click.option("--since", default=None, help=DATE_HELP)
@click.option("--until", default=None, help=DATE_HELP)
@click.option("--page", type=click.IntRange(1), metavar="INTEGER", default=1, show_default=True)
@click.option("--sessions", "list_sessions", is_flag=True, help="List the project's sessions.")
@click.option("--include-archived", is_flag=True, help="Include archived sessions.")
@click.option("--json", "as_json", is_flag=True, help="Print the page as JSON.")
@click.pass_context
def history(ctx: click.Context, query: str, project: str | None, session: str | None,
            role: str | None, tool: str | None, thread: str, agent: str | None,
            since: str | None,
            until: str | None, page: int, list_sessions: bool, include_archived: bool,
            as_json: bool) -> None:
    """Browse one project's turns (100 a page, oldest first), or search every project.

    With --project: the project's turns filtered by session, role, tool, thread, agent, time and
    the words of QUERY. Without it: QUERY across all projects, at most 200 hits, newest
    first (an empty QUERY lists the projects instead).
    """
    home = get_home(ctx)
    try:
        if project is None:
            if not query.strip():
                projects = ops.projects(home, include_archived=include_archived)
                hidden = 0 if include_archived else ops.archived_sessions(home)
                if as_json:
                    emit_json({"projects": projects, "hiddenArchivedSessions": hidden})
                else:
                    for p in projects:
                        click.echo(f"{p['last'] or '-':24}  {p['turns']:>7} turns  {p['project']}")
                    _say_hidden(hidden)
                return
            res = ops.search(home, query, role=role, include_archived=include_archived)
            if as_json:
                emit_json(res)
                return
            _print_search(res)
            return
        filters: dict[str, Any] = {
            "session": session, "role": role, "tool": tool, "agent": thread,
            "agent_name": agent, "since": local_midnight(since),
            "until": local_midnight(until), "text": query or None,
            "include_archived": include_archived,
        }
        res = ops.history(home, project, filters, page, strict=True)
    except AgentlogError as exc:
        _fail(ctx, exc)
        return
    if as_json:
        emit_json({"sessions": res["sessions"]} if list_sessions else res)
        return
    if list_sessions:
        for s in res["sessions"]:
            click.echo(f"{s['last'] or '-':24}  {s['turns']:>6} turns  {s['sessionId']}"
                       f"{'  ' + _short(s['title'], 60) if s['title'] else ''}")
        return
    for t in res["turns"]:
        tool_s = f" [{t['tool']}]" if t["tool"] else ""
        sub = f" @{t['subagentName']}" if t["subagentName"] else ""
        click.echo(f"{t['ts'] or '-':24}  {t['role']:<11}{tool_s}{sub}  {t['sessionId'][:12]}  "
                   f"{_short(t['content'])}")
    more = f"; next: --page {res['next']}" if res["next"] else ""
    click.echo(f"page {res['page']}: {len(res['turns'])} turns{more}", err=True)
    _say_hidden(res["hiddenArchivedSessions"])


def _say_hidden(n: int) -> None:
    if n:
        click.echo(f"{n} archived session{'s' if n != 1 else ''} hidden; "
                   "--include-archived shows them", err=True)


def _print_search(res: dict[str, Any]) -> None:
    from rich.console import Console

    con = Console(highlight=False, soft_wrap=True)
    for hit in res["hits"]:
        con.print(f"{hit['ts'] or '-'}  [cyan]{hit['project'] or '-'}[/cyan]  {hit['role']}  "
                  f"{_print_preview(hit['preview'])}")
    capped = " (capped at 200; refine the query)" if res["capped"] else ""
    click.echo(f"{len(res['hits'])} hits{capped}", err=True)
    _say_hidden(res["hiddenArchivedSessions"])


@click.command()
@click.option("--project", "-p", default=None, help="Project to export.")
@click.option("--session", "-s", default=None, help="Only this session.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default=None,
              help="Write to FILE (atomically) instead of stdout.")
@click.option("--include-archived", is_flag=True, help="Include archived sessions.")
@click.option("--log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="Export the whole log, losslessly, to FILE (JSON Lines).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.option("--format", "fmt", type=click.Choice(["json", "md", "html"]), default="json",
              show_default=True,
              help="json: the envelope `import` reads; md or html: a readable transcript of "
                   "--session ID (a session or conversation id) or of every session of "
                   "--project (html: one self-contained file that opens offline).")
@click.pass_context
def export(ctx: click.Context, project: str | None, session: str | None, output: str | None,
           include_archived: bool, log_file: str | None, as_json: bool,
           fmt: str = "json") -> None:
    """Export a project's turns as the JSON envelope, or the whole log with --log FILE, or a
    readable transcript with --format md|html."""
    home = get_home(ctx)
    try:
        if fmt != "json":
            if log_file is not None:
                raise BadInput("--log FILE is the lossless JSON Lines export; drop --format")
            _export_readable(home, fmt, project, session, output, include_archived, as_json)
            return
        if log_file is not None:
            if project or session or output:
                raise BadInput("--log FILE exports the whole log; drop --project/-o")
            summary = log_transfer.export_log(home, Path(log_file))
        else:
            if not project:
                raise BadInput("--project is required (or --log FILE for the whole log)")
            if output is None:
                ops.export_to(home, project, sys.stdout.buffer, session=session,
                              include_archived=include_archived, strict=True)
                sys.stdout.buffer.flush()
                return
            summary = ops.export_file(home, project, Path(output), session=session,
                                      include_archived=include_archived, strict=True)
    except AgentlogError as exc:
        _fail(ctx, exc)
        return
    if as_json:
        emit_json(summary)
    elif log_file is not None:
        click.echo(f"exported {summary['records']} records (head {summary['head']['seq']} "
                   f"{summary['head']['hash'][:16]}…) to {summary['path']}")
    else:
        click.echo(f"exported {summary['turns']} turns of {project} to {summary['path']}")


def _export_readable(home: Any, fmt: str, project: str | None, session: str | None,
                     output: str | None, include_archived: bool, as_json: bool) -> None:
    from cli.services import transcript

    if bool(project) == bool(session):
        raise BadInput(f"--format {fmt} needs --session ID or --project P (one of them)")
    if session:
        found = [transcript.session_transcript(home, session)]
        title = None
    else:
        assert project is not None
        found = transcript.project_transcripts(home, project, include_archived=include_archived)
        title = project
    text = (transcript.to_html if fmt == "html" else transcript.to_markdown)(found, title)
    data = text.encode("utf-8")
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    dest = ops.write_file_atomically(Path(output), data)
    summary = {"format": fmt, "path": str(dest), "sessions": len(found), "bytes": len(data),
               "items": sum(len(t.items) for t in found)}
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"exported {summary['sessions']} session(s), {summary['items']} items, as "
                   f"{fmt} to {dest}")


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), required=False)
@click.option("--apply", is_flag=True, help="Append the turns (default: a dry run).")
@click.option("--project", "-p", default=None, help="Target project (default: projectId).")
@click.option("--log", "log_file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Import a whole-log export into this (empty) home.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def import_(ctx: click.Context, file: str | None, apply: bool, project: str | None,
            log_file: str | None, as_json: bool) -> None:
    """Import an export envelope FILE (- for stdin), or a log export with --log; dry run
    unless --apply.

    Idempotent per session: a session already present in the target project is skipped
    whole, with a warning. A malformed or oversized file is refused and nothing written.
    """
    home = get_home(ctx)
    try:
        if log_file is not None:
            if file is not None:
                raise BadInput("give either FILE or --log FILE, not both")
            res = log_transfer.import_log(home, Path(log_file), apply=apply)
        else:
            if file is None:
                raise BadInput("missing FILE (an export envelope, or - for stdin)")
            res = ops.import_envelope(home, _read(file), project=project, apply=apply,
                                      source=file)
    except AgentlogError as exc:
        _fail(ctx, exc)
        return
    if as_json:
        emit_json(res)
        return
    if log_file is not None:
        if not res["applied"]:
            verb = f"would import (dry run; add --apply) {res['records']} records"
        elif res.get("alreadyPresent"):
            verb = (f"imported {res.get('appended', 0)} records "
                    f"({res['alreadyPresent']} already present)")
        else:
            verb = f"imported {res['records']} records"
        click.echo(f"{verb}, head {res['head']['seq']} {res['head']['hash'][:16]}…")
        return
    verb = "would import (dry run; add --apply)" if res["dryRun"] else "imported"
    click.echo(f"{verb} {res['turnsToInsert']} turns in {res['sessionsToInsert']} session(s) "
               f"into project {res['project']}")
    if res["warning"]:
        click.echo(f"warning: {res['warning']}", err=True)


def _read(file: str) -> bytes:
    from projections.envelope import MAX_FILE_BYTES

    if file == "-":
        return ops.read_limited(sys.stdin.buffer)
    path = Path(file)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise BadInput(f"{file}: {size} bytes is over the limit of {MAX_FILE_BYTES} "
                              "(256 MiB); nothing imported")
        with path.open("rb") as f:
            return ops.read_limited(f)
    except OSError as exc:
        raise BadInput(f"cannot read {file}: {exc.strerror or exc}") from None


@click.command()
@click.option("--after-days", type=click.IntRange(0), metavar="INTEGER", default=None,
              help="Archive sessions whose newest turn is older than N days (default 30).")
@click.option("--now", default=None, help="Pretend it is this time (epoch ms or ISO-8601).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def archive(ctx: click.Context, after_days: int | None, now: str | None, as_json: bool) -> None:
    """Write old sessions to <home>/archive/ and take them out of the hot history.

    Their events stay in the log; `history --include-archived` still shows them, and
    importing an archive file restores its session.
    """
    from projections.errors import QueryError
    from projections.filters import parse_time

    home = get_home(ctx)
    try:
        at = parse_time(now, "now") if now is not None else None
        res = ops.archive(home, now=at, after_days=after_days)
    except QueryError as exc:
        _fail(ctx, BadInput(str(exc)))
        return
    except AgentlogError as exc:
        _fail(ctx, exc)
        return
    if as_json:
        emit_json(res)
        return
    for s in res["sessions"]:
        click.echo(f"archived {s['project']} {s['sessionId']} ({s['turns']} turns) -> "
                   f"{s['path']}")
    click.echo(f"{res['archived']} session(s) archived of {res['candidates']} older than "
               f"{res['afterDays']} days (cutoff {res['cutoff']})")
