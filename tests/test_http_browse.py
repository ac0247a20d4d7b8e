"""The session browser's API (TestClient over a real history): sessions, subagents, markdown."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from cli.services.config import Home
from cli.services.render import TAGS, summary, to_html
from cli.services.resume import resume
from cli.web.app import create_app
from cli.web.guard import loopback_hosts
from tests.readerdata import OLD, PROJECT, READ, SUB, make_reader_history

PORT = 8125
TOKEN = "t" * 43


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    root = tmp_path_factory.mktemp("browse")
    home = root / "home"
    home.mkdir()
    make_reader_history(home, root / "sources")
    app = create_app(Home(home), token=TOKEN, session="s" * 43, port=PORT,
                     allowed_hosts=loopback_hosts(PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False)
    c.headers["Authorization"] = f"Bearer {TOKEN}"
    return c


def markup(html: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Every start tag and its attributes, as a browser's parser sees them."""
    found: list[tuple[str, list[tuple[str, str]]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, [(k, v or "") for k, v in attrs]))

    Collect().feed(html)
    return found


def get(client: TestClient, path: str, status: int = 200) -> dict[str, Any]:
    resp = client.get(path)
    assert resp.status_code == status, resp.text
    body: dict[str, Any] = resp.json()
    return body


def test_sessions_newest_first_with_prompt_turns_and_resume(client: TestClient) -> None:
    res = get(client, f"/api/projects/{quote(PROJECT, safe='')}/sessions")
    sessions = res["sessions"]
    assert [s["sessionId"] for s in sessions] == [READ, OLD]
    read = sessions[0]
    assert read["agent"] == "claude"
    assert read["firstPrompt"] == "# Plan explain import_router and zqxhostile please"
    assert read["subagents"] == 1 and read["turns"] > 100 and read["prompts"] >= 50
    assert read["conversation"] == f"claude:{READ}"
    assert read["resume"] == {"argv": ["claude", "--resume", READ],
                              "command": f"claude --resume {READ}"}
    assert sessions[1]["firstPrompt"] == "an older question about ferrets"
    assert get(client, "/api/projects/%2Fnope/sessions")["sessions"] == []
    assert "include_archived" in get(client, f"/api/projects/{quote(PROJECT, safe='')}"
                                     "/sessions?bad=1", 400)["error"]


def test_session_names_its_subagent_and_the_call_that_started_it(client: TestClient) -> None:
    info = get(client, f"/api/sessions/claude/{READ}")
    assert info["project"] == PROJECT and info["conversation"] == f"claude:{READ}"
    (sub,) = info["subagents"]
    assert sub["subagent"] == SUB and sub["name"] == "Explore: wombat hunt"
    assert sub["conversation"] == f"claude:{READ}/{SUB}"
    page = get(client, f"/api/conversations/{quote(info['conversation'], safe='')}?limit=100")
    call = next(i for i in page["items"] if i["id"] == sub["parent"])
    assert call["role"] == "tool_use" and call["tool"] == "Agent"
    assert get(client, "/api/sessions/claude/no-such", 404)["error"].startswith("no session")


def test_conversation_html_is_sanitized_markdown(client: TestClient) -> None:
    page = get(client, f"/api/conversations/claude%3A{READ}?limit=10&format=html")
    by_role: dict[str, list[dict[str, Any]]] = {}
    for item in page["items"]:
        by_role.setdefault(item["role"], []).append(item)
    html = by_role["assistant"][0]["html"]
    for good in ("<h2>Steps</h2>", "<li>first step</li>", "<table>",
                 # highlighted by Pygments: class-only spans (no style attribute)
                 '<code class="language-python"><span class="hl-n">import_router</span>',
                 '<a href="https://example.org/docs" rel="noopener noreferrer">good</a>'):
        assert good in html
    tags = markup(html)
    assert {t for t, _ in tags} <= set(TAGS)
    attrs = {name: value for _, found in tags for name, value in found}
    assert set(attrs) <= {"href", "rel", "class", "title", "align"}, attrs
    assert all(v.startswith("https://") for n, v in attrs.items() if n == "href")
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=" in html  # shown as text
    assert by_role["tool_use"][0]["summary"] == "Bash ls -la /srv/app"
    assert "html" not in by_role["tool_result"][0]
    plain = get(client, f"/api/conversations/claude%3A{READ}?limit=10")
    assert all("html" not in i and "summary" not in i for i in plain["items"])
    assert "format" in get(client, f"/api/conversations/claude%3A{READ}?format=pdf",
                           400)["error"]


@pytest.mark.parametrize("text,tool,expected", [
    ('Read {"file_path":"/a/b.py","limit":5}', "Read", "Read /a/b.py"),
    ('Grep {"pattern":"def main","path":"src"}', "Grep", "Grep src"),
    ('Glob {"pattern":"**/*.py"}', "Glob", "Glob **/*.py"),
    ('shell "{\\"command\\":[\\"bash\\",\\"-lc\\",\\"make test\\"]}"', "shell",
     "shell bash -lc make test"),
    ("bash not json at all", "bash", "bash not json at all"),
])
def test_summary_is_the_tool_and_its_key_argument(text: str, tool: str, expected: str) -> None:
    assert summary(text, tool) == expected


def test_markdown_keeps_only_safe_markup() -> None:
    html = to_html('<iframe src="x"></iframe>\n\n[a](data:text/html,hi) [b](vbscript:x) '
                   "<style>b{}</style> ![i](https://e/i.png) `x_y`")
    tags = {t for t, _ in markup(html)}
    assert tags <= {"p", "code"}, tags
    assert all(not attrs for _, attrs in markup(html))
    assert "<code>x_y</code>" in html


def test_resume_commands_of_the_three_agents() -> None:
    assert resume("codex", "s1") == {"argv": ["codex", "resume", "s1"],
                                     "command": "codex resume s1"}
    assert resume("opencode", "ses 2")["command"] == "opencode --session 'ses 2'"  # type: ignore[index]
    assert resume("other", "s") is None
