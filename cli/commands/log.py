"""Commands over the log itself: record, verify, audit, backup."""

from __future__ import annotations

import sys
from typing import Any

import click

from cli.services import audit as audits
from cli.services import catchup
from cli.services.config import get_home
from cli.services.errors import no_log as _no_log
from cli.services.output import emit_json, emit_json_pretty, human_bytes
from eventlog import LogMissing


@click.command()
@click.option("--json", "as_json", is_flag=True, default=True, hidden=True)
@click.pass_context
def record(ctx: click.Context, as_json: bool) -> None:
    """Append broker facts, one JSON object a line on stdin.

    The whole input is validated first: if any line is bad, nothing is appended, every
    bad line is reported (line number and reason) and the exit code is 2. Otherwise all
    facts are appended in one batch and {"appended","duplicates","head"} is printed.
    """
    from cli.services.facts import parse_lines

    home = get_home(ctx)
    data = sys.stdin.buffer.read()
    events, errors = parse_lines(data)
    if errors:
        for err in errors:
            click.echo(f"line {err['line']}: {err['error']}", err=True)
        from cli.services.errors import BadInput

        raise BadInput(f"{len(errors)} bad line(s); nothing appended",
                       "fix the lines above (the schema is in docs/events.md)")
    if not events:  # nothing to write: do not create a log just to say so
        head = home.log(readonly=True).head().seq if home.has_log() else 0
        emit_json({"appended": 0, "duplicates": 0, "head": head})
        return
    log = home.log()
    result = log.append(events)
    emit_json({"appended": result.appended, "duplicates": result.duplicates, "head": result.head})
    if result.appended:
        catchup.after_append(home)


@click.command()
@click.option("--log", "log_path", type=click.Path(file_okay=False, exists=True), default=None,
              help="Verify a copy of a log (a backup directory) instead of the home's log.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--postgres", "postgres", default=None, metavar="URL",
              help="Instead: re-check every host's chain on the team server (`config` = "
                   "team.postgres) and compare this home's host with the local log.")
@click.pass_context
def verify(ctx: click.Context, log_path: str | None, as_json: bool,
           postgres: str | None = None) -> None:
    """Re-hash every record and check gaps, chain, key index and LMDB structure.

    Exit 0 when sound, 1 when anything is wrong (the first bad seq is named).
    """
    from pathlib import Path

    from eventlog.verify import verify_isolated

    home = get_home(ctx)
    if postgres is not None:
        from cli.services.team_sync import verify_postgres

        ctx.exit(verify_postgres(home, postgres, as_json=as_json))
    extras: list[dict[str, Any]] = []
    if log_path is not None:
        report = verify_isolated(Path(log_path))
    else:
        if not home.has_log():
            raise _no_log(home.root)
        log = home.log(readonly=True)
        report = verify_isolated(home.log_dir, live=log)
        if report.ok:
            extras = audits.verify_extras(home, log)
    ok = report.ok and all(e.get("ok", False) for e in extras)
    if as_json:
        out = report.to_dict()
        out["ok"] = ok
        out["checks"] = extras
        emit_json(out)
    else:
        if report.ok:
            click.echo(
                f"ok: {report.records} records, {human_bytes(report.bytes)}, head "
                f"{report.head_seq} {report.head_hash[:16]}…, structure {report.structural}"
            )
            for fe in report.forget_events:
                click.echo(f"forgotten: {fe['forgotten']} records dropped, {fe['amended']} "
                           f"amended by the forget event at record {fe['seq']} ({fe['kind']}, "
                           f"{_iso(fe['at'])}, by {fe['by']}); each proven by it")
        else:
            where = f"record {report.first_bad_seq}: " if report.first_bad_seq else ""
            click.echo(f"BAD: {where}{report.reason}", err=True)
            for p in report.problems[1:]:
                click.echo(f"  also: {p}", err=True)
        for e in extras:
            status = "ok" if e.get("ok") else "UNCHECKED" if e.get("unchecked") else "DRIFT"
            click.echo(f"{e.get('name')}: {status} {e.get('detail', '')}".rstrip())
    ctx.exit(0 if ok else 1)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit(ctx: click.Context, as_json: bool) -> None:
    """Events by type and day, capture times, head, size, duplicates and writers."""
    from eventlog.audit import audit as run_audit

    home = get_home(ctx)
    try:
        log = home.log(readonly=True)
    except LogMissing:
        raise _no_log(home.root) from None
    report = run_audit(log)
    report["home"] = str(home.root)
    report.update(audits.audit_sections(home, log))
    if as_json:
        emit_json_pretty(report)
        return
    _print_audit(report)


def _table(title: str) -> Any:
    """An audit table that fits 80 columns: no side borders; a long cell folds onto more
    lines (never cut with "…", so two rows never look alike)."""
    from rich import box
    from rich.table import Table

    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                 collapse_padding=True, title_justify="left")


def _short_time(at: Any) -> str:
    """`2026-12-01T19:45:33.495+00:00` as `2026-12-01 19:45:33` (the audit is in UTC)."""
    text = str(at)
    return text[:19].replace("T", " ") if len(text) >= 19 and text[10:11] == "T" else text


