"""The dashboard page and its static files, from a fixed table.

Promise: only the files named in `FILES` are ever served; a request for any other name is
404, so no path from a URL reaches the file system. `reader.css` is not a file here: it is
`cli.services.render.stylesheet()`, the reader's one stylesheet, which the readable export
inlines too.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

STATIC = Path(__file__).resolve().parent / "static"
FILES: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "history.js": "text/javascript; charset=utf-8",
    "reader.js": "text/javascript; charset=utf-8",
    "browse.js": "text/javascript; charset=utf-8",
}


def _file(name: str) -> Response:
    if name == "reader.css":
        from cli.services.render import stylesheet

        return Response(stylesheet(), media_type="text/css; charset=utf-8")
    media = FILES.get(name)
    if media is None:
        return JSONResponse({"error": "not found"}, status_code=404)
    return Response((STATIC / name).read_bytes(), media_type=media)


def index(request: Request) -> Response:
    """The page, with the agent filter's choices from the reader registry."""
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    return Response(page.replace(AGENT_SLOT, agent_options()), media_type=FILES["index.html"])


AGENT_SLOT = "<!--AGENT-OPTIONS-->"


def agent_options() -> str:
    """One <option> per searchable agent (value = the `agent` filter value, text = label)."""
    from html import escape

    from readers import registry

    labels = registry.labels()
    return "".join(
        f'<option value="{escape(name)}">{escape(labels.get(name, name))}</option>'
        for name in registry.search_agents()
    )


def static(request: Request) -> Response:
    return _file(request.path_params["name"])


ROUTES: list[BaseRoute] = [
    Route("/", index, methods=["GET"]),
    Route("/static/{name}", static, methods=["GET"]),
]
