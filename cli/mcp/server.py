"""The MCP stdio server: `search_history` and `get_conversation` over the query API.

Promises:
- The advertised input schemas are written by hand and fully inlined: no `$ref`, no
  `anyOf`, no `null` types, so Claude Code, Codex and opencode all accept them.
- Every result is a short readable text (`cli/mcp/compact.py`); with `detail: "full"`
  the seed's shape beside it as `structuredContent`. The default (compact) answer has no
  structured content: a client reading both would pay for each hit twice.
- A bad argument, an unknown id or an internal failure is a tool error (`isError`), never
  a crash of the server. Transcript text is never logged.
- Start-up does no index work; the MCP SDK is imported only when this module is. The
  capture loop (cli/services/capture/loop.py) starts in a thread after `initialize`, never before.
- Nothing is printed to stdout: it is the protocol channel.
- Every request is answered, a malformed one with a JSON-RPC error (`cli/mcp/stdio.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from cli import VERSION
from cli.mcp.compact import conversation_answer, search_answer
from cli.mcp.stdio import guarded_stdio
from cli.services import calls
from cli.services.config import Home
from cli.services.errors import AgentlogError, BadInput
from cli.services.search import many_searches_soon

log = logging.getLogger("agentlog.mcp")

# readOnlyHint alone says it: destructive/idempotent hints apply only to tools that write
_READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

_TEXT = {"type": "string"}
_TIME = {"type": ["string", "integer"]}
DETAILS = ("compact", "full")
_DETAIL = {"type": "string", "enum": list(DETAILS), "default": "compact",
           "description": "full: every field and link."}
SNIPPET_CHARS = 130  # a compact hit's snippet (full: 320)
MAX_CHARS = 300  # a conversation item's text by default (maxChars; full: 16,000)
MAX_ITEM_CHARS = 16_000  # projections.query.MAX_ITEM_CHARS, the most an item holds

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Words, all must match (no operators).",
        },
        "filters": {
            "type": "object",
            "description": "since/until: epoch ms or ISO-8601.",
            "properties": {
                "project": _TEXT,
                "session": _TEXT,
                "job": _TEXT,
                "agent": {"type": "string", "enum": list(calls.AGENTS)},
                "kind": {"type": "string", "enum": list(calls.KINDS)},
                "since": _TIME,
                "until": _TIME,
            },
            "additionalProperties": False,
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "mode": {"type": "string", "enum": ["words", "meaning", "hybrid"]},
        "group": {"type": "string", "enum": ["conversation"]},  # one hit a conversation
        "answer": {
            "type": "boolean",
            "default": False,
            "description": "Answer with a cheap model (costs tokens).",
        },
        "detail": _DETAIL,
    },
    "required": ["query"],
    "additionalProperties": False,
}

CONVERSATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "A hit's id or session."},
        "after": {"type": "string"},  # the previous page's `next`
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        "maxChars": {"type": "integer", "minimum": 40, "maximum": MAX_ITEM_CHARS,
                     "default": MAX_CHARS},  # text per item
        "toolOutput": {"type": "boolean", "default": False,
                       "description": "Show tool output."},
        "detail": {k: v for k, v in _DETAIL.items() if k != "description"},
    },
    "required": ["id"],
    "additionalProperties": False,
}

TOOLS = [
    types.Tool(
        name="search_history",
        description=(
            "Search past coding-agent sessions, messages, decisions and run logs."
        ),
        input_schema=SEARCH_SCHEMA,
        annotations=_READ_ONLY,
    ),
    types.Tool(
        name="get_conversation",
        description="Read a conversation page by page, oldest first.",
        input_schema=CONVERSATION_SCHEMA,
        annotations=_READ_ONLY,
    ),
]


class ArgumentProblem(BadInput):
    """The tool arguments do not have the advertised shape."""


def _check_keys(obj: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise ArgumentProblem(f"{where}unknown argument {key!r}")


def _integer(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentProblem(f"{name}: expected an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ArgumentProblem(f"{name}: expected an integer")
        return int(value)
    return value


def search_args(args: dict[str, Any]) -> dict[str, Any]:
    """Check `search_history` arguments for shape; values are the query API's to judge."""
    _check_keys(args, ("query", "filters", "limit", "mode", "group", "answer", "detail"), "")
    query = args.get("query")
    if not isinstance(query, str):
        raise ArgumentProblem("query: expected a string")
    filters = args.get("filters")
    if filters is not None:
        if not isinstance(filters, dict):
            raise ArgumentProblem("filters: expected an object")
        _check_keys(filters, calls.FILTER_KEYS, "filters: ")
        for key, value in filters.items():
            if value is None:
                continue
            if key in ("since", "until"):
                if isinstance(value, bool) or not isinstance(value, int | float | str):
                    raise ArgumentProblem(f"filters.{key}: expected epoch ms or ISO-8601")
            elif not isinstance(value, str):
                raise ArgumentProblem(f"filters.{key}: expected a string")
    answer = args.get("answer", False)
    if answer is None:
        answer = False
    if not isinstance(answer, bool):
        raise ArgumentProblem("answer: expected true or false")
    mode = args.get("mode")
    if mode is not None and not isinstance(mode, str):
        raise ArgumentProblem("mode: expected a string")
    group = args.get("group")
    if group is not None and not isinstance(group, str):
        raise ArgumentProblem("group: expected a string")
    found = {
        "query": query,
        "filters": filters,
        "limit": _integer(args.get("limit"), "limit"),
        "mode": mode,
        "answer": answer,
    }
    if group is not None:
        found["group"] = group
    return found


