"""`agentlog browse` driven by Textual's headless pilot on a real home (the demo corpus):
type, filter, open, and the resume command Enter produces."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Static

from cli.services.config import Home
from cli.services.demo_corpus import CLAUDE_SESSION, CODEX_SESSION, PROJECT
from cli.tui import app as app_module
from cli.tui import model
from cli.tui.app import BrowseApp
from readers.registry import search_agents
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = tmp_path_factory.mktemp("tui") / "home"
    proc = run_cli(home, "demo")
    assert proc.returncode == 0, proc.stderr.decode()
    return Home(home)


def app_of(home: Home, **kw: Any) -> BrowseApp:
    from projections.sessions import known_projects

    return BrowseApp(home, projects=known_projects(home.history_db),
                     agents=list(search_agents()), **kw)


async def settle(pilot: Pilot[Any], ready: Callable[[], bool]) -> None:
    """Let the workers and the messages they post run until `ready()` (or fail after 30 s)."""
    deadline = time.monotonic() + 30
    while not ready():
        assert time.monotonic() < deadline, "the browser never showed the expected state"
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def run(app: BrowseApp, scenario: Callable[[Pilot[Any]], Coroutine[Any, Any, None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await scenario(pilot)

    asyncio.run(main())


def preview_text(app: BrowseApp) -> str:
    """The preview pane's items as plain text (each widget's renderable, printed by Rich)."""
    from rich.console import Console

    console = Console(record=True, width=120, file=io.StringIO())
    for w in app.query("#preview Static").results(Static):
        console.print(w.content)
    return console.export_text()


def test_typing_searches_and_enter_gives_the_resume_command(demo_home: Home) -> None:
    app = app_of(demo_home)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"tangerine")
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "tangerine"
                     and app.previewed is not None)
        assert app.rows and all(r.agent == "codex" for r in app.rows)
        table = app.query_one("#results", DataTable)
        assert table.row_count == len(app.rows)
        await settle(pilot, lambda: "tangerine" in preview_text(app).lower())
        assert f"codex resume {CODEX_SESSION}" in preview_text(app)
        await pilot.press("enter")

    run(app, scenario)
    chosen = app.return_value
    assert chosen is not None
    assert chosen.argv == ["codex", "resume", CODEX_SESSION]
    assert chosen.cwd == PROJECT or chosen.cwd is None
    assert chosen.command.endswith(f"codex resume {CODEX_SESSION}")


def test_agent_filter_narrows_the_results(demo_home: Home) -> None:
    app = app_of(demo_home)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"migration")
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "migration")
        before = {r.agent for r in app.rows}
        app.query_one("#agent", Select).value = "claude"
        await settle(pilot, lambda: app.shown is not None and app.shown[1].agent == "claude")
        assert {r.agent for r in app.rows} <= {"claude"}
        assert before != {r.agent for r in app.rows} or not app.rows

    run(app, scenario)


def test_project_alone_lists_its_sessions_and_opens_one(demo_home: Home) -> None:
    app = app_of(demo_home, filters=model.Filters(project=PROJECT))

    async def scenario(pilot: Pilot[Any]) -> None:
        await settle(pilot, lambda: app.shown is not None and bool(app.rows))
        sessions = {r.session for r in app.rows}
        assert {CLAUDE_SESSION, CODEX_SESSION} <= sessions
        await pilot.press("down")  # to the results
        assert app.focused is app.query_one("#results", DataTable)
        while app.highlighted() is not None and app.highlighted().session != CLAUDE_SESSION:
            await pilot.press("down")
        await settle(pilot, lambda: "flamingo" in preview_text(app).lower())
        text = preview_text(app)
        assert "▸" in text  # tool calls folded to one line
        await pilot.press("ctrl+o")  # unfolded
        await settle(pilot, lambda: app.unfold)
        await pilot.press("enter")

    run(app, scenario)
    chosen = app.return_value
    assert chosen is not None and chosen.argv == ["claude", "--resume", CLAUDE_SESSION]
    assert chosen.cwd == PROJECT
    assert chosen.command == f"cd {PROJECT} && claude --resume {CLAUDE_SESSION}"


def test_a_query_without_words_says_so_and_escape_leaves(demo_home: Home) -> None:
    app = app_of(demo_home)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"...")
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "...")
        status = str(app.query_one("#status", Static).render())
        assert "no searchable word" in status
        await pilot.press("escape")

    run(app, scenario)
    assert app.return_value is None


def test_no_resume_gives_the_conversation_command() -> None:
    row = model.Row(key="k", at=None, agent="aider", project="/p", text="t",
                    conversation="aider:s1", session="s1")
    chosen = model.choice(row)
    assert chosen.argv is None and chosen.command == "agentlog conversation aider:s1"


def test_browse_refuses_a_pipe(demo_home: Home, tmp_path: Path) -> None:
    proc = run_cli(demo_home.root, "browse")
    assert proc.returncode == 2
    assert b"needs a terminal" in proc.stderr


def test_project_column_names_the_last_folder_of_posix_and_windows_paths() -> None:
    from cli.tui.app import short_project

    assert short_project("c:\\Users\\me\\Documents\\VAULT") == "VAULT"
    assert short_project("/home/demo/webapp/") == "webapp"
    assert short_project(None) == "-"
    assert short_project("/a/" + "x" * 40).endswith("…")


def test_the_ranking_lists_still_wanted_are_made_while_the_reader_rests(
        tmp_path: Path) -> None:
    """A rebuild makes only the most common words' lists; without a capture loop running
    nothing else made the rest, and a common word ranked every match at each keystroke."""
    import sqlite3

    from projections import db
    from projections.rank import champions

    proc = run_cli(tmp_path / "home", "demo")
    assert proc.returncode == 0, proc.stderr.decode()
    home = Home(tmp_path / "home")
    con = db.connect(home.history_db)
    with con:  # one list made, every other word in more than one document wanted
        champions.build(con, hot_df=1, budget=1)
    con.close()

    def wanted() -> int:
        with sqlite3.connect(home.history_db) as c:
            return int(c.execute("SELECT count(*) FROM rank_terms WHERE tau IS NULL")
                       .fetchone()[0])

    assert wanted() > 0
    app = app_of(home)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"tangerine")
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "tangerine")
        deadline = time.monotonic() + 120  # generous: a loaded 2-core machine
        while wanted() and time.monotonic() < deadline:
            await pilot.pause(0.2)

    run(app, scenario)
    assert wanted() == 0


def test_a_newer_query_interrupts_the_slow_search_and_its_answer_is_drawn(
        demo_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Typing on while an earlier query's search is slow: the search in flight is stopped
    (SQLite's interrupt on its connection), no error is shown, the last query's results
    are drawn. The slow search is made slow by a hook, not by sleeping: the query
    "glacier" runs a statement that never ends on its own (it gives up after 120 s, a
    fail-safe far beyond the wait of `settle`), so without the interrupt "tangerine" is
    never answered."""
    import sqlite3
    import threading

    from projections import query

    began = threading.Event()
    stopped: list[str] = []
    real = query.fts_search

    def hooked(con: sqlite3.Connection, tokens: list[str], *args: Any,
               **kwargs: Any) -> list[tuple[Any, ...]]:
        if tokens == ["glacier"]:
            give_up = time.monotonic() + 120

            def running(_: int) -> int:
                began.set()
                return int(time.monotonic() < give_up)

            con.create_function("running", 1, running)
            try:
                con.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                            " WHERE running(x)) SELECT count(*) FROM c").fetchone()
            except sqlite3.OperationalError as exc:
                stopped.append(str(exc))
                raise
        return real(con, tokens, *args, **kwargs)

    monkeypatch.setattr(query, "fts_search", hooked)
    monkeypatch.setattr(app_module, "FIRST_AFTER", 3600.0)  # only the key stops it here
    app = app_of(demo_home)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"glacier")
        deadline = time.monotonic() + 30
        while not began.is_set():  # the slow search is running
            assert time.monotonic() < deadline, "the slow search never began"
            await pilot.pause(0.01)
        await pilot.press(*["backspace"] * len("glacier"), *"tangerine")
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "tangerine")
        assert app.rows and all(r.agent == "codex" for r in app.rows)
        status = str(app.query_one("#status", Static).render())
        assert "hit(s)" in status and "interrupt" not in status.lower()
        await pilot.press("escape")

    run(app, scenario)
    assert stopped == ["interrupted"]
    assert app.interrupted >= 1


