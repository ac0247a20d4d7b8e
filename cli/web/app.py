"""The Starlette application: routes gathered from a list of modules, behind one Guard.

To add routes, write a module with a module-level `ROUTES: list[BaseRoute]` and append its
name to `ROUTE_MODULES` (a module that does not exist yet is skipped). Handlers find the
home in `request.app.state.home`. Every route, present or future, sits behind `Guard`
(Host, Origin, token/cookie, security headers): there is no unguarded path.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from cli.services.config import Home
from cli.web.guard import Guard

ROUTE_MODULES = [
    "cli.web.api",
    "cli.web.history_routes",
    "cli.web.browse",
    "cli.web.page",
]


def gather_routes(modules: Iterable[str] = ROUTE_MODULES) -> list[BaseRoute]:
    routes: list[BaseRoute] = []
    for name in modules:
        routes.extend(importlib.import_module(name).ROUTES)
    return routes


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code)


async def _server_error(request: Request, exc: Exception) -> Response:
    from projections.errors import ProjectionDamaged

    if isinstance(exc, ProjectionDamaged):  # e.g. the history routes' catch-up
        from cli.services.calls import DAMAGED_HINT

        return JSONResponse({"error": f"{exc}: {DAMAGED_HINT}"}, status_code=503)
    return JSONResponse({"error": f"internal error: {type(exc).__name__}"}, status_code=500)


def create_app(
    home: Home,
    *,
    token: str,
    session: str,
    port: int,
    allowed_hosts: Iterable[str],
    any_host: bool = False,
) -> ASGIApp:
    """The guarded application for one server run.

    The Guard wraps the whole Starlette app (not just its routes), so even its own error
    responses pass through the Guard and carry the security headers.
    """
    app = Starlette(
        routes=gather_routes(),
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )
    app.state.home = home
    return Guard(
        app,
        token=token,
        session=session,
        cookie_name=f"agentlog_{port}",
        allowed_hosts=list(allowed_hosts),
        any_host=any_host,
    )
