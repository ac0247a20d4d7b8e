"""After `agentlog archive`, MCP, HTTP and CLI searches still find archived sessions (each hit
says `archived`); the history pages hide them and say how many they hide."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from starlette.testclient import TestClient

from cli.services.config import Home
from cli.web.app import create_app
from cli.web.guard import loopback_hosts
from tests.archive_fixtures import home_at, import_turns, rich_project
from tests.conftest import ROOT, run_cli

PORT = 8131
TOKEN = "t" * 43


@pytest.fixture
def archived(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    import_turns(home_at(home), "proj-a", rich_project())
    r = run_cli(home, "archive", "--now", "2027-01-01T00:00:00Z", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["archived"] == 3, r.stderr
    return home


def test_cli_search_finds_archived_sessions(archived: Path) -> None:
    r = run_cli(archived, "search", "settings", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert hits and all(h["archived"] is True for h in hits)
    assert any(h["session"] == "s1" for h in hits)
    hot = json.loads(run_cli(archived, "search", "settings", "--exclude-archived",
                             "--json").stdout)
    assert hot["hits"] == []
    human = run_cli(archived, "search", "settings").stdout.decode()
    assert "archived" in human
    # the history views keep hiding them, and say so
    r = run_cli(archived, "history", "settings")
    assert b"1 archived session hidden; --include-archived shows them" in r.stderr
    page = json.loads(run_cli(archived, "history", "--project", "proj-a", "--json").stdout)
    assert page["turns"] == [] and page["hiddenArchivedSessions"] == 3
    listing = json.loads(run_cli(archived, "history", "--json").stdout)
    assert listing == {"projects": [], "hiddenArchivedSessions": 3}
    shown = json.loads(run_cli(archived, "history", "--include-archived", "--json").stdout)
    assert [p["project"] for p in shown["projects"]] == ["proj-a"]


def test_http_search_finds_archived_sessions(archived: Path) -> None:
    app = create_app(Home(archived), token=TOKEN, session="s" * 43, port=PORT,
                     allowed_hosts=loopback_hosts(PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    body = c.get("/api/search", params={"q": "rollback"}).json()
    assert body["hits"] and all(h["archived"] is True for h in body["hits"])
    cross = c.get("/api/history", params={"q": "settings"}).json()
    assert cross["hits"] == [] and cross["hiddenArchivedSessions"] == 1
    cross = c.get("/api/history", params={"q": "settings", "include_archived": "true"}).json()
    assert cross["hits"] and cross["hiddenArchivedSessions"] == 0
    page = c.get("/api/projects/proj-a/history").json()
    assert page["turns"] == [] and page["hiddenArchivedSessions"] == 3
    projects = c.get("/api/projects").json()
    assert projects == {"projects": [], "hiddenArchivedSessions": 3}
    projects = c.get("/api/projects", params={"include_archived": "true"}).json()
    assert [p["project"] for p in projects["projects"]] == ["proj-a"]
    assert c.get("/api/projects", params={"include_archived": "maybe"}).status_code == 400


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_search_finds_archived_sessions(archived: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(archived), "mcp"],
        cwd=str(ROOT))
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        res = await client.call_tool("search_history", {"query": "settings screen",
                                                        "detail": "full"})
        assert not res.is_error
        hits = res.structured_content["hits"]  # type: ignore[index]
        assert hits and all(h["archived"] is True for h in hits)
        res = await client.call_tool("search_history", {"query": "settings screen"})
        lines = [x for x in res.content[0].text.splitlines() if x.startswith("@")]  # type: ignore[union-attr]
        assert len(lines) == len(hits) and all("(archived)" in x for x in lines)
