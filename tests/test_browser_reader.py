"""The session browser in a real headless Chromium: navigation, reading, hits, layout.

Projects → sessions → conversation; markdown rendered and hostile markdown inert; tool
calls, results and thinking collapsed; the subagent under its call; a hit scrolled to the
middle with whole-word highlights; the resume command copied; active filters shown; the
History forms' labels beside their inputs; an underscore visible at 1× (a screenshot).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.readerdata import OLD, PROJECT, READ, make_reader_history
from tests.test_browser import browser as browser  # the one headless Chromium fixture
from tests.test_http_server import Served, start_server, stop

pytestmark = pytest.mark.browser

INERT = """() => ({
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  scripts: [...document.querySelectorAll('script')].map(s => s.getAttribute('src')),
  imgs: document.querySelectorAll('img, iframe, object, embed, style, form#x').length,
  jsLinks: [...document.querySelectorAll('[href]')]
    .filter(a => !/^(https?:|mailto:|\\/)/i.test(a.getAttribute('href'))).length,
  handlers: [...document.querySelectorAll('#view *')]
    .flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on')),
})"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("reader")
    home = root / "home"
    home.mkdir()
    make_reader_history(home, root / "sources")
    s = start_server(home)
    yield s
    stop(s)


def open_page(served: Served, browser: Any, **kwargs: Any) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1100, "height": 800},
                                  device_scale_factor=1, **kwargs)
    page = context.new_page()
    problems: list[str] = []
    page.on("dialog", lambda d: (problems.append("dialog " + d.message), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(served.url)
    return context, page, problems


def assert_inert(page: Any, problems: list[str]) -> None:
    state = page.evaluate(INERT)
    assert state["pwned"] is None, state
    assert state["scripts"] == ["/static/reader.js", "/static/browse.js", "/static/app.js",
                                "/static/history.js"]
    assert state["imgs"] == 0 and state["jsLinks"] == 0 and state["handlers"] == [], state
    assert problems == []


def session_url(served: Served, session: str = READ, extra: str = "") -> str:
    return f"http://127.0.0.1:{served.port}/?session={session}&agent=claude{extra}"


def test_projects_sessions_conversation_and_resume(served: Served, browser: Any) -> None:
    context, page, problems = open_page(
        served, browser, permissions=["clipboard-read", "clipboard-write"])
    page.click("#sessions-link")
    page.locator("ol.projects a.open", has_text=PROJECT).click()
    page.wait_for_selector("ol.sessions li.session")
    rows = page.locator("ol.sessions li.session")
    assert rows.count() == 2
    first = rows.nth(0)
    assert "explain import_router and zqxhostile please" in first.locator("a.open").inner_text()
    assert first.locator(".pill.agent").inner_text() == "claude"
    assert "turns" in first.locator(".turns").inner_text()
    assert "2026-04-02" in first.locator("time").inner_text()
    assert "ferrets" in rows.nth(1).inner_text() and OLD in rows.nth(1).inner_text()
    first.locator("a.open").click()
    page.wait_for_selector("li.item")
    assert f"session={READ}" in page.url
    crumbs = page.locator("nav.crumbs").inner_text()
    assert "Sessions" in crumbs and PROJECT in crumbs
    assert page.locator("code.resume-command").inner_text() == f"claude --resume {READ}"
    page.click(".resume button.copy")
    page.wait_for_selector(".resume button.copy:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == f"claude --resume {READ}"
    # Back up the breadcrumb to the project's sessions.
    page.locator("nav.crumbs a", has_text=PROJECT).click()
    page.wait_for_selector("ol.sessions")
    assert_inert(page, problems)
    context.close()


def test_conversation_is_rendered_for_reading_and_stays_inert(served: Served,
                                                             browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(session_url(served))
    page.wait_for_selector("li.item .md h2")
    md = page.locator("li.role-assistant .md").first
    assert md.locator("h2").inner_text() == "Steps"
    assert md.locator("ul > li").count() == 2
    assert md.locator("table td").all_inner_texts() == ["a", "1"]
    assert md.locator("pre > code.language-python").inner_text().startswith("import_router")
    assert md.locator("a[href='https://example.org/docs']").count() == 1
    assert "<script>" in md.inner_text() and "onerror=" in md.inner_text()  # shown as text
    md.get_by_text("bold").hover()
    md.get_by_text("raw").click()
    # A tool call is one closed line: the tool and its key argument; it expands.
    call = page.locator("li.role-tool_use details.call").first
    assert call.get_attribute("open") is None
    assert "Bash ls -la /srv/app" in call.locator("summary").inner_text()
    assert not call.locator("pre").is_visible()
    call.locator("summary").click()
    assert call.locator("pre").is_visible()
    assert '"description":"list the app"' in call.locator("pre").inner_text()
    for cls in ("result", "thinking"):
        d = page.locator(f"details.{cls}").first
        assert d.get_attribute("open") is None and not d.locator("pre, .md").is_visible()
    # The subagent's turns sit under the Agent call that started it, loaded when opened.
    agent_call = page.locator("li.role-tool_use", has_text="Agent wombat hunt")
    sub = agent_call.locator("details.subagent")
    assert "subagent Explore: wombat hunt" in sub.locator("summary").inner_text()
    sub.locator("summary").click()
    sub.locator("li.item", has_text="wombat lives in src/w.py").wait_for()
    assert page.locator("section.subagents").count() == 0  # no orphans
    assert_inert(page, problems)
    context.close()


def _search_and_open(page: Any, served: Served, query: str, has_text: str) -> None:
    page.goto(f"http://127.0.0.1:{served.port}/?q={quote(query)}")
    page.wait_for_selector("li.hit")
    page.locator("li.hit", has_text=has_text).locator("a.open").click()
    page.wait_for_selector("li.item.focus")


def test_hit_is_centered_marked_and_highlighted(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    _search_and_open(page, served, "needle", "needle answer")
    assert "hl=needle" in page.url
    focus = page.locator("li.item.focus")
    assert "selected" in (focus.get_attribute("class") or "")
    box = page.evaluate("""() => { const r = document.querySelector('li.item.focus')
      .getBoundingClientRect(); return {mid: (r.top + r.bottom) / 2, h: innerHeight,
      y: scrollY}; }""")
    assert box["y"] > 0 and abs(box["mid"] - box["h"] / 2) < box["h"] * 0.15, box
    assert [m.lower() for m in focus.locator("mark").all_inner_texts()] == ["needle"]
    assert_inert(page, problems)
    context.close()


def test_history_hits_open_in_their_conversation(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(f"http://127.0.0.1:{served.port}/?history=&hq=needle")
    page.locator("#hist-hits li.hit a.conversation").click()
    page.wait_for_selector("li.item.focus")
    assert "needle answer" in page.locator("li.item.focus").inner_text()
    assert page.locator("li.item.focus mark").all_inner_texts() == ["needle"]
    page.goto(f"http://127.0.0.1:{served.port}/?history=&hq=wombat")
    page.locator("#hist-hits li.hit", has_text="wombat lives").locator("a.conversation").click()
    page.wait_for_selector("li.item.focus")
    assert "wombat lives in src/w.py" in page.locator("li.item.focus").inner_text()
    assert "main thread" in page.locator(".session-meta").inner_text()
    assert_inert(page, problems)
    context.close()


MARK_NEIGHBOURS = """() => [...document.querySelectorAll('mark')].map(m => {
  const before = (m.previousSibling ? m.previousSibling.textContent : '').slice(-1);
  const after = (m.nextSibling ? m.nextSibling.textContent : '').slice(0, 1);
  return [before, m.textContent, after];
})"""


def test_highlight_marks_whole_words_never_letters_inside_words(served: Served,
                                                                browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(f"http://127.0.0.1:{served.port}/?q=x")
    page.wait_for_selector("li.hit")
    snippet_marks = page.evaluate(MARK_NEIGHBOURS)
    assert snippet_marks and all(m[1].lower() == "x" for m in snippet_marks)
    assert all(not (m[0].isalnum() or m[2].isalnum()) for m in snippet_marks), snippet_marks
    page.locator("li.hit a.open").first.click()
    page.wait_for_selector("li.item.focus")
    marks = page.evaluate(MARK_NEIGHBOURS)
    assert marks and all(m[1].lower() == "x" for m in marks)
    assert all(not (m[0].isalnum() or m[2].isalnum()) for m in marks), marks
    assert page.locator("li.item.focus", has_text="zqxhostile").count() == 1
    # import_router: the underscore separates two words; each is marked whole.
    _search_and_open(page, served, "router", "explain import_router")
    texts = page.evaluate(MARK_NEIGHBOURS)
    assert {m[1] for m in texts} == {"router"} and all(m[0] == "_" or not m[0].isalnum()
                                                       for m in texts), texts
    assert_inert(page, problems)
    context.close()


def test_active_filters_are_visible(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    page.goto(f"http://127.0.0.1:{served.port}/?q=needle&kind=transcript&agent=claude")
    page.wait_for_selector("li.hit")
    assert page.locator("#filters").get_attribute("open") is not None
    assert page.locator("#f-kind").is_visible()
    active = page.locator("#filters-active").inner_text()
    assert "kind: transcript" in active and "agent: claude" in active
    page.goto(f"http://127.0.0.1:{served.port}/?q=needle")
    page.wait_for_selector("li.hit")
    assert page.locator("#filters").get_attribute("open") is None
    assert page.locator("#filters-active").inner_text() == ""
    assert problems == []
    context.close()


LABELS = """(sel) => [...document.querySelectorAll(sel + ' label')].map(l => {
  const text = [...l.childNodes].find(n => n.nodeType === 3 && n.textContent.trim());
  const ctrl = l.querySelector('input, select');
  if (!text || !ctrl) return null;
  const range = document.createRange(); range.selectNodeContents(text);
  const t = range.getBoundingClientRect(), c = ctrl.getBoundingClientRect();
  return {label: text.textContent.trim(), gap: c.left - t.right,
          sameLine: t.top < c.bottom && c.top < t.bottom};
}).filter(Boolean)"""


def test_history_forms_keep_labels_beside_their_inputs(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    for width in (1100, 700, 420):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"http://127.0.0.1:{served.port}/?history={quote(PROJECT, safe='')}")
        page.wait_for_selector("#hist-filters label")
        found = page.evaluate(LABELS, "#hist-filters")
        assert len(found) >= 8, found
        for f in found:
            assert f["sameLine"] and f["gap"] >= 4, (width, f)
        page.goto(f"http://127.0.0.1:{served.port}/?history=")
        page.wait_for_selector("#hist-search label")
        for f in page.evaluate(LABELS, "#hist-search"):
            assert f["sameLine"] and f["gap"] >= 4, (width, f)
    assert problems == []
    context.close()


def _ink_below(page: Any, element: Any, char_index_js: str) -> int:
    """Pixels of ink in the screenshot cell of one character of `element` (1× zoom)."""
    from PIL import Image

    element.scroll_into_view_if_needed()
    cell = element.evaluate(f"""(el) => {{
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {{
        const i = {char_index_js};
        if (i < 0) continue;
        const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
        const c = r.getBoundingClientRect(), e = el.getBoundingClientRect();
        return {{x: c.left - e.left, y: c.top - e.top, w: c.width, h: c.height}};
      }}
      return null; }}""")
    assert cell is not None
    shot = Image.open(io.BytesIO(element.screenshot())).convert("L")
    bg = shot.getpixel((1, 1))
    assert isinstance(bg, int)
    ink = 0
    for x in range(int(cell["x"]) + 1, int(cell["x"] + cell["w"]) - 1):
        for y in range(max(0, int(cell["y"])), shot.height):
            px = shot.getpixel((x, y))
            assert isinstance(px, int)
            if abs(px - bg) > 60:
                ink += 1
    return ink


def test_underscore_on_the_last_line_is_not_clipped(served: Served, browser: Any) -> None:
    context, page, problems = open_page(served, browser)
    font = "n.parentElement.closest('pre') ? n.textContent.lastIndexOf('_') : -1"
    page.goto(f"http://127.0.0.1:{served.port}/?history={quote(PROJECT, safe='')}"
              "&hsession=" + READ)
    pre = page.locator("#hist-turns pre.body", has_text="import_router and zqxhostile").first
    pre.wait_for()
    family = pre.evaluate("(el) => getComputedStyle(el).fontFamily")
    assert "DejaVu Sans Mono" in family
    assert _ink_below(page, pre, font) > 3
    page.goto(session_url(served))
    result = page.locator("details.result", has_text="import_router.py").first
    result.locator("summary").click()
    pre = result.locator("pre.body")
    assert _ink_below(page, pre, font) > 3
    assert problems == []
    context.close()
