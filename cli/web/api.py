"""The JSON API routes: search, source documents, conversations, decisions, runs, coverage.

Promises:
- Every query parameter may occur at most once; unknown, repeated or invalid parameters
  are 400 {"error": "..."}; unknown ids, topics and runs are 404 {"error": "..."}.
- Path parameters are ids handed to `projections.query`, never file paths: nothing here
  opens a file.
- `/api/search` answers exactly what the MCP tool `search_history` answers.
- Handlers are plain functions (run in the thread pool), since the query API is sync.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from cli.services import calls
from cli.services.config import Home
from cli.services.errors import AgentlogError, BadInput
from cli.services.search import many_searches_soon

SEARCH_PARAMS = ("q", *calls.FILTER_KEYS, "limit", "mode", "group", "answer")


class BadRequest(BadInput):
    """A parameter problem found before calling the query API."""


def params(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    """The query parameters as a dict, refusing unknown and repeated names."""
    out: dict[str, str] = {}
    for key, value in request.query_params.multi_items():
        if key not in allowed:
            raise BadRequest(f"unknown parameter {key!r} (allowed: {', '.join(allowed)})")
        if key in out:
            raise BadRequest(f"parameter {key!r} given more than once")
        out[key] = value
    return out


def _home(request: Request) -> Home:
    home: Home = request.app.state.home
    return home


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def endpoint(fn: Callable[[Request], dict[str, Any]]) -> Callable[[Request], JSONResponse]:
    """Wrap a handler: the tree's errors (`cli.services.errors`) become {error} with their
    HTTP status."""

    def handle(request: Request) -> JSONResponse:
        try:
            return JSONResponse(fn(request))
        except AgentlogError as exc:
            return error(exc.http_status, str(exc))

    handle.__name__ = fn.__name__
    return handle


def bool_param(name: str, value: str | None) -> bool:
    """A true/false query parameter (absent means false); anything else is a 400."""
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise BadRequest(f"{name}: expected true or false, got {value!r}")


def _offset(name: str, value: str | None) -> int:
    if value is None or value == "":
        return 0
    if not value.isdigit() or len(value) > 18:
        raise BadRequest(f"{name}: expected a byte offset (a non-negative integer)")
    return int(value)


@endpoint
def search(request: Request) -> dict[str, Any]:
    p = params(request, SEARCH_PARAMS)
    if "q" not in p:
        raise BadRequest("missing parameter 'q'")
    # An empty filter field (as a form sends it) means "no filter".
    filters = {k: p[k] for k in calls.FILTER_KEYS if p.get(k)}
    home = _home(request)
    found = calls.search(
        home,
        p["q"],
        filters or None,
        p.get("limit") or None,
        bool_param("answer", p.get("answer")),
        mode=p.get("mode") or None,
        group=p.get("group") or None,
    )
    many_searches_soon(home)  # (once: numpy's import, after this first answer)
    return found


@endpoint
def history(request: Request) -> dict[str, Any]:
    params(request, ())
    return calls.document(_home(request), request.path_params["hit_id"])


@endpoint
def conversation(request: Request) -> dict[str, Any]:
    p = params(request, ("after", "limit", "format"))
    fmt = p.get("format") or "text"
    if fmt not in ("text", "html"):
        raise BadRequest(f"format: expected text or html, got {fmt!r}")
    page = calls.conversation(
        _home(request), request.path_params["cid"], p.get("after") or None,
        p.get("limit") or None,
    )
    if fmt == "html":
        from cli.services.render import readable

        page["items"] = [readable(item) for item in page["items"]]
    return page


@endpoint
def decision(request: Request) -> dict[str, Any]:
    params(request, ())
    return calls.decision_history(_home(request), request.path_params["topic"])


@endpoint
def run(request: Request) -> dict[str, Any]:
    p = params(request, ("from",))
    return calls.run_log(_home(request), request.path_params["basename"],
                         _offset("from", p.get("from")))


@endpoint
def coverage(request: Request) -> dict[str, Any]:
    params(request, ())
    return {"coverage": calls.coverage(_home(request))}


ROUTES: list[BaseRoute] = [
    Route("/api/search", search, methods=["GET"]),
    Route("/api/history/{hit_id:path}", history, methods=["GET"]),
    Route("/api/conversations/{cid:path}", conversation, methods=["GET"]),
    Route("/api/decisions/{topic:path}/history", decision, methods=["GET"]),
    Route("/api/runs/{basename}", run, methods=["GET"]),
    Route("/api/coverage", coverage, methods=["GET"]),
]
