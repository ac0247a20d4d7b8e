"""`agentlog mcp` over real stdio with the MCP SDK's own client.

Each test spawns `python -m cli.main --home <tmp> mcp`, as Claude Code, Codex and opencode
would spawn `agentlog mcp`. Real clients speak the handshake era today (mode="legacy");
one test also checks the SDK's default (auto) negotiation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT
from tests.webdata import make_history

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def spawn(home: Path, mode: str = "legacy") -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(home), "mcp"],
        cwd=str(ROOT),
    )
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]
               ) -> tuple[dict[str, Any] | None, str]:
    """(structured content, text block) of a successful call: compact (the default) is the
    text alone, `detail: "full"` the seed's shape beside it."""
    res = await client.call_tool(tool, args)
    assert not res.is_error, res.content[0].text  # type: ignore[union-attr]
    text: str = res.content[0].text  # type: ignore[union-attr]
    # a readable text for every client, not a JSON copy
    assert text and not text.startswith("{")
    if args.get("detail") == "full":
        assert isinstance(res.structured_content, dict)
    else:  # a client reading both blocks would pay for every hit twice
        assert res.structured_content is None
    return res.structured_content, text


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The full (seed-shaped) structured answer."""
    found = (await call(client, tool, {"detail": "full", **args}))[0]
    assert found is not None
    return found


async def tool_error(client: Client, tool: str, args: dict[str, Any]) -> str:
    res = await client.call_tool(tool, args)
    assert res.is_error, res.structured_content
    text: str = res.content[0].text  # type: ignore[union-attr]
    return text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tool_listing(home: Path, mode: str) -> None:
    async with spawn(home, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"search_history", "get_conversation"}
    listing = json.dumps({n: t.model_dump(mode="json") for n, t in tools.items()})
    assert "$ref" not in listing and "anyOf" not in listing and "$defs" not in listing
    assert '"null"' not in listing
    search = tools["search_history"].input_schema
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {"query", "filters", "limit", "mode", "group", "answer",
                                         "detail"}
    assert set(search["properties"]["filters"]["properties"]) == {
        "project", "session", "job", "agent", "kind", "since", "until"}
    assert search["properties"]["limit"]["maximum"] == 50
    conv = tools["get_conversation"].input_schema
    assert conv["required"] == ["id"] and set(conv["properties"]) == {
        "id", "after", "limit", "maxChars", "toolOutput", "detail"}
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint
    # what every session pays for the two tools (bench/tokens.py counts tokens: <= 450)
    advertised = [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                  for t in tools.values()]
    assert len(json.dumps(advertised, separators=(",", ":"))) < 2000  # main: 2,700


async def test_bad_arguments_are_tool_errors(home: Path) -> None:
    async with spawn(home) as client:
        assert "unknown argument 'bogus'" in await tool_error(
            client, "search_history", {"query": "x", "bogus": 1})
        assert "query" in await tool_error(client, "search_history", {})
        assert "query" in await tool_error(client, "search_history", {"query": 5})
        assert "filters" in await tool_error(
            client, "search_history", {"query": "x", "filters": "agent=codex"})
        assert "unknown argument 'color'" in await tool_error(
            client, "search_history", {"query": "x", "filters": {"color": "red"}})
        assert "limit" in await tool_error(
            client, "search_history", {"query": "x", "limit": "many"})
        assert "limit" in await tool_error(
            client, "search_history", {"query": "x", "limit": 1.5})
        assert "answer" in await tool_error(
            client, "search_history", {"query": "x", "answer": "yes"})
        assert "filters.since" in await tool_error(
            client, "search_history", {"query": "x", "filters": {"since": True}})
        assert "id" in await tool_error(client, "get_conversation", {})
        assert "unknown tool" in await tool_error(client, "drop_tables", {})
        # as on the terminal (`agentlog search '!!!'` exits 2): no word is an error, not 0 hits
        assert "no searchable word" in await tool_error(
            client, "search_history", {"query": "!!! ..."})
        # The server is still alive after all of that.
        assert len((await client.list_tools()).tools) == 2


async def test_search_and_filters(home: Path) -> None:
    make_history(home)
    async with spawn(home) as client:
        res = await ok(client, "search_history", {"query": "quokka"})
        assert res["engine"] == "fts5"
        ids = {h["id"] for h in res["hits"]}
        assert {"message:m1", "message:m2", "message:m3"} <= ids
        # compact by default: the text alone, a line a hit: its short reference, time,
        # role and snippet, under a header naming agent, project and session; each
        # reference opens its own hit's conversation
        _, text = await call(client, "search_history", {"query": "quokka"})
        lines = text.splitlines()
        refs = [x.split()[0] for x in lines if x.startswith("@")]
        assert len(refs) == len(res["hits"]) and "message:m1" not in text
        opened: set[str] = set()
        for r in refs:
            page = await ok(client, "get_conversation", {"id": r, "limit": 3})
            opened |= {i["id"] for i in page["items"]} & ids
        assert opened == ids
        for hit in res["hits"]:
            assert any(hit["snippet"][:60] in x for x in lines)
            if hit.get("session"):
                assert any(x.endswith(f"session {hit['session']}") for x in lines)
        assert "/api/history" not in text
        # detail: full is the seed's shape, links and every field
        hit = next(h for h in res["hits"] if h["id"] == "message:m1")
        for key in ("id", "kind", "agent", "at", "snippet", "link", "sourceLink", "message",
                    "job", "run", "session", "cursor", "conversation", "project", "archived"):
            assert key in hit
        assert len(hit["snippet"]) <= 320 and hit["link"] == "/?message=m1"
        assert "events" in res["coverage"] and "caughtUp" in res["coverage"]
        assert "detail" in await tool_error(
            client, "search_history", {"query": "x", "detail": "everything"})

        async def ids_for(filters: dict[str, Any], query: str = "quokka") -> set[str]:
            found = await ok(client, "search_history", {"query": query, "filters": filters})
            return {h["id"] for h in found["hits"]}

        assert await ids_for({"project": "/p/alpha"}) == {"message:m1"}
        assert "message:m1" not in await ids_for({"project": "/p/beta"})
        assert await ids_for({"job": "job-b"}) == {"message:m2", "message:m3"}
        assert await ids_for({"session": "sess-a"}) >= {"message:m1"}
        assert "message:m2" not in await ids_for({"session": "sess-a"})
        assert await ids_for({"kind": "progress"}) == {"message:m3"}
        assert await ids_for({"kind": "report"}) == {"message:m2"}
        decisions = await ids_for({"kind": "decision"})
        assert decisions and all(i.startswith("decision:") for i in decisions)
        assert all(i.startswith("run:") for i in await ids_for({"kind": "run"}))
        assert "message:m1" not in await ids_for({"agent": "codex"})
        assert "message:m2" not in await ids_for({"agent": "claude"})
        assert await ids_for({"since": "2026-03-02T00:00:00Z", "until": "2026-03-03T23:00:00Z",
                              "kind": "report"}) == {"message:m2"}
        since_ms = 1772409600000  # 2026-03-02T00:00:00Z
        assert "message:m1" not in await ids_for({"since": since_ms})
        assert await ids_for({"until": since_ms, "kind": "message"}) == {"message:m1"}
        limited = await ok(client, "search_history", {"query": "quokka", "limit": 2})
        assert len(limited["hits"]) == 2
        # Bad values are judged by the query API and come back as tool errors.
        assert "limit" in await tool_error(client, "search_history", {"query": "x", "limit": 0})
        assert "limit" in await tool_error(client, "search_history", {"query": "x", "limit": 51})
        assert "agent" in await tool_error(
            client, "search_history", {"query": "x", "filters": {"agent": "gpt"}})
        assert "kind" in await tool_error(
            client, "search_history", {"query": "x", "filters": {"kind": "email"}})
        assert "since" in await tool_error(
            client, "search_history", {"query": "x", "filters": {"since": "last tuesday"}})
        assert "query" in await tool_error(client, "search_history", {"query": "   "})
        assert "query" in await tool_error(client, "search_history", {"query": "q" * 1001})
        # answer: true with no usable agent CLI (conftest's failing stubs): the hits stay, the
        # answer is an error with no text, citing nothing it did not read. The exact answer
        # from a working CLI is test_answers_e2e.py::test_mcp_search_answer.
        res = await ok(client, "search_history", {"query": "quokka", "answer": True, "limit": 3})
        answer = res["answer"]
        assert len(res["hits"]) == 3
        assert answer["text"] == "" and answer["agent"] is None and answer["model"] is None
        assert answer["error"].startswith("no answer provider available (codex: "), answer
        assert "claude: " in answer["error"] and "opencode: " in answer["error"]
        assert [s["id"] for s in answer["sources"]] == [h["id"] for h in res["hits"]]


async def test_get_conversation_pages(home: Path) -> None:
    make_history(home)
    async with spawn(home) as client:
        res = await ok(client, "search_history", {"query": "wombat", "limit": 1})
        # a hit's id opens its conversation (the full answer names it)
        conv = (await ok(client, "get_conversation", {"id": res["hits"][0]["id"]}))["id"]
        assert conv == "thread:t1"
        seen: list[Any] = []
        after = None
        for _ in range(10):
            args: dict[str, Any] = {"id": conv, "limit": 10}
            if after:
                args["after"] = after
            page = await ok(client, "get_conversation", args)
            assert page["id"] == conv and len(page["items"]) <= 10
            seen.extend(page["items"])
            after = page["next"]
            if not after:
                break
        assert len(seen) == 27  # m1, m2 and 25 replies
        assert "not found" in await tool_error(client, "get_conversation", {"id": "thread:nope"})
        assert await tool_error(client, "get_conversation", {"id": conv, "after": "garbage!!"})
        assert "limit" in await tool_error(client, "get_conversation", {"id": conv, "limit": -3})
        assert "maxChars" in await tool_error(
            client, "get_conversation", {"id": conv, "maxChars": 5})
        assert "toolOutput" in await tool_error(
            client, "get_conversation", {"id": conv, "toolOutput": "yes"})
        # compact: the text alone, a line an item, no links
        _, text = await call(client, "get_conversation", {"id": conv, "limit": 5})
        full = await ok(client, "get_conversation", {"id": conv, "limit": 5})
        assert all("sourceLink" in item and "id" in item for item in full["items"])
        for item in full["items"]:
            assert item["text"].split("\n")[0][:40] in text
        assert "/api/history" not in text and f"after={full['next']}" in text
        # a hit's short reference opens its conversation just before the hit
        _, text = await call(client, "search_history", {"query": "reply 17"})
        ref = next(x.split()[0] for x in text.splitlines()
                   if x.startswith("@") and "reply 17" in x)
        page = await ok(client, "get_conversation", {"id": ref, "limit": 4})
        assert page["id"] == conv
        assert [i["text"][:8] for i in page["items"]] == [
            "reply 15", "reply 16", "reply 17", "reply 18"]
        nxt = await ok(client, "get_conversation", {"id": ref, "after": page["next"]})
        assert nxt["items"][0]["text"].startswith("reply 19")
        # a reference whose row now holds another document (history.db renumbered) is
        # refused, never followed to that document; a row that is gone too
        row, check = ref[1:].split(".")
        other = f"@{row}.{(int(check, 16) + 1) % 4096:03x}"
        assert "search again" in await tool_error(client, "get_conversation", {"id": other})
        assert "search again" in await tool_error(client, "get_conversation",
                                                  {"id": f"@99999999.{check}"})
        cut = await ok(client, "get_conversation", {"id": conv, "limit": 5, "maxChars": 40})
        assert all(len(item["text"]) <= 40 for item in cut["items"])


def test_startup_is_light(home: Path) -> None:
    """Importing the command modules does not import the MCP SDK or the web stack."""
    code = ("import sys, cli.main, cli.mcp.command, cli.web.command; "
            "print(sorted(m for m in ('mcp', 'starlette', 'uvicorn', 'projections.query')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_missing_index_is_not_built_by_a_search(home: Path) -> None:
    make_history(home)
    (home / "history.db").unlink()  # a log without its projection
    async with spawn(home) as client:  # start-up time: bench/mcp.py, not a timed test
        await client.list_tools()
        # A search on a missing index answers empty; it does not build one.
        res = await ok(client, "search_history", {"query": "quokka"})
        assert res["hits"] == []
    assert not (home / "history.db").exists()
