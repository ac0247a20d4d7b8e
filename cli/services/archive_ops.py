"""The operations behind `history`, `export`, `import`, `archive` and their HTTP routes.

Both front ends (click commands in `cli.commands.archive`, routes in `cli.web.history_routes`)
call these functions, so they answer alike. Each reads the projections only after catching
them up to the log head, so what was just imported or archived shows at once. (The
whole-log copy is in `cli.services.log_transfer`.)

Recording (for `agentlog audit`): operations that write to the log (an applied import that
inserts turns, an archive tick that archives sessions) append an `OperationRecorded` event
in the same batch as their facts. Operations that must write nothing to the log — dry-run
imports, imports that skip everything, exports, ticks with nothing to archive — are noted
in `<home>/operations.jsonl` instead (see `cli.services.audit.archive`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cli.services import catchup
from cli.services.audit.archive import note_operation
from cli.services.config import Home
from cli.services.errors import BadInput, Busy, Failure, NotFound, Unavailable
from eventlog import EventLog, now_ms
from eventlog.events import Event, OperationRecorded

if TYPE_CHECKING:
    from projections.history import Connection

ARCHIVE_EVERY_MS = 24 * 3600 * 1000
DEFAULT_AFTER_DAYS = 30


class NoLog(Failure):
    """The home holds no event log yet."""

    http_status = 404

    def __init__(self, message: str) -> None:
        super().__init__(message, "run `agentlog capture` (or `agentlog import`) first")


def unknown_project(project: str, hint: str) -> NotFound:
    """The project names nothing in history.db; the hint lists the known ones."""
    return NotFound(f"unknown project {project!r}", hint)


def require_project(con: Connection, project: str) -> None:
    from projections.sessions import projects_named, unknown_project_hint

    known = projects_named(con)
    if project not in known:
        raise unknown_project(project, unknown_project_hint(known))


# --- plumbing ---------------------------------------------------------------------------


def log_of(home: Home, *, create: bool = False) -> EventLog:
    if not create and not home.has_log():
        raise NoLog(f"no event log in {home.root} (nothing captured or imported yet)")
    return home.log(readonly=False) if create else home.log(readonly=True)


def open_history(home: Home, *, required: bool = True) -> Connection | None:
    """history.db caught up to the log head, opened read-only (None when there is none)."""
    from projections.errors import ProjectionBusy
    from projections.history import open_current

    if not home.has_log():
        if required:
            raise NoLog(f"no event log in {home.root} (nothing captured or imported yet)")
        return None
    try:
        return open_current(home.history_db, home.log())
    except ProjectionBusy as exc:
        raise Busy(f"history.db is being built by another process: {exc}",
                   "try again in a moment") from None


def _op_event(op: str, at: int, details: dict[str, Any]) -> tuple[bytes, Event]:
    return f"op:{op}:{at}:{uuid.uuid4().hex}".encode(), OperationRecorded(
        op=op, at=at, details=details
    )


def _query_errors() -> tuple[type[Exception], ...]:
    from projections.envelope import EnvelopeError
    from projections.errors import QueryError

    return (QueryError, EnvelopeError)


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except _query_errors() as exc:
        raise BadInput(str(exc)) from None


def _team(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A `projections.pg.history` call: query errors as BadInput, server errors as 503."""
    from projections.pg.conn import TeamError

    try:
        return _call(fn, *args, **kwargs)
    except TeamError as exc:
        raise Unavailable(str(exc)) from None


# --- browse and search ------------------------------------------------------------------


def history(home: Home, project: str, filters: dict[str, Any], page: int = 1, *,
            strict: bool = False) -> dict[str, Any]:
    """One page of a project's turns plus the project's session list. With `strict` (the
    CLI), a project history.db does not name is `NotFound`, else an empty page."""
    from projections.project_key import project_key

    project = project_key(project)  # Windows paths: one project whatever their case
    from projections import history as h
    from projections.filters import parse_time

    f = dict(filters)
    for name in ("since", "until"):
        if f.get(name) is not None:
            f[name] = _call(parse_time, f[name], name)
    if home.postgres is not None:
        from projections.pg import history as pgh

        found: dict[str, Any] = _team(pgh.history_page, home.postgres, project,
                                      h.HistoryFilters(**f), page)
        return found
    con = open_history(home)
    assert con is not None
    try:
        if strict:
            require_project(con, project)
        hf = h.HistoryFilters(**f)
        out: dict[str, Any] = _call(h.history_page, con, project, hf, page)
        out["sessions"] = h.sessions(con, project, include_archived=hf.include_archived)
        return out
    finally:
        con.close()