def _detail(args: dict[str, Any]) -> str:
    detail = args.get("detail")
    if detail is None:
        return "compact"
    if detail not in DETAILS:
        raise ArgumentProblem(f"detail: must be one of {', '.join(DETAILS)}; got {detail!r}")
    return str(detail)


def _tool_output(args: dict[str, Any], full: bool) -> bool:
    value = args.get("toolOutput")
    if value is None:
        return full  # detail: full is the seed's page: nothing folded
    if not isinstance(value, bool):
        raise ArgumentProblem("toolOutput: expected true or false")
    return value


def _max_chars(args: dict[str, Any], full: bool) -> int:
    value = _integer(args.get("maxChars"), "maxChars")
    if value is None:
        return MAX_ITEM_CHARS if full else MAX_CHARS
    if not 40 <= value <= MAX_ITEM_CHARS:
        raise ArgumentProblem(f"maxChars: must be an integer 40..{MAX_ITEM_CHARS}; got {value}")
    return value


def conversation_args(args: dict[str, Any]) -> dict[str, Any]:
    _check_keys(args, ("id", "after", "limit", "maxChars", "toolOutput", "detail"), "")
    cid = args.get("id")
    if not isinstance(cid, str) or not cid:
        raise ArgumentProblem("id: expected a non-empty string")
    after = args.get("after")
    if after is not None and not isinstance(after, str):
        raise ArgumentProblem("after: expected a string")
    return {"conversation_id": cid, "after": after, "limit": _integer(args.get("limit"), "limit")}


def call_tool(home: Home, name: str, args: dict[str, Any]
              ) -> tuple[dict[str, Any] | None, str]:
    """Run one tool call: (structured content, text block) (`cli.mcp.compact`); raises an
    `AgentlogError` for anything the caller should be told."""
    if name == "search_history":
        found = search_args(args)
        detail = _detail(args)
        compact = detail == "compact"
        result = calls.search(home, **found, snippet_chars=SNIPPET_CHARS if compact else None,
                              role=compact, ref=compact)
        return search_answer(result, found["query"], detail)
    if name == "get_conversation":
        detail = _detail(args)
        full = detail == "full"
        max_chars, tool_output = _max_chars(args, full), _tool_output(args, full)
        page = calls.conversation(home, **conversation_args(args))
        return conversation_answer(page, detail, max_chars, tool_output)
    raise ArgumentProblem(f"unknown tool {name!r}")


def _result(answer: tuple[dict[str, Any] | None, str]) -> types.CallToolResult:
    obj, text = answer
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=obj
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def team_tools() -> list[types.Tool]:
    """With `--postgres`: search_history also takes `filters.host` (hits carry `host`)."""
    import copy

    schema = copy.deepcopy(SEARCH_SCHEMA)
    schema["properties"]["filters"]["properties"]["host"] = {
        **_TEXT, "description": "Only this machine's history (a hit's `host`)."}
    return [TOOLS[0].model_copy(update={"input_schema": schema}), *TOOLS[1:]]


def build_server(home: Home, started: Callable[[], None] | None = None) -> Server[Any]:
    """The server; `started` is called once the client is talking to it (after
    `initialize`, or at its first request in the handshake-less era)."""
    tools = TOOLS if home.postgres is None else team_tools()
    once: list[Callable[[], None]] = [started] if started is not None else []

    def begin() -> None:
        if once:
            once.pop()()

    async def on_initialized(ctx: Any, params: types.NotificationParams) -> None:
        begin()

    async def on_list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        begin()
        many_searches_soon(home)  # a client lists the tools once, long before it searches
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        begin()
        args = params.arguments or {}
        try:
            # In a worker thread: a long call (answer: true) must not stall pings.
            result = await anyio.to_thread.run_sync(call_tool, home, params.name, dict(args))
            if params.name == "search_history":
                many_searches_soon(home)  # (once: numpy's import, after this first answer)
            return _result(result)
        except AgentlogError as exc:
            return _error(str(exc))
        except Exception as exc:  # a tool failure must not end the session
            log.warning("tool %s failed: %s", params.name, type(exc).__name__)
            return _error(f"internal error in {params.name}: {type(exc).__name__}")

    server: Server[Any] = Server(
        "agentlog",
        version=VERSION,
        instructions=(
            "Search the user's past AI coding agent sessions with search_history; "
            "read more context with get_conversation."
        ),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams,
                                    on_initialized)
    return server


def serve_stdio(home: Home, *, capture: bool = True) -> None:
    """Serve MCP on stdin/stdout until the client closes the pipe.

    With `capture`, the home's capture loop (cli/services/capture/loop.py) starts in a thread once
    the client has initialized: this process captures if it wins the election, else it
    only reads and stands by to take over."""
    logging.basicConfig(level=logging.WARNING, format="agentlog mcp: %(message)s")
    loops: list[Any] = []

    def start_capture() -> None:
        from cli.services.capture.loop import CaptureLoop

        loops.append(CaptureLoop(home).start())

    server = build_server(home, start_capture if capture else None)

    async def run() -> None:
        # the SDK's transport behind a guard that answers every line (cli/mcp/stdio.py)
        async with guarded_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        for loop in loops:
            loop.stop()
