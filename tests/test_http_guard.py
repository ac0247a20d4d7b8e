"""The HTTP guard with Starlette's TestClient: Host, Origin, token → cookie, headers, params."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cli.services.config import Home
from cli.web.app import create_app, gather_routes
from cli.web.guard import loopback_hosts

PORT = 8123
TOKEN = "tok-" + "x" * 40
SESSION = "sess-" + "y" * 40
BASE = f"http://127.0.0.1:{PORT}"


@pytest.fixture
def client(home: Path) -> TestClient:
    app = create_app(Home(home), token=TOKEN, session=SESSION, port=PORT,
                     allowed_hosts=loopback_hosts(PORT))
    return TestClient(app, base_url=BASE, follow_redirects=False)


def authed(client: TestClient) -> TestClient:
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    return client


def assert_secure_headers(resp: object) -> None:
    headers = resp.headers  # type: ignore[attr-defined]
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", ["/", "/api/search?q=x", "/static/app.js", "/api/history/a",
                                  "/api/coverage", "/nothing-here"])
def test_everything_needs_auth(client: TestClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 403
    assert "error" in resp.json()
    assert_secure_headers(resp)


def test_token_exchanged_for_cookie(client: TestClient) -> None:
    resp = client.get("/?token=" + TOKEN + "&q=hello%20world&agent=codex")
    assert resp.status_code == 303
    assert resp.headers["location"] == "/?q=hello+world&agent=codex"
    cookie = resp.headers["set-cookie"]
    assert cookie.startswith(f"agentlog_{PORT}={SESSION};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert TOKEN not in cookie
    assert_secure_headers(resp)
    page = client.get("/")
    assert page.status_code == 200
    assert "<script src=\"/static/app.js\"" in page.text
    assert_secure_headers(page)
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")


def test_wrong_token_and_wrong_cookie(client: TestClient) -> None:
    assert client.get("/?token=nope").status_code == 403
    assert client.get("/?token=" + TOKEN + "&token=" + TOKEN).status_code == 403
    assert "set-cookie" not in client.get("/?token=nope").headers
    client.cookies.set(f"agentlog_{PORT}", "forged")
    assert client.get("/").status_code == 403
    client.cookies.set(f"agentlog_{PORT}", TOKEN)  # the token is not a session id
    assert client.get("/").status_code == 403


def test_bearer(client: TestClient) -> None:
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example:8123", "127.0.0.1:9999", "localhost",
                                  "127.0.0.1.evil.example:8123", ""])
def test_bad_host_refused(client: TestClient, host: str) -> None:
    resp = authed(client).get("/", headers={"Host": host})
    assert resp.status_code == 403
    assert "host" in resp.json()["error"]


@pytest.mark.parametrize("host", ["localhost:8123", "[::1]:8123", "127.0.0.1:8123"])
def test_loopback_names_allowed(client: TestClient, host: str) -> None:
    assert authed(client).get("/", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost:8123", "null",
                                    "https://127.0.0.1:8123", "http://127.0.0.1:9999"])
def test_foreign_origin_refused(client: TestClient, origin: str) -> None:
    resp = authed(client).get("/api/search?q=x", headers={"Origin": origin})
    assert resp.status_code == 403
    assert "origin" in resp.json()["error"]


def test_same_origin_allowed_cross_site_refused(client: TestClient) -> None:
    c = authed(client)
    assert c.get("/", headers={"Origin": BASE}).status_code == 200
    assert c.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert c.get("/", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200


@pytest.mark.parametrize("query,needle", [
    ("q=a&q=b", "more than once"),
    ("q=a&agent=codex&agent=claude", "more than once"),
    ("q=a&bogus=1", "unknown parameter 'bogus'"),
    ("q=a&token2=1", "unknown parameter"),
    ("q=a&answer=yes", "answer"),
    ("q=a&answer=1", "answer"),
    ("agent=codex", "missing parameter 'q'"),
])
def test_search_params_refused(client: TestClient, query: str, needle: str) -> None:
    resp = authed(client).get("/api/search?" + query)
    assert resp.status_code == 400
    assert needle in resp.json()["error"]
    assert_secure_headers(resp)


@pytest.mark.parametrize("path", ["/api/runs/x?from=-1", "/api/runs/x?from=abc",
                                  "/api/runs/x?from=1&from=2", "/api/runs/x?evil=1",
                                  "/api/conversations/c?before=1",
                                  "/api/history/message%3Ax?x=1"])
def test_other_params_refused(client: TestClient, path: str) -> None:
    resp = authed(client).get(path)
    assert resp.status_code == 400, resp.text


@pytest.mark.parametrize("path", ["/static/..%2Fapp.py", "/static/%2e%2e%2fguard.py",
                                  "/static/guard.py", "/static/", "/static/../../pyproject.toml",
                                  "/api/nothing"])
def test_no_arbitrary_files(client: TestClient, path: str) -> None:
    resp = authed(client).get(path)
    assert resp.status_code == 404
    assert "import" not in resp.text


def test_routes_assembled_from_modules() -> None:
    paths = {getattr(r, "path", "") for r in gather_routes()}
    assert {"/", "/api/search", "/api/history/{hit_id:path}"} <= paths
    with pytest.raises(ModuleNotFoundError):  # a wrong name fails loudly, never skipped
        gather_routes(["cli.web.no_such_module"])


def test_only_get(client: TestClient) -> None:
    resp = authed(client).post("/api/search?q=x")
    assert resp.status_code == 405 and "error" in resp.json()
    assert_secure_headers(resp)
    assert client.post("/?token=" + TOKEN, headers={"Authorization": ""}).status_code in (403, 405)


def test_agent_filter_choices_come_from_the_registry(client: TestClient) -> None:
    """The page's Agent select lists every searchable agent of readers/registry.py."""
    import re

    from readers import registry

    page = authed(client).get("/").text
    select = re.search(r'<select name="agent" id="f-agent">(.*?)</select>', page, re.S)
    assert select is not None
    values = re.findall(r'<option value="([^"]*)">', select.group(1))
    assert values == ["", *registry.search_agents()]
    assert {"claude", "gemini", "crush", "other"} <= set(values)
    assert f'<option value="gemini">{registry.labels()["gemini"]}</option>' in select.group(1)