def search(
    home: Home, query: str, *, role: str | None = None, include_archived: bool = False
) -> dict[str, Any]:
    from projections import history as h

    if not query.strip():
        return {"query": "", "hits": [], "capped": False}
    if home.postgres is not None:
        from projections.pg import history as pgh

        found: dict[str, Any] = _team(pgh.search, home.postgres, query, role=role,
                                      include_archived=include_archived)
        return found
    con = open_history(home)
    assert con is not None
    try:
        out: dict[str, Any] = _call(h.search, con, query, role=role,
                                    include_archived=include_archived)
        return out
    finally:
        con.close()


def projects(home: Home, *, include_archived: bool = False) -> list[dict[str, Any]]:
    from projections import history as h

    if home.postgres is not None:
        from projections.pg import history as pgh

        listed: list[dict[str, Any]] = _team(pgh.projects, home.postgres,
                                             include_archived=include_archived)
        return listed
    con = open_history(home)
    assert con is not None
    try:
        return h.projects(con, include_archived=include_archived)
    finally:
        con.close()


def archived_sessions(home: Home) -> int:
    """Sessions hidden from the project list (archived)."""
    from projections import history as h

    if home.postgres is not None:
        from projections.pg import history as pgh

        count: int = _team(pgh.archived_sessions, home.postgres)
        return count
    con = open_history(home)
    assert con is not None
    try:
        return h.archived_sessions(con)
    finally:
        con.close()


# --- export -----------------------------------------------------------------------------


def export_to(
    home: Home,
    project: str,
    out: IO[bytes],
    *,
    session: str | None = None,
    include_archived: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    from projections.export import write_export

    con = open_history(home)
    assert con is not None
    try:
        if strict:  # the CLI: an unknown project is a mistake, not an empty export
            require_project(con, project)
        res = write_export(con, project, out, session=session,
                           include_archived=include_archived)
    finally:
        con.close()
    summary = {"project": project, "session": session, "turns": res.turns, "bytes": res.bytes,
               "sha256": res.sha256, "exportedAt": res.exported_at}
    note_operation(home, "export", summary)
    return summary


def export_file(home: Home, project: str, dest: Path, **kwargs: Any) -> dict[str, Any]:
    """Export to `dest` atomically (temporary file in the same directory, then rename)."""
    from projections.project_key import project_key

    project = project_key(project)  # Windows paths: one project whatever their case
    from eventlog.files import open_atomic

    dest = dest.absolute()
    with open_atomic(dest) as f:
        summary = export_to(home, project, f, **kwargs)
    summary["path"] = str(dest)
    return summary


def write_file_atomically(dest: Path, data: bytes) -> Path:
    """`data` to `dest` atomically (`eventlog.files.write_atomic`)."""
    from eventlog.files import write_atomic

    dest = dest.absolute()
    write_atomic(dest, data)
    return dest


def export_spooled(home: Home, project: str, **kwargs: Any) -> tuple[Path, dict[str, Any]]:
    """Export into a temporary file (the caller streams it, then deletes it).

    The export's read transaction ends before the first byte goes to a client, however
    slow, so a download never holds up capture.
    """
    from projections.project_key import project_key

    project = project_key(project)  # Windows paths: one project whatever their case
    home.root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".export-", suffix=".json", dir=home.root)
    try:
        with os.fdopen(fd, "wb") as f:
            summary = export_to(home, project, f, **kwargs)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp), summary


def iter_file(path: Path, chunk: int = 256 * 1024) -> Iterator[bytes]:
    """Stream a spooled file and delete it afterwards."""
    try:
        with path.open("rb") as f:
            while piece := f.read(chunk):
                yield piece
    finally:
        path.unlink(missing_ok=True)


# --- import -----------------------------------------------------------------------------


def read_limited(stream: IO[bytes]) -> bytes:
    """At most the envelope size limit (+1 byte, so "over the limit" is detectable)."""
    from projections.envelope import MAX_FILE_BYTES

    return stream.read(MAX_FILE_BYTES + 1)


