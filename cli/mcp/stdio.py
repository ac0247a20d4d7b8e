"""The MCP stdio transport with a guard in front of the SDK's reader: every request answered.

The SDK's `stdio_server` drops a line it cannot parse (not JSON, not a JSON-RPC message,
nested too deeply for its validator, a lone surrogate such as `\\ud800`), so the client
waits forever. Promises:
- each line from stdin is checked before the SDK sees it: valid JSON (else JSON-RPC
  `-32700` parse error, id null), at most `MAX_DEPTH` levels deep, no lone surrogate in any
  string, and a valid JSON-RPC message (else `-32600` invalid request, or `-32602` invalid
  params, carrying the request's id when it has a usable one; an `id` that is not a string
  or an integer — an object, an array, a fraction, a boolean, null — is `-32600` with id
  null: the SDK would take such a line for a notification and never answer); a good line
  is passed on unchanged, so the SDK still parses and answers it;
- replies from the guard and from the SDK go through one lock, a whole line at a time;
- like the SDK, fd 0 and fd 1 are diverted while serving (to /dev/null and stderr), so
  stray output of handlers and children never reaches the protocol channel; both are
  restored on exit. The SDK itself is unchanged and still does all the protocol work.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server

MAX_DEPTH = 64  # nesting of one message; tool arguments need a handful of levels
MAX_LINE = 16 << 20


def problem(line: str) -> tuple[Any, int, str] | None:
    """(id, JSON-RPC error code, message) when `line` must be answered by the guard."""
    if len(line) > MAX_LINE:
        return None, -32600, f"message longer than {MAX_LINE} bytes"
    try:
        obj = json.loads(line)
    except RecursionError:
        return _top_level_id(line), -32600, f"message nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return None, -32700, f"parse error: {str(exc)[:200]}"
    rid = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, str | int) or (
            isinstance(rid, str) and _bad_text(rid)):
        rid = None
    depth, surrogate = _scan(obj)
    if depth > MAX_DEPTH:
        return rid, -32600, f"message nested deeper than {MAX_DEPTH} levels"
    if surrogate:
        return rid, -32602, "invalid params: a string holds a lone surrogate (not UTF-8 text)"
    if isinstance(obj, dict) and "id" in obj and rid is None:
        return None, -32600, "invalid request: id must be a string or an integer"
    try:
        types.jsonrpc_message_adapter.validate_python(obj, by_name=False)
    except Exception as exc:  # pydantic's ValidationError and anything its validators raise
        return rid, -32600, f"invalid request: {type(exc).__name__}"
    return None


def _top_level_id(line: str) -> Any:
    """The `id` of a JSON object too deep for `json.loads` (scanned, not parsed)."""
    depth, i, n = 0, 0, len(line)
    while i < n:
        c = line[i]
        if c == '"':
            try:
                key, end = json.JSONDecoder().raw_decode(line, i)
            except ValueError:
                return None
            rest = line[end:end + 64].lstrip()
            if depth == 1 and key == "id" and rest.startswith(":"):
                start = end + line[end:].index(":") + 1
                while start < n and line[start] in " \t\r\n":
                    start += 1
                try:
                    rid = json.JSONDecoder().raw_decode(line, start)[0]
                except (ValueError, RecursionError):
                    return None
                ok = isinstance(rid, str | int) and not isinstance(rid, bool)
                return rid if ok and not (isinstance(rid, str) and _bad_text(rid)) else None
            i = end
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return None


def _bad_text(s: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def _scan(obj: Any) -> tuple[int, bool]:
    """(nesting depth, whether any key or string holds a lone surrogate), iteratively."""
    deepest, surrogate = 0, False
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        cur, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        if isinstance(cur, str):
            surrogate = surrogate or _bad_text(cur)
        elif isinstance(cur, dict):
            surrogate = surrogate or any(_bad_text(k) for k in cur)
            stack.extend((v, depth + 1) for v in cur.values())
        elif isinstance(cur, list):
            stack.extend((v, depth + 1) for v in cur)
    return deepest, surrogate


def error_line(rid: Any, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


class _Out:
    """stdout for the SDK and the guard: one lock, whole lines, flushed."""

    def __init__(self, f: Any) -> None:
        self._f = anyio.wrap_file(f)
        self._lock = anyio.Lock()
        self._pending = ""

    async def write(self, text: str) -> None:
        self._pending += text
        if self._pending.endswith("\n"):
            line, self._pending = self._pending, ""
            async with self._lock:
                await self._f.write(line)
                await self._f.flush()

    async def flush(self) -> None:
        return None


class _In:
    """stdin lines the guard let through (it answers the others itself)."""

    def __init__(self, f: Any, out: _Out) -> None:
        self._f = anyio.wrap_file(f)
        self._out = out

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._f:
            if not line.strip():
                continue
            bad = problem(line)
            if bad is None:
                yield line
            else:
                await self._out.write(error_line(*bad) + "\n")


@contextlib.asynccontextmanager
async def guarded_stdio() -> AsyncIterator[Any]:
    """`stdio_server()` of the SDK, fed through the guard (see the module promises)."""
    import sys

    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    fin = open(wire_in, encoding="utf-8", errors="surrogateescape", closefd=False)  # noqa: SIM115
    fout = open(wire_out, "w", encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                closefd=False)
    out = _Out(fout)
    try:
        async with stdio_server(stdin=_In(fin, out), stdout=out) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        with contextlib.suppress(OSError):
            fout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
