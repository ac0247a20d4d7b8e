"""HTTP routes of history, cross-project search, export and import (TestClient)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from cli.services.config import Home
from cli.web.app import create_app
from cli.web.guard import loopback_hosts
from tests.archive_fixtures import DAY, T0, envelope, home_at, import_turns, rich_project, turn

PORT = 8131
TOKEN = "h" * 43


def _client(home: Home, token: str | None = TOKEN) -> TestClient:
    app = create_app(home, token=TOKEN, session="s" * 43, port=PORT,
                     allowed_hosts=loopback_hosts(PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False)
    if token:
        c.headers["Authorization"] = f"Bearer {token}"
    return c


@pytest.fixture
def home(tmp_path: Path) -> Home:
    h = home_at(tmp_path / "h")
    import_turns(h, "proj-a", rich_project())
    import_turns(h, "team/app", [turn("x1", 0, T0 + 10 * DAY, "user", "settings of the nested id")])
    return h


def _get(c: TestClient, path: str, **params: str) -> dict[str, Any]:
    r = c.get(path, params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_unauthenticated_requests_are_refused(home: Home) -> None:
    c = _client(home, token=None)
    for path in ("/api/projects", "/api/history?q=x", "/api/projects/proj-a/history",
                 "/api/projects/proj-a/history/export"):
        assert c.get(path).status_code in (401, 403)
    assert c.post("/api/projects/proj-a/history/import",
                  files={"file": ("e.json", b"{}")}).status_code in (401, 403)


def test_project_history_and_filters(home: Home) -> None:
    c = _client(home)
    page = _get(c, "/api/projects/proj-a/history")
    assert len(page["turns"]) == 9 and page["next"] is None
    assert [s["sessionId"] for s in page["sessions"]] == ["s3", "s2", "s1"]
    got = _get(c, "/api/projects/proj-a/history", role="tool_use", tool="Bash")
    assert [t["content"] for t in got["turns"]] == ["grep -r settings src/"]
    got = _get(c, "/api/projects/proj-a/history", agent="@Explore", session="s2")
    assert [t["subagentName"] for t in got["turns"]] == ["Explore"]
    got = _get(c, "/api/projects/proj-a/history", q="screen", since="2026-01-01T00:00:01Z")
    assert len(got["turns"]) == 2
    nested = _get(c, "/api/projects/" + quote("team/app", safe="") + "/history")
    assert nested["project"] == "team/app" and len(nested["turns"]) == 1
    assert [p["project"] for p in _get(c, "/api/projects")["projects"]] == ["team/app", "proj-a"]


@pytest.mark.parametrize("query", [
    "role=wizard", "agent=x", "since=yesterday", "page=0", "page=abc", "bogus=1",
    "q=a&q=b", "include_archived=yes",
])
def test_bad_parameters_are_400(home: Home, query: str) -> None:
    r = _client(home).get("/api/projects/proj-a/history?" + query)
    assert r.status_code == 400 and r.json()["error"]


def test_cross_project_search_and_source_route(home: Home) -> None:
    c = _client(home)
    res = _get(c, "/api/history", q="settings")
    assert {h["project"] for h in res["hits"]} == {"proj-a", "team/app"}
    assert res["hits"][0]["project"] == "team/app"  # newest first
    assert all("<mark>" in h["preview"] for h in res["hits"])
    script = _get(c, "/api/history", q="alert")["hits"][0]["preview"]
    assert "&lt;script&gt;" in script and "<script" not in script
    assert _get(c, "/api/history", q="")["hits"] == []
    assert _get(c, "/api/history")["hits"] == []
    assert c.get("/api/history?q=x&bogus=1").status_code == 400
    # the web helper's source-document route still answers under /api/history/<id>
    hit_id = res["hits"][0]["id"]
    r = c.get("/api/history/" + quote(hit_id, safe=""))
    assert r.status_code == 200, r.text
    assert r.json()["id"] == hit_id


def test_export_streams_the_envelope(home: Home) -> None:
    c = _client(home)
    r = c.get("/api/projects/proj-a/history/export")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert "attachment" in r.headers["content-disposition"]
    body = r.json()
    assert body["turnCount"] == len(body["turns"]) == 9
    one = c.get("/api/projects/proj-a/history/export", params={"session": "s2"}).json()
    assert {t["sessionId"] for t in one["turns"]} == {"s2"}
    assert not list(home.root.glob(".export-*"))  # the spool file is gone


def test_import_dry_run_then_apply_then_skip(home: Home, tmp_path: Path) -> None:
    c = _client(home)
    data = envelope("whatever", [turn("n1", 0, T0, "user", "imported over http")])
    url = "/api/projects/proj-new/history/import"
    head = home.log().head()
    r = c.post(url, files={"file": ("e.json", data, "application/json")})
    assert r.status_code == 200, r.text
    assert r.json()["dryRun"] is True and r.json()["turnsToInsert"] == 1
    assert home.log().head() == head
    r = c.post(url, files={"file": ("e.json", data)}, data={"apply": "true"})
    assert r.json()["applied"] is True and r.json()["project"] == "proj-new"
    assert _get(c, "/api/projects/proj-new/history")["turns"][0]["content"] == \
        "imported over http"
    r = c.post(url + "?apply=true", files={"file": ("e.json", data)})
    assert r.json()["sessionsSkipped"] == 1 and "already present" in r.json()["warning"]
    head = home.log().head()
    r = c.post(url + "?apply=true", files={"file": ("e.json", b'{"schemaVersion":1}')})
    assert r.status_code == 400 and "nothing imported" in r.json()["error"]
    r = c.post(url + "?apply=true", data={"x": "1"})
    assert r.status_code == 400
    assert home.log().head() == head


def test_oversized_upload_is_413(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    from projections import envelope as env_mod

    monkeypatch.setattr(env_mod, "MAX_FILE_BYTES", 100)
    data = envelope("p", rich_project())
    head = home.log().head()
    r = _client(home).post("/api/projects/p/history/import?apply=true",
                           files={"file": ("e.json", data)})
    assert r.status_code == 413, r.text
    assert r.json() == {"error": "upload over the limit of 100 bytes (256 MiB); nothing imported"}
    assert home.log().head() == head