def test_a_key_typed_while_its_search_runs_keeps_the_preview_waiting(
        demo_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Typing is no rest: the preview the last answer asked for is not made while the next
    key's search runs (it took the interpreter from that search and the drawing: a
    keystroke waited ~300 ms on the 1 GB home, bench/tui.py). The next key's search is held
    by a hook until the test lets it go."""
    import sqlite3
    import threading

    from projections import query

    go = threading.Event()
    real = query.fts_search

    def hooked(con: sqlite3.Connection, tokens: list[str], *args: Any,
               **kwargs: Any) -> list[tuple[Any, ...]]:
        if tokens == ["tangerine", "x"]:
            go.wait(30)
        return real(con, tokens, *args, **kwargs)

    monkeypatch.setattr(query, "fts_search", hooked)
    monkeypatch.setattr(app_module, "FIRST_AFTER", 3600.0)
    app = app_of(demo_home)
    made: list[str] = []
    load = app._load
    monkeypatch.setattr(app, "_load", lambda row, *a: (made.append(row.key), load(row, *a)))

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"tangerine")
        await settle(pilot, lambda: "tangerine" in preview_text(app).lower())
        await pilot.press("space")  # the same words: answered at once, a preview asked
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "tangerine ")
        before = len(made)
        await pilot.press("x")  # its search is held
        await pilot.pause(6 * app_module.PREVIEW_DELAY)
        assert len(made) == before, "a preview was made while a key's search ran"
        go.set()
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "tangerine x")
        await pilot.press("escape")

    try:
        run(app, scenario)
    finally:
        go.set()


def test_a_slow_ranking_draws_a_labelled_first_page_then_the_answer(
        demo_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a search ranks every match for longer than `FIRST_AFTER`, a first page (the
    latest matches, unranked, on the first-page thread) is drawn labelled, then the full
    ranking's answer replaces it. Deterministic: the full ranking does not end until the
    first page was drawn (a hook)."""
    import sqlite3
    import threading

    from projections import query

    first_drawn = threading.Event()
    full_runs: list[str] = []
    real = query.fts_search

    def hooked(con: sqlite3.Connection, tokens: list[str], *args: Any,
               **kwargs: Any) -> list[tuple[Any, ...]]:
        if tokens == ["tangerine"]:  # the full ranking: slow until the first page is drawn
            full_runs.append("run")
            give_up = time.monotonic() + 120  # a fail-safe far beyond `settle`'s wait
            con.create_function("running", 1, lambda _: int(
                not first_drawn.is_set() and time.monotonic() < give_up))
            con.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1"
                        " FROM c WHERE running(x)) SELECT count(*) FROM c").fetchone()
        return real(con, tokens, *args, **kwargs)

    monkeypatch.setattr(query, "fts_search", hooked)
    monkeypatch.setattr(app_module, "FIRST_AFTER", 0.05)
    app = app_of(demo_home)
    drawn: list[tuple[str, bool, str]] = []
    show = app._show_rows

    def spy(rows: model.Rows) -> None:
        show(rows)
        if app.shown is not None:
            drawn.append((app.shown[0], app.shown_partial,
                          str(app.query_one("#status", Static).render())))
            if app.shown == (rows.query, rows.filters) and app.shown_partial:
                first_drawn.set()

    app._show_rows = spy  # type: ignore[method-assign]

    async def scenario(pilot: Pilot[Any]) -> None:
        await settle(pilot, lambda: app.searches >= 1)  # the empty query's answer
        app.query_one("#query", Input).value = "tangerine"
        await settle(pilot, lambda: app.shown is not None and app.shown[0] == "tangerine"
                     and not app.shown_partial)
        await pilot.press("escape")

    run(app, scenario)
    mine = [d for d in drawn if d[0] == "tangerine"]
    assert [p for _, p, _ in mine] == [True, False]  # the first page, then the answer
    assert "first page" in mine[0][2] and "not ranked" in mine[0][2]
    assert "first page" not in mine[1][2]
    assert full_runs == ["run"]  # the full ranking went on meanwhile (not begun again)
    plain = model.results(demo_home, "tangerine", model.Filters())
    assert [r.key for r in app.rows] == [r.key for r in plain.rows]


