"""The dashboard in a real headless Chromium (Debian's, driven by Playwright; never downloaded).

Log in with the printed token, search, open a conversation, and prove that hostile markup
in the history (<script>, <img onerror>, javascript: links) is rendered as inert text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.test_http_server import Served, start_server, stop
from tests.webdata import make_history

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = pytest.mark.browser

INERT_JS = """() => ({
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  scripts: document.querySelectorAll('script').length,
  imgs: document.querySelectorAll('img').length,
  jsLinks: [...document.querySelectorAll('a')]
    .filter(a => /^\\s*javascript:/i.test(a.getAttribute('href') || '')).length,
  marksOnly: [...document.querySelectorAll('#view *')].every(e =>
      ['H2', 'H3', 'OL', 'LI', 'DIV', 'SPAN', 'TIME', 'P', 'PRE', 'MARK', 'A', 'BUTTON',
       'SECTION', 'NAV', 'CODE', 'DETAILS', 'SUMMARY', 'UL', 'STRONG', 'EM', 'BLOCKQUOTE',
       'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'H1', 'H4', 'H5', 'H6', 'HR', 'BR', 'DEL',
       'S'].includes(e.tagName)),
  cookie: document.cookie,
})"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("browser")
    home = root / "home"
    home.mkdir()
    make_history(home, transcripts=root / "sources")
    s = start_server(home)
    yield s
    stop(s)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    from tests.conftest import need

    need(os.path.exists(CHROMIUM), f"{CHROMIUM} is absent (scripts/install-browser.sh installs it)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def assert_inert(page: Any, dialogs: list[str]) -> None:
    state = page.evaluate(INERT_JS)
    assert state["pwned"] is None, state
    assert state["scripts"] == 4  # only /static/{reader,browse,app,history}.js
    assert state["imgs"] == 0 and state["jsLinks"] == 0, state
    assert state["marksOnly"], state
    assert state["cookie"] == ""  # the session cookie is HttpOnly
    assert dialogs == []


def test_search_and_conversation(served: Served, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    page.goto(served.url)
    assert page.url == f"http://127.0.0.1:{served.port}/"  # the token left the address bar
    cookies = context.cookies()
    assert len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    page.wait_for_selector("#coverage:has-text('events')")

    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("quokka payload")
    page.keyboard.press("Enter")
    page.wait_for_selector("li.hit")
    hits = page.locator("li.hit")
    assert hits.count() == 1
    assert "q=quokka+payload" in page.url
    snippet = hits.first.locator(".snippet")
    assert "<script>" in snippet.inner_text()
    marks = [m.lower() for m in snippet.locator("mark").all_inner_texts()]
    assert "quokka" in marks and "payload" in marks
    assert_inert(page, dialogs)

    # Keyboard: the first hit is selected; Enter opens its conversation.
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("li.item.focus")
    assert "message=m2" in page.url
    focused = page.locator("li.item.focus")
    assert "<img src=x onerror=" in focused.inner_text()
    assert page.locator("li.item").count() >= 2  # thread t1: m1, m2 and replies
    assert_inert(page, dialogs)

    # Paging: the 27-item thread needs "Load more" at 100 per page? No: one page holds it.
    page.goto(f"http://127.0.0.1:{served.port}/?conversation=thread%3At1")
    page.wait_for_selector("li.item")
    assert page.locator("li.item").count() == 27
    assert_inert(page, dialogs)

    # The source document view and a decision view render too.
    page.goto(f"http://127.0.0.1:{served.port}/?doc=message%3Am2")
    page.wait_for_selector("pre.body")
    assert "javascript:" in page.locator("pre.body").inner_text()
    assert_inert(page, dialogs)
    page.goto(f"http://127.0.0.1:{served.port}/?decision=storage-engine")
    page.wait_for_selector("li.item")
    assert page.locator("li.item").count() == 2
    assert errors == []
    context.close()


def test_transcript_renders_inert(served: Served, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(served.url)
    page.fill("#q", "platypus")
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit")
    assert page.locator("li.hit").count() == 2
    assert_inert(page, dialogs)
    answer = page.locator("li.hit", has_text="platypus answer")
    answer.locator("a.open").click()
    page.wait_for_selector("li.item.focus")
    assert "agent=claude" in page.url and "session=" in page.url and "from=0%3A" in page.url
    assert "onerror=" in page.locator("li.item.focus").inner_text()
    assert "<script>" in page.locator("li.item").first.inner_text()
    assert_inert(page, dialogs)
    # The navigation key alone (as an agent would hand it out) opens the same view.
    page.goto(page.url)
    page.wait_for_selector("li.item.focus")
    assert_inert(page, dialogs)
    context.close()


def test_no_token_no_page(served: Served, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    resp = page.goto(f"http://127.0.0.1:{served.port}/")
    assert resp.status == 403
    resp = page.goto(f"http://localhost:{served.port}/?token=wrong")
    assert resp.status == 403
    assert context.cookies() == []
    context.close()


def test_filters_from_the_form(served: Served, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(served.url)
    page.click("#filters summary")
    page.select_option("#f-kind", "decision")
    page.fill("#q", "quokka")
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit")
    kinds = set(page.locator("li.hit .meta .pill").all_inner_texts())
    assert "decision" in kinds and "report" not in kinds
    assert "kind=decision" in page.url
    page.fill("#f-since", "not a time")
    page.press("#q", "Enter")
    page.wait_for_selector("#status.error")
    assert "since" in page.locator("#status").inner_text()
    context.close()
