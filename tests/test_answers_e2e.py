"""Answers through every front end: `agentlog search --answer`, MCP `answer: true`, HTTP.

A real home (recorded facts, real LMDB and history.db) and fake provider binaries alone on
PATH; no real model runs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.services.config import Home
from tests.answer_fakes import Fakes, install
from tests.conftest import ROOT, run_cli
from tests.webdata import make_history


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fakes:
    f = Fakes(tmp_path)
    install(monkeypatch, f)
    f.set("codex", text="The plan uses sqlite [{first_id}].")
    return f


def check_answer(ans: dict[str, Any], hits: list[dict[str, Any]]) -> None:
    first = hits[0]
    assert ans == {
        "text": f"The plan uses sqlite [{first['id']}].",
        "agent": "codex",
        "model": "gpt-6-luna",
        "sources": [{"id": first["id"], "link": first["sourceLink"]}],
    }


def test_cli_search_answer_json_and_human(home: Path, fakes: Fakes) -> None:
    make_history(home)
    proc = run_cli(home, "search", "quokka", "--answer", "--json", env=fakes.env())
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    check_answer(out["answer"], out["hits"])
    assert len(fakes.runs("codex")) == 1

    human = run_cli(home, "search", "quokka", "--answer", env=fakes.env())
    text = human.stdout.decode()
    assert text.startswith("Answer (codex · gpt-6-luna)\nThe plan uses sqlite [")
    assert text.index("Answer (") < text.index(out["hits"][0]["id"] + "\n")

    plain = run_cli(home, "search", "quokka", "--json", env=fakes.env())
    assert "answer" not in json.loads(plain.stdout)
    assert len(fakes.runs("codex")) == 2  # no run without --answer


def test_cli_answer_error_keeps_the_hits(home: Path, fakes: Fakes) -> None:
    make_history(home)
    fakes.set("codex", text="no citation here")
    proc = run_cli(home, "search", "quokka", "--answer", env=fakes.env())
    assert proc.returncode == 0
    assert "answer: codex's answer cites no hit" in proc.stderr.decode()
    assert "message:m1" in proc.stdout.decode()


def test_cli_no_hits_answer_runs_nothing(home: Path, fakes: Fakes) -> None:
    make_history(home)
    proc = run_cli(home, "search", "nosuchwordanywhere", "--answer", "--json", env=fakes.env())
    out = json.loads(proc.stdout)
    assert out["hits"] == [] and out["answer"]["sources"] == []
    assert out["answer"]["text"].startswith("No matching history")
    assert fakes.calls() == []


def test_http_search_answer(home: Path, fakes: Fakes) -> None:
    from starlette.testclient import TestClient

    from cli.web.app import create_app
    from cli.web.guard import loopback_hosts

    make_history(home)
    port, token = 8125, "t" * 43
    app = create_app(
        Home(home), token=token, session="s" * 43, port=port, allowed_hosts=loopback_hosts(port)
    )
    client = TestClient(app, base_url=f"http://127.0.0.1:{port}")
    client.headers["Authorization"] = f"Bearer {token}"
    resp = client.get("/api/search", params={"q": "quokka", "answer": "true", "limit": "3"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    check_answer(body["answer"], body["hits"])
    prompt = fakes.runs("codex")[0]["stdin"]
    assert len(re.findall(r'<excerpt-[0-9a-f]+ id="', prompt)) == len(body["hits"]) == 3


@pytest.mark.anyio
async def test_mcp_search_answer(home: Path, fakes: Fakes) -> None:
    from mcp import Client, StdioServerParameters

    make_history(home)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli.main", "--home", str(home), "mcp"],
        cwd=str(ROOT),
        env=fakes.env(),
    )
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        res = await client.call_tool(
            "search_history", {"query": "quokka", "answer": True, "limit": 2, "detail": "full"}
        )
    assert not res.is_error
    body = res.structured_content
    assert isinstance(body, dict)
    check_answer(body["answer"], body["hits"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