def _print_audit(r: dict[str, Any]) -> None:
    from rich.console import Console

    Table = _table
    con = Console()
    con.print(f"[bold]agentlog audit[/bold]  home {r['home']}")
    con.print(
        f"events {r['events']}  ·  log {human_bytes(r['log_bytes'])}  ·  duplicates skipped "
        f"{r['duplicates_skipped']}  ·  head {r['head']['seq']} {r['head']['hash'][:16]}…"
    )
    con.print(f"first capture {r['first_capture']}  ·  last capture {r['last_capture']}")
    t = Table(title="events by type")
    t.add_column("type")
    t.add_column("count", justify="right")
    for tag, n in r["by_tag"].items():
        t.add_row(tag, str(n))
    con.print(t)
    days = list(r["by_day"].items())
    if days:
        d = Table(title="events by day (last 14)")
        d.add_column("day")
        d.add_column("count", justify="right")
        for day, n in days[-14:]:
            d.add_row(day, str(n))
        con.print(d)
    w = Table(title="writers")
    for col in ("seq", "at (UTC)", "host", "pid", "version", "command"):
        w.add_column(col, overflow="fold", no_wrap=col in ("seq", "at (UTC)", "pid"))
    for wr in r["writers"][-20:]:
        w.add_row(str(wr["seq"]), _short_time(wr["at"]), wr["host"], str(wr["pid"]),
                  wr["version"], wr["command"])
    con.print(w)
    for key, value in r.items():
        if key in {"home", "events", "log_bytes", "duplicates_skipped", "head", "first_capture",
                   "last_capture", "by_tag", "by_day", "writers"}:
            continue
        if key == "capture" and isinstance(value, dict) and "by_layout" in value:
            _print_capture(con, value)
            continue
        if key == "archive" and isinstance(value, dict) and "archive_ticks" in value:
            _print_archive(con, value)
            continue
        con.print(f"[bold]{key}[/bold]")
        con.print_json(data=value)


def _print_archive(con: Any, a: dict[str, Any]) -> None:
    """Archive counts and the latest operations, one line each (`--json` has them all)."""
    ops = sorted(a["archive_ticks"] + a["imports"] + a["exports"], key=lambda o: str(o["at"]))
    con.print(
        f"archive: {a['sessions_archived_events']} session.archived, "
        f"{a['turns_imported_events']} turns.imported events; {len(a['archive_ticks'])} "
        f"archive runs, {len(a['imports'])} imports, {len(a['exports'])} exports "
        f"(journal {a['journal']})", markup=False, highlight=False,
    )
    for op in ops[-5:]:
        details = op.get("details") or {}
        what = details.get("project") or details.get("source") or details.get("path") or ""
        con.print(f"  {op['at']}  {op['op']}  {what}", markup=False, highlight=False)


def _print_capture(con: Any, c: dict[str, Any]) -> None:
    """The capture section as a table and a few lines (it was a page of raw JSON)."""
    t = _table("captured by layout")
    widest = max((len(name) for name in c["by_layout"]), default=6)
    for col in ("layout", "files", "bytes", "records", "pending", "missing", "unknown types"):
        t.add_column(col, justify="left" if col in ("layout", "unknown types") else "right",
                     overflow="fold", no_wrap=col != "unknown types",
                     min_width=min(widest, 32) if col == "layout" else None)
    for layout, k in sorted(c["by_layout"].items()):
        unknown = ", ".join(f"{name} ×{n}" for name, n in sorted(k["unknown_types"].items()))
        records = "-" if k["records"] is None else str(k["records"])
        t.add_row(layout, str(k["files"]), human_bytes(k["bytes"]), records, str(k["pending"]),
                  str(k["missing"]), unknown)
    con.print(t)
    con.print(f"files {c['files']}  ·  bytes {human_bytes(c['bytes'])}  ·  pending "
              f"{c['pending']}  ·  parsers {c['parsers']}")
    for big in c.get("oversized", []):
        con.print(f"oversized (not captured): {big['path']} ({human_bytes(big['bytes'])}; "
                  "raise capture.snapshotMaxMiB in config.json)", markup=False, highlight=False)
    for root in c["roots"]:
        state = "" if root["exists"] else "  (missing)"
        con.print(f"configured {root['agent']} root ({root['origin']}): {root['path']}{state}",
                  markup=False, highlight=False)
    for p in c.get("pending_files", []):
        con.print(f"pending {p['source']} ({p['layout']}): {p['why']}", markup=False,
                  highlight=False)
    for p in c.get("index_pending", []):
        what = (f"{p['pendingBytes']} byte(s) of a line not yet ended" if p["pendingBytes"]
                else f"{p['unparsed']} record(s) not parsed")
        con.print(f"pending in history.db {p['source']}: {what}", markup=False,
                  highlight=False)
    for u in c.get("unknown_records", []):
        con.print(f"unknown record type {u['type']} ×{u['count']} in {u['source']} (kept in "
                  "the log, not indexed; a newer parser may read it)", markup=False,
                  highlight=False)
    for ret in c["claude_retention"]:
        con.print(
            f"claude retention {ret['root']}: cleanupPeriodDays {ret['cleanupPeriodDays']} "
            f"({ret['setting']}), {ret['deleted_within_7_days']} transcript(s) deleted within "
            f"7 days, {ret['of_which_captured']} of them captured",
            markup=False, highlight=False,
        )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
@click.pass_context
def backup(ctx: click.Context, as_json: bool) -> None:
    """Write a consistent compacted copy to <home>/backups/<timestamp>/, verified."""
    from eventlog.backup import backup as run_backup

    home = get_home(ctx)
    if not home.has_log():  # a mistyped --home must not become a new home with a backup
        raise _no_log(home.root)
    log = home.log()
    manifest = run_backup(log, home.backups_dir)
    if as_json:
        emit_json(manifest)
    else:
        click.echo(
            f"backup {manifest['path']}: head {manifest['head_seq']} "
            f"{manifest['head_hash'][:16]}…, {human_bytes(manifest['bytes'])}, verified"
        )


def _iso(ms: object) -> str:
    from eventlog.audit import iso_ms

    return iso_ms(ms if isinstance(ms, int) else None) or "?"