def import_envelope(
    home: Home, data: bytes, *, project: str | None = None, apply: bool = False,
    source: str = "-",
) -> dict[str, Any]:
    """Plan (and with `apply`, append) the import of an envelope's bytes."""
    from projections import importer
    from projections.envelope import MAX_FILE_BYTES, read_envelope

    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"envelope is over the limit of {MAX_FILE_BYTES} bytes (256 MiB); "
                      "nothing imported")
    sha = hashlib.sha256(data).hexdigest()
    try:
        env = read_envelope(data, sha256=sha)
    except _query_errors() as exc:
        raise BadInput(f"{exc}; nothing imported") from None
    del data
    con = open_history(home, required=False)
    try:
        log = home.log(readonly=True) if home.has_log() else None
        plan = _call(importer.plan_import, con, log, env, project)
    finally:
        if con is not None:
            con.close()
    out: dict[str, Any] = plan.to_dict()
    out.update(applied=False, appended=0, dryRun=not apply, source=source)
    details = {k: out[k] for k in ("project", "fileSha256", "sessionsToInsert", "turnsToInsert",
                                   "sessionsSkipped", "warning", "source")}
    if apply and plan.to_insert:
        at = now_ms()
        items = importer.events(plan, env, at)
        items.append(_op_event("import.applied", at, details))
        result = log_of(home, create=True).append(items)
        out.update(applied=True, appended=result.appended, head=result.head)
        after_append(home)
    else:
        # an apply that found every session present wrote nothing: not "import.applied"
        note_operation(home, "import.skipped" if apply else "import.dry_run", details)
    return out


def after_append(home: Home) -> None:
    catchup.after_append(home)
    con = open_history(home, required=False)  # catches up even when no hook is installed
    if con is not None:
        con.close()


# --- archive ----------------------------------------------------------------------------


def _after_days(home: Home, after_days: int | None) -> int:
    if after_days is not None:
        return after_days
    cfg = home.config.get("archive")
    value = cfg.get("afterDays") if isinstance(cfg, dict) else None
    return value if isinstance(value, int) and value >= 0 else DEFAULT_AFTER_DAYS


def archive(home: Home, *, now: int | None = None, after_days: int | None = None,
            after_dump: Any = None) -> dict[str, Any]:
    """One archive tick now (or at `now`, epoch ms)."""
    from projections.archiver import archive_tick as tick

    days = _after_days(home, after_days)
    at = now if now is not None else now_ms()
    con = open_history(home)
    assert con is not None
    try:
        log = home.log()
        res = tick(con, log, home.archive_dir, now=at, after_days=days, after_dump=after_dump)
    finally:
        con.close()
    out = res.to_dict()
    details = {k: out[k] for k in ("now", "afterDays", "candidates", "archived", "filesWritten",
                                   "filesReused", "alreadyRecorded")}
    if res.archived:
        log.append([_op_event("archive.tick", now_ms(), details)])
        after_append(home)
    else:
        note_operation(home, "archive.tick", details)
    _stamp_tick(home, at)
    return out


def _stamp_path(home: Home) -> Path:
    return home.archive_dir / ".last-tick"


def _stamp_tick(home: Home, at: int) -> None:
    home.archive_dir.mkdir(parents=True, exist_ok=True)
    _stamp_path(home).write_text(str(at), encoding="ascii")


def archive_tick(home: Home, now: int | None = None) -> dict[str, Any] | None:
    """The 24 h tick of `capture --watch`: archive when the last tick is a day old.

    Returns the tick's report, or None when it is not due (or there is no log yet).
    """
    at = now if now is not None else now_ms()
    try:
        last = int(_stamp_path(home).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        last = None
    if last is not None and 0 <= at - last < ARCHIVE_EVERY_MS:
        return None
    try:
        return archive(home, now=at)
    except NoLog:
        return None


def start_archive_ticker(home: Home, stop: threading.Event, every_s: float = 3600.0,
                         first_after_s: float = 300.0) -> threading.Thread | None:
    """Call `archive_tick` hourly (it archives once a day) until `stop` is set.

    Used by `capture --watch`; the first call waits `first_after_s` so the initial capture
    burst finishes first. Disabled by config {"archive": {"auto": false}}. A failing tick
    is reported on stderr (no transcript text) and retried an hour later.
    """
    cfg = home.config.get("archive")
    if isinstance(cfg, dict) and cfg.get("auto") is False:
        return None

    def loop() -> None:
        stop.wait(first_after_s)
        while not stop.is_set():
            try:
                archive_tick(home)
            except Exception as exc:  # keep capturing whatever happens here
                sys.stderr.write(f"agentlog: archive tick failed: {type(exc).__name__}: "
                                 f"{exc}\n")
            stop.wait(every_s)

    t = threading.Thread(target=loop, name="agentlog-archive", daemon=True)
    t.start()
    return t
