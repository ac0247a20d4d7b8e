"""HTTP routes of per-project history, cross-project search, export and import.

    GET  /api/projects                                   projects with turns
    GET  /api/projects/<id>/history?session&role&tool&thread&agent&since&until&q&page
                                   &include_archived     one project's turns
    GET  /api/history?q&role&include_archived            cross-project search (<= 200 hits)
    GET  /api/projects/<id>/history/export?session&include_archived   the envelope, streamed
    POST /api/projects/<id>/history/import               multipart: file, apply=true|false

Promises: the same answers as the CLI (both call `cli.services.archive_ops`); unknown, repeated or
invalid parameters are 400 {error}; an import is a dry run unless `apply=true`; a malformed
or oversized upload is refused (400/413) with nothing written. `/api/history` has no path
suffix, so the source-document route `/api/history/<id>` is untouched. An export is spooled
to a temporary file first, so a slow download never holds a read transaction open. All
routes sit behind the app's Guard like every other route.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from cli.services import archive_ops as ops
from cli.services.config import Home
from cli.services.errors import AgentlogError
from cli.web.api import BadRequest, bool_param, params

HISTORY_PARAMS = ("session", "role", "tool", "thread", "agent", "since", "until", "q", "page",
                  "include_archived")
THREADS = ("main", "all")
SEARCH_PARAMS = ("q", "role", "include_archived")
EXPORT_PARAMS = ("session", "include_archived")
IMPORT_PARAMS = ("apply",)


def _home(request: Request) -> Home:
    home: Home = request.app.state.home
    return home


def _page(value: str | None) -> int:
    if value is None:
        return 1
    if not value.isdigit() or len(value) > 6 or int(value) < 1:
        raise BadRequest(f"page: expected a positive integer, got {value!r}")
    return int(value)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _guarded(fn: Any) -> Any:
    def handle(request: Request) -> Response:
        try:
            result = fn(request)
        except AgentlogError as exc:
            return _error(exc.http_status, str(exc))
        return result if isinstance(result, Response) else JSONResponse(result)

    handle.__name__ = fn.__name__
    return handle


@_guarded
def projects(request: Request) -> dict[str, Any]:
    include = bool_param("include_archived", params(request, ("include_archived",))
                         .get("include_archived"))
    home = _home(request)
    return {"projects": ops.projects(home, include_archived=include),
            "hiddenArchivedSessions": 0 if include else ops.archived_sessions(home)}


@_guarded
def project_history(request: Request) -> dict[str, Any]:
    p = params(request, HISTORY_PARAMS)
    agent = p.get("agent") or None
    thread = p.get("thread") or None
    if agent is not None and (agent in THREADS or agent.startswith("@")):
        if thread is not None:
            raise BadRequest("agent: main/all/@NAME is the thread parameter now; use thread=")
        thread, agent = agent, None  # the old meaning of agent=, still accepted
    filters: dict[str, Any] = {
        "session": p.get("session") or None,
        "role": p.get("role") or None,
        "tool": p.get("tool") or None,
        "agent": thread or "all",
        "agent_name": agent,
        "since": p.get("since") or None,
        "until": p.get("until") or None,
        "text": p.get("q") or None,
        "include_archived": bool_param("include_archived", p.get("include_archived")),
    }
    return ops.history(_home(request), request.path_params["pid"], filters,
                       _page(p.get("page")))


@_guarded
def search(request: Request) -> dict[str, Any]:
    p = params(request, SEARCH_PARAMS)
    return ops.search(_home(request), p.get("q", ""), role=p.get("role") or None,
                      include_archived=bool_param("include_archived", p.get("include_archived")))


def _filename(project: str, session: str | None) -> str:
    from projections.archiver import safe_name

    name = safe_name(project) + (f"-{safe_name(session)}" if session else "")
    return f"{name}-history.json"


async def export(request: Request) -> Response:
    try:
        p = params(request, EXPORT_PARAMS)
        session = p.get("session") or None
        include = bool_param("include_archived", p.get("include_archived"))
    except BadRequest as exc:
        return _error(400, str(exc))
    pid = request.path_params["pid"]
    try:
        path, summary = await run_in_threadpool(
            ops.export_spooled, _home(request), pid, session=session, include_archived=include
        )
    except AgentlogError as exc:
        return _error(exc.http_status, str(exc))
    return StreamingResponse(
        ops.iter_file(path),
        media_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="{_filename(pid, session)}"',
            "Content-Length": str(summary["bytes"]),
            "X-Turn-Count": str(summary["turns"]),
        },
    )


async def import_(request: Request) -> Response:
    from projections.envelope import MAX_FILE_BYTES

    try:
        p = params(request, IMPORT_PARAMS)
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_FILE_BYTES + 64 * 1024:
            return _error(413, f"upload over the limit of {MAX_FILE_BYTES} bytes (256 MiB); "
                               "nothing imported")
        form = await request.form(max_files=1, max_fields=4, max_part_size=MAX_FILE_BYTES + 1)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise BadRequest("file: expected one uploaded file (multipart field 'file')")
        field = form.get("apply")
        apply = bool_param("apply", p.get("apply") if field is None else str(field))
        data = await upload.read(MAX_FILE_BYTES + 1)
        await form.close()
    except BadRequest as exc:
        return _error(400, str(exc))
    except Exception as exc:  # multipart parse errors (malformed body, limits)
        detail = getattr(exc, "detail", None) or str(exc)
        return _error(400, f"cannot read the upload: {detail}; nothing imported")
    if len(data) > MAX_FILE_BYTES:
        return _error(413, f"upload over the limit of {MAX_FILE_BYTES} bytes (256 MiB); "
                           "nothing imported")
    try:
        result = await run_in_threadpool(
            ops.import_envelope, _home(request), data, project=request.path_params["pid"],
            apply=apply, source=f"upload:{getattr(upload, 'filename', '') or '-'}",
        )
    except AgentlogError as exc:
        return _error(exc.http_status, str(exc))
    return JSONResponse(result)


ROUTES: list[BaseRoute] = [
    Route("/api/projects", projects, methods=["GET"]),
    Route("/api/history", search, methods=["GET"]),
    Route("/api/projects/{pid:path}/history/export", export, methods=["GET"]),
    Route("/api/projects/{pid:path}/history/import", import_, methods=["POST"]),
    Route("/api/projects/{pid:path}/history", project_history, methods=["GET"]),
]
