"""HTTP routes of the session browser: a project's sessions, one session, resume commands.

    GET /api/projects/<id>/sessions?include_archived     sessions, newest activity first
    GET /api/sessions/<agent>/<session>                  one session: conversation, subagents

Promises: read history.db as it is (like the conversation route); every session carries
`resume`, the command that reopens it in its agent (`argv` and a shell-quoted `command`),
or null when its agent has none; unknown or repeated parameters are 400, an unknown session
is 404. The resume commands come from `cli.services.resume` (the registry's templates),
the one source the terminal and MCP use too.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from cli.services import calls
from cli.services.errors import NotFound
from cli.services.resume import resume
from cli.web.api import _home, bool_param, endpoint, params


@endpoint
def project_sessions(request: Request) -> dict[str, Any]:
    from projections.sessions import sessions_of

    p = params(request, ("include_archived",))
    result: dict[str, Any] = calls._call(
        sessions_of, _home(request).history_db, request.path_params["pid"],
        include_archived=bool_param("include_archived", p.get("include_archived")))
    for s in result["sessions"]:
        s["resume"] = resume(s["agent"], s["sessionId"])
    return result


@endpoint
def session(request: Request) -> dict[str, Any]:
    from projections.sessions import session_info

    params(request, ())
    agent, sid = request.path_params["agent"], request.path_params["session"]
    found = calls._call(session_info, _home(request).history_db, agent, sid)
    if found is None:
        raise NotFound(f"no session {sid!r} of agent {agent!r}")
    info: dict[str, Any] = found
    info["resume"] = resume(agent, sid)
    return info


ROUTES: list[BaseRoute] = [
    Route("/api/projects/{pid:path}/sessions", project_sessions, methods=["GET"]),
    Route("/api/sessions/{agent}/{session:path}", session, methods=["GET"]),
]
