"""The dashboard page in a real headless Chromium: the reading view's finish (issue 30).

Code highlighted server side (Pygments' class spans, coloured by /static/reader.css under
the page's CSP); markdown tool results (a subagent's report) rendered and still inert;
sessions named by their title, else their first prompt; a landing view of recent sessions
and projects; sessions without times listed last as "time unknown"; a Windows project
written in two cases listed once; `export --format html` drawn by the same stylesheet.
Screenshots (desktop and phone) go to $AGENTLOG_SHOTS when it is set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.pagedata import (
    PROJECT,
    PROMPTED,
    TITLE,
    TITLED,
    UNDATED,
    WIN_A,
    WIN_B,
    WIN_LOWER,
    WIN_UPPER,
    make_page_history,
)
from tests.test_browser import browser as browser  # the one headless Chromium fixture
from tests.test_http_server import Served, start_server, stop

pytestmark = pytest.mark.browser

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
         "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 860}, "device_scale_factor": 1}
INERT = """() => ({
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  scripts: document.querySelectorAll('script:not([src])').length,
  styled: document.querySelectorAll('#view [style]').length,
  handlers: [...document.querySelectorAll('#view *')]
    .flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on')),
})"""
COLOR = "(e) => getComputedStyle(e).color"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("page")
    home = root / "home"
    home.mkdir()
    make_page_history(home, root / "sources")
    return home


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[Served]:
    s = start_server(home)
    yield s
    stop(s)


def open_page(served: Served, browser: Any, **kwargs: Any) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(**(kwargs or DESKTOP))
    page = context.new_page()
    problems: list[str] = []
    page.on("dialog", lambda d: (problems.append("dialog " + d.message), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("response", lambda r: problems.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    page.goto(served.url)
    return context, page, problems


def session_url(served: Served, session: str) -> str:
    return f"http://127.0.0.1:{served.port}/?session={session}&agent=claude"


def shoot(page: Any, name: str) -> None:
    where = os.environ.get("AGENTLOG_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=True)


def assert_inert(page: Any, problems: list[str]) -> None:
    state = page.evaluate(INERT)
    assert state == {"pwned": None, "scripts": 0, "styled": 0, "handlers": []}, state
    assert problems == []


def test_code_is_highlighted_by_class_under_the_csp(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(session_url(served, TITLED))
    code = page.locator("li.role-assistant .md pre > code.language-python").first
    code.wait_for()
    keyword = code.locator("span.hl-k", has_text="def")
    assert keyword.count() == 1
    comment = code.locator("span.hl-c1")
    assert comment.inner_text() == "# one more"
    plain = code.evaluate(COLOR)
    # the colours come from the served stylesheet (class rules, no style attribute)
    assert keyword.evaluate(COLOR) != plain and comment.evaluate(COLOR) != plain
    assert code.inner_text().startswith("def wombat(n):\n    return n + 1")
    assert_inert(page, problems)
    context.close()


def test_a_subagents_report_is_rendered_markdown(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(session_url(served, TITLED))
    result = page.locator("li.role-tool_result details.result").first
    result.wait_for()
    result.locator("summary").click()
    md = result.locator(".md")
    assert md.locator("h2").inner_text() == "Report"
    assert md.locator("strong").inner_text() == "Found"
    assert md.locator("ul > li").all_inner_texts() == ["src/a.py", "src/b.py"]
    assert md.locator("code.language-python span.hl-kn").inner_text() == "import"
    assert "**" not in md.inner_text() and "<script>" in md.inner_text()  # text, not markup
    # command output is not markdown: it keeps its lines
    out = page.locator("li.role-tool_result details.result").nth(1)
    out.locator("summary").click()
    assert out.locator("pre.body").inner_text() == "a.py\nb.py"
    assert_inert(page, problems)
    context.close()


def test_sessions_are_named_by_title_else_first_prompt(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(session_url(served, TITLED))
    assert page.locator("h2.session-title").inner_text() == TITLE
    assert TITLE in page.locator("nav.crumbs").inner_text()
    page.goto(session_url(served, PROMPTED))
    page.wait_for_selector("li.item")
    name = page.locator("h2.session-title").inner_text()
    assert name == "Refactor the parser, please and keep the tests", name
    page.goto(f"http://127.0.0.1:{served.port}/?sessions={PROJECT}")
    page.wait_for_selector("ol.sessions li.session a.open")  # the list is fetched, then drawn
    links = page.locator("ol.sessions li.session a.open").all_inner_texts()
    assert TITLE in links and "Refactor the parser, please and keep the tests" in links
    assert not any(text.startswith("eeeeeeee") for text in links), links
    shoot(page, "sessions-desktop")
    assert_inert(page, problems)
    context.close()


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_first_screen_shows_recent_sessions_and_projects(served: Served, browser: Any,
                                                             device: str) -> None:
    context, page, problems = open_page(served, browser, **(PHONE if device == "phone"
                                                             else DESKTOP))
    page.wait_for_selector(".landing .recent li.session")
    recent = page.locator(".landing .recent li.session")
    assert recent.first.locator("a.open").inner_text() == TITLE  # the newest first
    assert recent.count() == 5
    assert "time unknown" in recent.last.inner_text()  # no time: last
    page.wait_for_selector(".landing .projects li.item a.open")  # fetched on its own
    projects = page.locator(".landing .projects li.item a.open").all_inner_texts()
    assert projects[0] == PROJECT and len(projects) == 2, projects
    assert "events" in page.locator("#coverage").inner_text()
    shoot(page, f"landing-{device}")
    # a project opens its sessions; a session opens its conversation
    recent.first.locator("a.open").click()
    page.wait_for_selector("li.item .md pre code")
    shoot(page, f"session-{device}")
    if device == "phone":  # nothing wider than the screen
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert_inert(page, problems)
    context.close()


def test_undated_sessions_sort_last_and_say_so(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(f"http://127.0.0.1:{served.port}/?sessions={PROJECT}")
    rows = page.locator("ol.sessions li.session")
    rows.first.wait_for()
    assert rows.count() == 3
    assert [rows.nth(i).locator(".muted.id").inner_text() for i in range(3)] == [
        TITLED, PROMPTED, UNDATED]
    assert rows.nth(0).locator("time").inner_text().startswith("2026-04-05")
    last = rows.nth(2)
    assert last.locator("time").count() == 0
    assert last.locator(".unknown-time").inner_text() == "time unknown"
    assert_inert(page, problems)
    context.close()


def test_a_windows_project_is_one_project_whatever_its_case(served: Served,
                                                          browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.click("#sessions-link")
    page.wait_for_selector("ol.projects li.item")
    names = page.locator("ol.projects li.item a.open").all_inner_texts()
    windows = [n for n in names if n.lower() == WIN_LOWER]
    assert len(windows) == 1, names
    page.locator("ol.projects a.open", has_text=windows[0]).click()
    page.wait_for_selector("ol.sessions li.session")
    ids = page.locator("ol.sessions li.session .muted.id").all_inner_texts()
    assert sorted(ids) == [WIN_A, WIN_B]
    # either spelling finds it
    for spelling in (WIN_UPPER, WIN_LOWER):
        page.goto(f"http://127.0.0.1:{served.port}/?q=windows&project="
                  + spelling.replace("\\", "%5C"))
        page.wait_for_selector("li.hit")
        assert page.locator("li.hit").count() == 2
    assert_inert(page, problems)
    context.close()


def test_the_export_is_drawn_by_the_pages_stylesheet(home: Path, served: Served,
                                                     browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "titled.html"
    proc = run_cli(home, "export", "--session", TITLED, "--format", "html", "-o", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    context, page, _problems = open_page(served, browser)
    served_css = page.request.get(f"http://127.0.0.1:{served.port}/static/reader.css").text()
    assert ".md pre .hl-k" in served_css
    exported = out.read_text(encoding="utf-8")
    assert served_css in exported  # one stylesheet, inlined
    context.close()
    context = browser.new_context(offline=True, **DESKTOP)
    page = context.new_page()
    page.goto(out.as_uri())
    assert page.locator("h1").first.inner_text() == TITLE
    code = page.locator("li.role-assistant .md pre > code.language-python").first
    keyword = code.locator("span.hl-k", has_text="def")
    assert keyword.evaluate(COLOR) != code.evaluate(COLOR)
    report = page.locator("li.role-tool_result details.result .md h2")
    assert report.first.text_content() == "Report"  # in its closed <details>
    assert page.evaluate("window.__pwned === undefined")
    context.close()
