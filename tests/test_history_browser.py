"""The history view of the dashboard in a real headless Chromium.

Session dropdown and filters, paging, cross-project search with <mark> previews, a dry-run
import from the page, and hostile markup rendered as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.archive_fixtures import T0, envelope, home_at, import_turns, rich_project, turn
from tests.test_browser import ARGS, CHROMIUM, browser  # noqa: F401 - fixture
from tests.test_http_server import Served, start_server, stop

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=window.__pwned=1> <script>window.__pwned=2</script> quokka"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    import os

    from tests.conftest import need

    need(os.path.exists(CHROMIUM), f"{CHROMIUM} is absent (scripts/install-browser.sh installs it)")
    root = tmp_path_factory.mktemp("histbrowser")
    h = home_at(root / "home")
    import_turns(h, "proj-a", rich_project())
    import_turns(h, "proj-big", [turn(f"b{i % 3}", i // 3, T0 + i, "user", f"row {i:03d}")
                                 for i in range(130)])
    import_turns(h, "proj-x", [turn("z", 0, T0 + 5, "user", HOSTILE)])
    s = start_server(h.root)
    yield s
    stop(s)


def _page(served: Served, browser: Any) -> tuple[Any, Any, list[str]]:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    problems: list[str] = []
    page.on("dialog", lambda d: (problems.append("dialog " + d.message), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(served.url)
    return context, page, problems


def _inert(page: Any) -> None:
    state = page.evaluate("""() => ({
      pwned: window.__pwned === undefined ? null : String(window.__pwned),
      imgs: document.querySelectorAll('img').length,
      scripts: document.querySelectorAll('#view script').length,
    })""")
    assert state == {"pwned": None, "imgs": 0, "scripts": 0}


def test_a_view_still_loading_never_writes_into_the_next(served: Served,
                                                         browser: Any) -> None:  # noqa: F811
    """The landing's first fetch answers only after the user opened History: the landing
    must not appear inside the history view (it did: both lists in one view)."""
    context = browser.new_context()
    page = context.new_page()
    held: list[Any] = []

    def hold_first(route: Any) -> None:
        if not held:  # the landing's own /api/projects: held until History is drawn
            held.append(route)
            return
        route.continue_()

    page.route("**/api/projects", hold_first)
    page.goto(served.url)
    page.wait_for_function("() => !!document.querySelector('#history-link')")
    page.click("#history-link")
    expect(page.locator("#view li.item a.open")).to_have_count(3)
    assert len(held) == 1
    held[0].continue_()
    page.wait_for_timeout(500)  # the landing's answer arrives and is drawn nowhere
    names = page.locator("#view li.item a.open").all_inner_texts()
    assert set(names) == {"proj-a", "proj-big", "proj-x"}
    assert page.locator("#view .landing").count() == 0
    context.close()


def test_project_view_filters_and_paging(served: Served, browser: Any) -> None:  # noqa: F811
    context, page, problems = _page(served, browser)
    base = f"http://127.0.0.1:{served.port}"
    page.click("#history-link")
    page.wait_for_selector("#view li.item a.open")
    names = page.locator("#view li.item a.open").all_inner_texts()
    assert set(names) == {"proj-a", "proj-big", "proj-x"}
    page.click("#view li.item a.open:text('proj-a')")
    page.wait_for_selector("#hist-turns li.item")
    assert page.locator("#hist-turns li.item").count() == 9
    # the session dropdown lists the sessions and filters on change
    options = page.locator("#hist-session option").all_inner_texts()
    assert len(options) == 4
    page.select_option("#hist-session", "s2")
    expect(page.locator("#hist-turns li.item")).to_have_count(3)
    assert "hsession=s2" in page.url
    page.fill("#hist-thread", "@Explore")
    page.click("#hist-filters button")
    expect(page.locator("#hist-turns li.item")).to_have_count(1)
    assert "Explore" in page.locator("#hist-turns").inner_text()
    # paging: 130 turns = 100 + 30
    page.goto(base + "/?history=proj-big")
    expect(page.locator("#hist-turns li.item")).to_have_count(100)
    page.click("button.more:text('Next page')")
    expect(page.locator("#hist-turns li.item")).to_have_count(30)
    assert page.locator("#hist-turns li.item").first.inner_text().count("row 100") == 1
    assert problems == []
    context.close()


def test_cross_project_search_marks_and_stays_inert(
    served: Served, browser: Any  # noqa: F811
) -> None:
    context, page, problems = _page(served, browser)
    page.goto(f"http://127.0.0.1:{served.port}/?history=")
    page.wait_for_selector("#hist-search")
    page.fill("#hist-q", "quokka")
    page.click("#hist-search button")
    page.wait_for_selector("#hist-hits li.hit")
    hit = page.locator("#hist-hits li.hit").first
    assert hit.locator("mark").all_inner_texts() == ["quokka"]
    assert "<script>window.__pwned=2</script>" in hit.inner_text()
    _inert(page)
    hit.locator("a.open").click()  # the source document, shown by app.js
    page.wait_for_selector("pre.body:has-text('quokka')")
    _inert(page)
    page.goto(f"http://127.0.0.1:{served.port}/?history=proj-x")
    page.wait_for_selector("#hist-turns li.item")
    assert "<img src=x" in page.locator("#hist-turns").inner_text()
    _inert(page)
    assert problems == []
    context.close()


def test_import_from_the_page_is_a_dry_run_by_default(
    served: Served, browser: Any, tmp_path: Path  # noqa: F811
) -> None:
    context, page, problems = _page(served, browser)
    f = tmp_path / "e.json"
    f.write_bytes(envelope("ignored", [turn("up1", 0, T0, "user", "uploaded")]))
    page.goto(f"http://127.0.0.1:{served.port}/?history=proj-up")
    page.wait_for_selector("#hist-import")
    page.set_input_files("#hist-import input[type=file]", str(f))
    page.click("#hist-import button")
    page.wait_for_selector("#status:has-text('Dry run')")
    assert page.locator("#hist-turns li.item").count() == 0
    page.check("#hist-apply")
    page.click("#hist-import button")
    page.wait_for_selector("#hist-turns li.item")
    assert "uploaded" in page.locator("#hist-turns").inner_text()
    # export link downloads the envelope
    with page.expect_download() as dl:
        page.click("#hist-export")
    body = json.loads(Path(dl.value.path()).read_bytes())
    assert body["projectId"] == "proj-up" and body["turnCount"] == 1
    assert problems == []
    context.close()


def test_hidden_archived_sessions_link(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    from cli.services import archive_ops as ops
    from tests.archive_fixtures import DAY

    h = home_at(tmp_path / "home")
    import_turns(h, "proj-a", rich_project())
    assert ops.archive(h, now=T0 + 400 * DAY)["archived"] == 3
    s = start_server(h.root)
    try:
        context, page, problems = _page(s, browser)
        page.goto(f"http://127.0.0.1:{s.port}/?history=proj-a")
        expect(page.locator("#hist-hidden")).to_contain_text("3 archived sessions hidden")
        assert page.locator("#hist-turns li.item").count() == 0
        page.click("#hist-show-archived")
        expect(page.locator("#hist-turns li.item")).to_have_count(9)
        assert "harch=true" in page.url and page.locator("#hist-hidden").count() == 0
        page.goto(f"http://127.0.0.1:{s.port}/?history=")
        expect(page.locator("#hist-hidden")).to_contain_text("3 archived sessions hidden")
        page.click("#hist-show-archived")
        expect(page.locator("#view li.item a.open")).to_have_text(["proj-a"])
        assert problems == []
        context.close()
    finally:
        stop(s)
