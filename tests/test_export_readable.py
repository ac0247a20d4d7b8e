"""`agentlog export --format md|html`: readable transcripts of a session or a project, and
the resume command's one source in the terminal and get_conversation."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.services.config import Home
from tests.conftest import run_cli
from tests.readerdata import OLD, PROJECT, READ, SUB, make_reader_history


@pytest.fixture(scope="module")
def reader_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export-readable")
    home = root / "home"
    home.mkdir()
    make_reader_history(home, root / "sources")
    return home


def export(home: Path, *args: str) -> str:
    proc = run_cli(home, "export", *args)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def test_markdown_of_a_session(reader_home: Path) -> None:
    md = export(reader_home, "--session", READ, "--format", "md")
    assert md.startswith("# Plan explain import_router and zqxhostile please\n")
    assert f"- resume: `cd {PROJECT} && claude --resume {READ}`" in md
    assert "## user · claude · 2026-04-02 10:00:00Z\n\n# Plan\n\nexplain import_router" in md
    assert "```python\nimport_router = build()\n```" in md  # the turn's markdown kept as is
    # tool calls folded, their text fenced; the subagent under the call that started it
    assert "<details><summary>▸ Bash ls -la /srv/app  2026-04-02 10:00:02Z</summary>" in md
    assert '```\nBash {"command":"ls -la /srv/app","description":"list the app"}\n```' in md
    call = md.index("▸ Agent wombat hunt")
    sub = md.index("<details><summary>subagent Explore: wombat hunt</summary>")
    assert call < sub < md.index("wombat lives in src/w.py")


def test_a_fence_outlasts_backticks_in_the_text() -> None:
    from cli.services.transcript import _fence

    assert _fence("a ```` b").startswith("`````\n")


def test_markdown_of_a_project_and_the_mistakes(reader_home: Path, tmp_path: Path) -> None:
    md = export(reader_home, "--project", PROJECT, "--format", "md")
    assert md.startswith(f"# {PROJECT}\n") and "2 session(s)" in md
    assert md.index(f"session: `{READ}`") < md.index(f"session: `{OLD}`")  # newest first
    out = tmp_path / "p.md"
    proc = run_cli(reader_home, "export", "--project", PROJECT, "--format", "md", "-o",
                   str(out), "--json")
    assert proc.returncode == 0 and out.read_text(encoding="utf-8").startswith(f"# {PROJECT}")
    assert json.loads(proc.stdout)["sessions"] == 2
    for args, words in ((["--format", "md"], b"--session ID or --project P"),
                        (["--project", "/nope", "--format", "html"], b"unknown project"),
                        (["--session", "nope-session", "--format", "md"], b"not found")):
        proc = run_cli(reader_home, "export", *args)
        assert proc.returncode != 0 and words in proc.stderr, proc.stderr


def test_resume_in_search_conversation_and_get_conversation(reader_home: Path) -> None:
    line = f"cd {PROJECT} && claude --resume {READ}"
    proc = run_cli(reader_home, "search", "zqxhostile")
    assert f"→ resume: {line}" in proc.stdout.decode()
    proc = run_cli(reader_home, "conversation", READ, "--json")
    page = json.loads(proc.stdout)
    assert page["resume"] == {"argv": ["claude", "--resume", READ],
                              "command": f"claude --resume {READ}", "cwd": PROJECT}
    assert f"resume: {line}" in run_cli(reader_home, "conversation", READ).stdout.decode()
    from cli.services import calls

    assert calls.conversation(Home(reader_home), READ)["resume"] == page["resume"]
    sub = calls.conversation(Home(reader_home), f"claude:{READ}/{SUB}")
    assert sub["resume"]["argv"] == ["claude", "--resume", READ]  # a subagent: its session's


# --- the HTML in a real Chromium, offline, next to the page -----------------------------
try:
    from tests.test_browser import ARGS, CHROMIUM
except ImportError:  # pragma: no cover
    CHROMIUM, ARGS = "", []

BLOCKS = """(sel) => [...document.querySelectorAll(sel)].slice(0, 30).map(li => ({
  role: [...li.classList].find(c => c.startsWith('role-')),
  line: (li.querySelector(':scope > details > summary') || {}).textContent || null,
  md: li.querySelector(':scope > .md') ? li.querySelector(':scope > .md').innerHTML : null,
}))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (scripts/install-browser.sh installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.mark.browser
def test_html_opens_offline_with_the_blocks_of_the_page(reader_home: Path, tmp_path: Path,
                                                       browser: Any) -> None:
    from tests.test_http_server import start_server, stop

    out = tmp_path / "session.html"
    proc = run_cli(reader_home, "export", "--session", READ, "--format", "html", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    text = out.read_text(encoding="utf-8")
    assert "<script" not in text and "http://" not in text.replace(
        "https://example.org/docs", "")
    # offline: every request but the file itself is refused and counted
    context = browser.new_context(offline=True, viewport={"width": 1100, "height": 800})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: requests.append(f"error {e}"))
    page.goto(out.as_uri())
    page.wait_for_selector("li.item")
    exported = page.evaluate(BLOCKS, "section.session > ol.items > li.item")
    assert page.title().startswith("Plan explain import_router")
    assert page.locator("code.resume-command").inner_text() == (
        f"cd {PROJECT} && claude --resume {READ}")
    md = page.locator("li.role-assistant .md").first
    assert md.locator("h2").inner_text() == "Steps"
    assert md.locator("pre > code.language-python").inner_text().startswith("import_router")
    assert page.evaluate("window.__pwned === undefined")
    call = page.locator("li.role-tool_use details.call").first
    assert call.get_attribute("open") is None and not call.locator("pre").is_visible()
    call.locator("summary").click()
    assert call.locator("pre").is_visible()
    sub = page.locator("li.role-tool_use", has_text="Agent wombat hunt").locator(
        "details.subagent")
    sub.locator("summary").click()
    assert sub.locator("li.item", has_text="wombat lives in src/w.py").is_visible()
    assert page.screenshot(path=str(tmp_path / "export.png"))  # renders (looked at by hand)
    assert requests == [out.as_uri()], requests
    context.close()

    served = start_server(reader_home)
    try:
        context = browser.new_context(viewport={"width": 1100, "height": 800})
        page = context.new_page()
        page.goto(f"{served.url}")
        page.goto(f"http://127.0.0.1:{served.port}/?session={READ}&agent=claude")
        page.wait_for_selector("li.item .md h2")
        shown = page.evaluate(BLOCKS, "#view ol.items > li.item")
        context.close()
    finally:
        stop(served)
    assert len(shown) == len(exported) == 30
    assert shown == exported
