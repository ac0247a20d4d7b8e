"""`mcp --postgres` (real SDK client over stdio) and `serve --postgres` (real HTTP server)
answer from the team server with the same shapes plus `host`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT, run_cli
from tests.pgserver import PASSWORD
from tests.test_http_server import start_server, stop
from tests.test_team_cli import MESSAGES

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def team_home(home: Path, pg_url: str) -> tuple[Path, str]:
    assert run_cli(home, "record", input=MESSAGES.encode()).returncode == 0
    (home / "config.json").write_text(json.dumps({"team": {"postgres": pg_url}}))
    done = run_cli(home, "sync")
    assert done.returncode == 0, done.stderr.decode()
    host = run_cli(home, "team", "host").stdout.decode().strip()
    return home, host


async def test_mcp_answers_from_postgres(team_home: tuple[Path, str]) -> None:
    home, host = team_home
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli.main", "--home", str(home), "mcp", "--postgres", "config"],
        cwd=str(ROOT))
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        tools = await client.list_tools()
        schema = tools.tools[0].input_schema
        assert "host" in schema["properties"]["filters"]["properties"]
        res = await client.call_tool("search_history", {"query": "quokka", "detail": "full",
                                                        "filters": {"host": host}})
        assert not res.is_error, res.content
        out = res.structured_content
        assert out is not None and out["engine"] == "postgres" and len(out["hits"]) == 5
        assert {h["host"] for h in out["hits"]} == {host}
        conv = await client.call_tool("get_conversation",
                                      {"id": out["hits"][0]["id"], "detail": "full"})
        assert not conv.is_error and conv.structured_content is not None
        assert conv.structured_content["items"][0]["host"] == host
        # the compact answer: text only, each hit by its short reference, which opens the
        # hit's conversation on the team server too
        res = await client.call_tool("search_history", {"query": "quokka",
                                                        "filters": {"host": host}})
        assert res.structured_content is None
        text = res.content[0].text  # type: ignore[union-attr]
        refs = [x.split()[0] for x in text.splitlines() if x.startswith("@")]
        assert len(refs) == len(out["hits"]) and f"host {host}" in text
        ids = {h["id"] for h in out["hits"]}
        opened: set[str] = set()
        for r in refs:
            conv = await client.call_tool("get_conversation", {"id": r, "detail": "full",
                                                               "limit": 3})
            assert not conv.is_error and conv.structured_content is not None
            opened |= {i["id"] for i in conv.structured_content["items"]} & ids
        assert opened == ids


def test_serve_answers_from_postgres(team_home: tuple[Path, str], pg_url: str) -> None:
    home, host = team_home
    served = start_server(home, "--postgres", pg_url)
    try:
        headers = {"Authorization": f"Bearer {served.token}"}
        base = f"http://127.0.0.1:{served.port}"
        r = httpx.get(f"{base}/api/search", params={"q": "quokka", "host": host},
                      headers=headers)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["engine"] == "postgres" and {h["host"] for h in body["hits"]} == {host}
        doc = httpx.get(base + body["hits"][0]["sourceLink"], headers=headers)
        assert doc.status_code == 200 and doc.json()["host"] == host
        cov = httpx.get(f"{base}/api/coverage", headers=headers).json()["coverage"]
        assert cov["hosts"][0]["host"] == host
        # the history views are wired to the server too (this home has no transcripts)
        for route in ("/api/projects", "/api/history?q=quokka"):
            got = httpx.get(base + route, headers=headers)
            assert got.status_code == 200, (route, got.text)
        bad = httpx.get(f"{base}/api/history", params={"q": "x", "role": "nobody"},
                        headers=headers)
        assert bad.status_code == 400
    finally:
        assert stop(served) == 0
    err = served.proc.stderr.read().decode() if served.proc.stderr else ""
    assert PASSWORD not in err


def test_serve_background_capture_syncs_to_the_team_server(home: Path, pg_url: str) -> None:
    """The background capture of `serve` wakes the team syncer after each commit."""
    import os
    import time

    import psycopg

    from tests.test_projections_support import claude_line

    (home / "config.json").write_text(json.dumps({"team": {"postgres": pg_url}}))
    path = Path(os.environ["HOME"]) / ".claude" / "projects" / "-work-proj" / "s1.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(claude_line("u1", "user", "served axolotl"))
    served = start_server(home)

    def shipped() -> int:
        try:
            with psycopg.connect(pg_url) as con:
                return int(con.execute("SELECT count(*) FROM agentlog.documents"
                                       " WHERE text LIKE '%axolotl%'").fetchone()[0])
        except psycopg.Error:
            return 0

    try:
        deadline = time.monotonic() + 90
        while shipped() < 1 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert shipped() == 1
    finally:
        assert stop(served) == 0