def test_f6_searches_by_meaning(demo_home: Home) -> None:
    """F6 steps words → hybrid → meaning; a paraphrase that shares no word with the demo's
    opencode prompt finds it by meaning (the real model, the demo embedded first)."""
    from cli.services.search import embed

    assert embed(demo_home)["total"] > 0  # (`agentlog demo` embeds too)
    app = app_of(demo_home)

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"retry dropped live connection")
        await settle(pilot, lambda: app.shown is not None
                     and app.shown[0] == "retry dropped live connection")
        assert app.rows == []  # words: no document holds them all
        await pilot.press("f6", "f6")
        await settle(pilot, lambda: app.shown is not None and app.shown[1].mode == "meaning"
                     and bool(app.rows))
        assert app.rows[0].agent == "opencode"

    run(app, scenario)


def test_a_preview_finished_after_the_user_left_is_dropped(demo_home: Home) -> None:
    """The preview worker may finish after the app stopped (Escape while a window is read)
    or after its pane is gone: neither raises (call_from_thread raised "App is not running",
    and the draw's query_one NoMatches('#preview'))."""
    import threading

    app = app_of(demo_home)
    got: list[model.Row] = []

    async def scenario(pilot: Pilot[Any]) -> None:
        await pilot.press(*"tangerine")
        await settle(pilot, lambda: app.previewed is not None and bool(app.rows))
        got.append(app.rows[0])
        await settle(pilot, lambda: "tangerine" in preview_text(app).lower())
        await app.query_one("#preview").remove()
        app._draw(got[0], None, [])  # the pane is gone: nothing to draw into
        await pilot.press("escape")

    run(app, scenario)
    errors: list[BaseException] = []

    def late() -> None:
        try:
            app._load(got[0], None, False, 80, app._keys)
        except BaseException as exc:  # the test reports it
            errors.append(exc)

    worker = threading.Thread(target=late)
    worker.start()
    worker.join(30)
    assert not worker.is_alive() and errors == []
