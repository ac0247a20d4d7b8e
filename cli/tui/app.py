"""The browser's Textual app: a query line, filters, results and a preview pane.

Promises:
- keyboard first: the query line has the focus; every keystroke (and every filter change)
  searches again on the app's one search thread (its read connection to history.db opened
  once, `projections.query`'s per-thread connection), one search at a time, the newest query
  asked for meanwhile next (the ones typed past are never run), a query that differs from
  the last one answered only in whitespace answered at once with its rows; only the newest
  query's answer is drawn (a late answer to an older query is dropped);
- a keystroke that changes the words or the filters stops the search in flight: each search
  has its own `projections.cancel.Cancel`, and the key's handler cancels it
  (`sqlite3.Connection.interrupt()` on the search thread's connection and its ranking
  threads'); the stopped search raises `Interrupted`, which the search thread drops (it is
  superseded, never an error shown) before it runs the newest query; `interrupted` counts
  them;
- while a search ranks every match for longer than `FIRST_AFTER` seconds (several common
  words on a large history), a first page is drawn meanwhile: the latest captured matches,
  newest first, NOT ranked (`projections.query.search(latest=True)`, a bounded query of a
  few milliseconds), made on the app's first-page thread (a read connection of its own),
  labelled "first page … not ranked yet" in the status line (`shown_partial`) and replaced
  by the full ranking's answer when it comes (a first page later than the answer is
  dropped; the answer stops its making);
- while the user rests (`UPKEEP_IDLE` seconds without a keystroke, no search running) the
  app makes the ranking lists history.db still wants, one bounded step at a time on a
  thread of its own (`cli.services.search.keep_lists`, the capture loop's idle step): a
  home captured without a capture loop running (no `serve`, `mcp` or `capture --watch`)
  would otherwise rank every match of a common word at each keystroke;
- ↓ moves to the results, F2–F5 to the filters,
  Ctrl+O unfolds tool calls, Enter chooses the highlighted session, Escape leaves;
- the preview shows the highlighted hit's conversation around the hit (`model.window`),
  the hit marked and scrolled to, and the session's resume command; it is loaded once the
  highlight rests `PREVIEW_DELAY` seconds, so typing never waits on it;
- `App.return_value` is the `model.Choice` Enter made, or None: the command runs it, the
  app never starts another program itself.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Select, Static

from cli.tui import model
from cli.tui.preview import as_text, render, when

if TYPE_CHECKING:
    from textual.timer import Timer

    from cli.services.config import Home
    from projections.cancel import Cancel

SNIPPET_CHARS = 120
PROJECT_CHARS = 14


def short_project(project: str | None) -> str:
    """The project's last folder name (POSIX or Windows path), at most `PROJECT_CHARS`."""
    import re

    name = next((p for p in reversed(re.split(r"[\\/]", project or "")) if p), "-")
    return name if len(name) <= PROJECT_CHARS else name[: PROJECT_CHARS - 1] + "…"
PREVIEW_DELAY = 0.12
UPKEEP_IDLE = 0.5  # seconds without a keystroke before a step of ranking-list upkeep
FIRST_AFTER = 0.06  # seconds of full ranking after which a first page is drawn meanwhile


def same(a: tuple[str, model.Filters], b: tuple[str, model.Filters]) -> bool:
    """Whether two (query, filters) ask the same: the filters equal, the query differing
    only in whitespace."""
    return a[1] == b[1] and " ".join(a[0].split()) == " ".join(b[0].split())


class Answered(Message):
    """The search thread's answer to a query."""

    def __init__(self, rows: model.Rows) -> None:
        super().__init__()
        self.rows = rows


class Previewed(Message):
    """The preview worker's rendering of a row's conversation window."""

    def __init__(self, row: model.Row, found: model.Window | None,
                 drawn: list[tuple[Text, bool]]) -> None:
        super().__init__()
        self.row, self.found, self.drawn = row, found, drawn


class BrowseApp(App[model.Choice]):
    TITLE = "agentlog browse"
    CSS = """
    #query { height: 3; }
    #filters { height: 3; }
    #filters Select { width: 1fr; }
    #body { height: 1fr; }
    #results { width: 1fr; }
    #preview { width: 1fr; border-left: solid $primary; padding: 0 1; }
    #preview .item { margin-bottom: 1; }
    #status { dock: bottom; height: 2; color: $text-muted; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "quit", "Quit"),
        Binding("enter", "choose", "Resume", show=True, priority=False),
        Binding("down", "results", "Results", show=False),
        Binding("f2", "focus_filter('agent')", "Agent"),
        Binding("f3", "focus_filter('project')", "Project"),
        Binding("f4", "focus_filter('time')", "Time"),
        Binding("f5", "focus_filter('kind')", "Kind"),
        Binding("f6", "mode", "Words/meaning"),
        Binding("ctrl+o", "unfold", "Unfold tools"),
        Binding("ctrl+l", "query", "Query", show=False),
    ]

    def __init__(self, home: Home, *, query: str = "", filters: model.Filters | None = None,
                 projects: list[str] | None = None, agents: list[str] | None = None) -> None:
        super().__init__()
        self.home = home
        self.initial = query
        self.filters = filters or model.Filters()
        self.mode = self.filters.mode  # F6: words → hybrid → meaning
        self.projects = projects or []
        self.agents = agents or []
        self.rows: list[model.Row] = []
        self.shown: tuple[str, model.Filters] | None = None  # what the results answer
        self.shown_partial = False  # the results are a first page (the newest matches only)
        self.previewed: str | None = None  # the row key the preview shows
        self.unfold = False
        self._window: model.Window | None = None
        self._pending: Timer | None = None
        self._keys = 0  # queries asked (keystrokes, filter changes): a preview made before
        # the latest is abandoned (`_load`)
        self.searches = 0  # searches answered (the first one catches history.db up)
        self._wake = threading.Condition()
        self._wanted: tuple[str, model.Filters] | None = None  # the next search to run
        self._searching = False
        self._inflight: tuple[tuple[str, model.Filters], Cancel] | None = None  # in flight
        self._first_inflight: tuple[tuple[str, model.Filters], Cancel] | None = None
        # the query whose first page is wanted, and from when (the full ranking's start +
        # FIRST_AFTER)
        self._first_asked: tuple[tuple[str, model.Filters], float] | None = None
        self.interrupted = 0  # searches stopped because a newer query superseded them
        self._asked = time.monotonic()  # when the last search was asked for
        self._stopping = False
        self._threads: list[threading.Thread] = []

    # --- layout -----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        from cli.services.calls import KINDS

        f = self.filters
        yield Input(value=self.initial, placeholder="search your agents' history…",
                    id="query")
        with Horizontal(id="filters"):
            yield Select([(a, a) for a in self.agents], prompt="any agent", id="agent",
                         value=f.agent if f.agent in self.agents else Select.NULL)
            yield Select([(p, p) for p in self.projects], prompt="any project", id="project",
                         value=f.project if f.project in self.projects else Select.NULL)
            yield Select([(label, ms) for label, ms in model.TIMES[1:]], prompt="any time",
                         id="time", value=f.within_ms if f.within_ms else Select.NULL)
            yield Select([(k, k) for k in KINDS], prompt="any kind", id="kind",
                         value=f.kind if f.kind in KINDS else Select.NULL)
        with Horizontal(id="body"):
            table: DataTable[str] = DataTable(id="results", cursor_type="row", zebra_stripes=True)
            yield table
            yield VerticalScroll(id="preview")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#results", DataTable)
        table.add_column("when", width=16)
        table.add_column("agent", width=8)
        table.add_column("project", width=PROJECT_CHARS)
        table.add_column("text")
        self.query_one("#query", Input).focus()
        # plain threads, not workers: they live as long as the app (a worker is a task that
        # ends); on_unmount stops them and waits for a list step to commit
        self._threads = [threading.Thread(target=self._searcher, name="browse-search",
                                          daemon=True),
                         threading.Thread(target=self._upkeep, name="browse-upkeep",
                                          daemon=True),
                         threading.Thread(target=self._first_pages, name="browse-first",
                                          daemon=True)]
        for thread in self._threads:
            thread.start()
        self.search()

    def on_unmount(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        for thread in self._threads:
            thread.join(timeout=10)

    # --- searching --------------------------------------------------------------------
    def current(self) -> tuple[str, model.Filters]:
        def value(sel_id: str) -> Any:
            v = self.query_one(f"#{sel_id}", Select).value
            return None if v is Select.NULL or v is Select.BLANK else v

        filters = model.Filters(agent=value("agent"), project=value("project"),
                                within_ms=value("time"), kind=value("kind"), mode=self.mode)
        return self.query_one("#query", Input).value, filters

    def action_mode(self) -> None:
        """F6: the next search mode (words, hybrid, meaning); the query runs again."""
        self.mode = model.MODES[(model.MODES.index(self.mode) + 1) % len(model.MODES)]
        self.notify(f"search by {self.mode}", timeout=2)
        self.search()

    @on(Input.Changed, "#query")
    @on(Select.Changed)
    def search(self) -> None:
        """Ask for the current query's results (the search thread runs the newest asked);
        the search in flight is stopped unless it asks the same (its words and filters)."""
        # typing is no rest: a preview waiting for one is not started, one being made is
        # abandoned (it would take the interpreter from the search and the drawing); the
        # answer's drawing asks for it again
        self._keys += 1
        self._stop_pending()
        with self._wake:
            self._wanted = self.current()
            self._asked = time.monotonic()
            for inflight in (self._inflight, self._first_inflight):
                if inflight is not None and not same(inflight[0], self._wanted):
                    inflight[1].cancel()
            if self._first_asked is not None and not same(self._first_asked[0],
                                                          self._wanted):
                self._first_asked = None
            self._wake.notify_all()  # all: the upkeep thread waits on it too

    def _searcher(self) -> None:
        """The search thread: one search at a time, the newest query asked for next; one
        read connection for the app's life (this thread's, `projections.query._open`); each
        search stoppable by its `Cancel` (`search` stops one a newer query supersedes)."""
        from cli.services.search import many_searches
        from projections.errors import Interrupted

        many_searches()  # (while the app draws itself: before the first key)
        last: model.Rows | None = None
        while True:
            with self._wake:
                while self._wanted is None and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                wanted, self._wanted = self._wanted, None
                self._searching = wanted is not None
            if wanted is None:
                continue
            query, filters = wanted
            try:
                if last is not None and same((last.query, last.filters), wanted):
                    # only whitespace differs: the same words, the same answer
                    rows = model.Rows(query, filters, last.rows, last.problem, last.note)
                else:
                    rows = self._ranked(wanted)
                    self.searches += 1
                last = rows
            except Interrupted:  # a newer query superseded it: nothing to draw
                self.interrupted += 1
                with self._wake:
                    if self._wanted is None:  # (never so: its Cancel only stops it) ask
                        self._wanted = wanted  # again rather than leave nothing drawn
                continue
            finally:
                with self._wake:
                    self._searching = False
            if self._stopping:
                return
            self.post_message(Answered(rows))  # thread-safe; never waits for the app

    def _ranked(self, wanted: tuple[str, model.Filters]) -> model.Rows:
        """The answer to `wanted` (every match ranked), on this thread's connection; the
        first-page thread is asked for a first page should it outlast `FIRST_AFTER`
        seconds. Raises `Interrupted` when a newer query supersedes it."""
        from projections.cancel import Cancel

        cancel = Cancel()
        # (not while the first search catches history.db up; a first page is the latest
        # matches of the words, so only in words mode)
        first = self.searches > 0 and wanted[1].mode == "words"
        with self._wake:
            self._inflight = (wanted, cancel)
            if self._wanted is not None and not same(wanted, self._wanted):
                cancel.cancel()  # superseded already (asked before it ran)
            elif first:
                self._first_asked = (wanted, time.monotonic() + FIRST_AFTER)
                self._wake.notify_all()
        try:
            return model.results(self.home, wanted[0], wanted[1],
                                 catch_up=self.searches == 0, cancel=cancel)
        finally:
            with self._wake:
                self._inflight = None
                self._first_asked = None
                if self._first_inflight is not None and same(self._first_inflight[0],
                                                             wanted):
                    self._first_inflight[1].cancel()  # the answer is here: no first page

    def _first_pages(self) -> None:
        """The first-page thread: when the search thread's full ranking of a query outlasts
        `FIRST_AFTER` seconds, the latest matches, unranked (`latest=True`), on a read
        connection of its own, drawn labelled while the full ranking goes on; stopped like
        a search by a newer query, and by the answer."""
        from projections.cancel import Cancel
        from projections.errors import Interrupted

        while True:
            with self._wake:
                while not self._stopping and (
                        self._first_asked is None
                        or time.monotonic() < self._first_asked[1]):
                    due = None if self._first_asked is None else (
                        self._first_asked[1] - time.monotonic())
                    self._wake.wait(due)
                if self._stopping:
                    return
                wanted, _ = self._first_asked  # type: ignore[misc]
                self._first_asked = None
                cancel = Cancel()
                self._first_inflight = (wanted, cancel)
            try:
                rows = model.results(self.home, wanted[0], wanted[1], cancel=cancel,
                                     latest=True)
            except Interrupted:
                continue
            finally:
                with self._wake:
                    self._first_inflight = None
            if self._stopping:
                return
            if not cancel.cancelled:
                self.post_message(Answered(rows))

    def on_answered(self, message: Answered) -> None:
        self._show_rows(message.rows)

    def _upkeep(self) -> None:
        """The upkeep thread: while the user rests, the ranking lists still wanted, one
        bounded step at a time, until none is wanted."""
        from cli.services.search import keep_lists

        while True:
            with self._wake:
                self._wake.wait(0.1)
                if self._stopping:
                    return
                resting = (not self._searching and self._wanted is None and self.searches
                           and time.monotonic() - self._asked >= UPKEEP_IDLE)
            if not resting:
                continue
            try:
                if not keep_lists(self.home):
                    return
            except Exception:  # the lists are a cache: a failure leaves the reader alone
                return

    def _show_rows(self, rows: model.Rows) -> None:
        if (rows.query, rows.filters) != self.current():
            return  # an older query's answer
        if rows.partial and self.shown == (rows.query, rows.filters) and not (
                self.shown_partial):
            return  # a first page late: the full ranking's answer is drawn already
        self.rows = rows.rows
        table = self.query_one("#results", DataTable)
        table.clear()
        for row in rows.rows:
            text = row.text if len(row.text) <= SNIPPET_CHARS else row.text[:SNIPPET_CHARS]
            # Text cells, never strings: a string cell is Rich markup, and a transcript's
            # "[/home/…]" ended the browser with a MarkupError (found under tmux)
            table.add_row(Text(when(row.at)), Text(row.agent[:8]),
                          Text(short_project(row.project)), Text(text), key=row.key)
        self.shown = (rows.query, rows.filters)
        self.shown_partial = rows.partial
        self.set_status(rows.problem or rows.note)
        if not rows.rows:
            self.previewed = None
            self.query_one("#preview", VerticalScroll).remove_children()
        else:
            self.preview(rows.rows[0])

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(Text(text))  # plain: it may quote a query

    # --- preview ----------------------------------------------------------------------
    def highlighted(self) -> model.Row | None:
        table = self.query_one("#results", DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row]

    @on(DataTable.RowHighlighted, "#results")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = self.highlighted()
        if row is not None and row.key != self.previewed:
            self.preview(row)

    def preview(self, row: model.Row) -> None:
        """Show `row`'s conversation once the results stay still for `PREVIEW_DELAY` s
        (typing fast draws no preview for the queries passed on the way)."""
        self.previewed = row.key
        self._stop_pending()
        self._pending = self.set_timer(PREVIEW_DELAY, lambda: self._start_preview(row))

    def _stop_pending(self) -> None:
        """The preview waiting for the highlight to rest is not started."""
        if self._pending is not None:
            self._pending.stop()
            self._pending = None

    def _start_preview(self, row: model.Row, found: model.Window | None = None) -> None:
        self._pending = None
        panes = self.query("#preview").results(VerticalScroll)
        pane = next(iter(panes), None)
        if row.key != self.previewed or pane is None:  # another row, or the app is closing
            return
        width = pane.size.width - 3
        unfold = self.unfold
        keys = self._keys
        self.run_worker(lambda: self._load(row, found, unfold, width, keys), thread=True,
                        exclusive=True, group="preview")

    def _load(self, row: model.Row, found: model.Window | None, unfold: bool,
              width: int, keys: int) -> None:
        """In a worker thread: read the window (unless given) and render its items; given
        up when a query is asked meanwhile (`keys` is no longer `_keys`)."""
        from cli.services.errors import AgentlogError

        if found is None and row.conversation is not None:
            try:
                found = model.window(self.home, row.conversation, row.hit)
            except AgentlogError:
                found = None
        drawn: list[tuple[Text, bool]] = []
        for i, item in enumerate(found.items if found is not None else []):
            if self._keys != keys:  # (the answer's drawing asks for a preview again)
                return
            hit = i == found.focus if found is not None else False
            drawn.append((as_text(render(item, unfold=unfold, hit=hit), width), hit))
        # a message, not call_from_thread: that raises once the app has stopped, and the user
        # may leave while a window is read
        self.post_message(Previewed(row, found, drawn))

    def on_previewed(self, message: Previewed) -> None:
        self._draw(message.row, message.found, message.drawn)

    def _draw(self, row: model.Row, found: model.Window | None,
              drawn: list[tuple[Text, bool]]) -> None:
        pane = next(iter(self.query("#preview").results(VerticalScroll)), None)
        if row.key != self.previewed or pane is None:  # another row, or the app is closing
            return
        self._window = found
        pane.remove_children()
        choice = model.choice(row)
        head = Static(f"{row.agent} · {row.project or '-'}\n⏎ {choice.command}",
                      classes="item head", markup=False)
        widgets: list[Static] = [head]
        focus: Static | None = None
        for text, hit in drawn:
            w = Static(text, classes="item")
            if hit:
                focus = w
            widgets.append(w)
        if found is not None and found.more:
            widgets.append(Static("… (more: agentlog conversation "
                                  f"{found.conversation})", classes="item", markup=False))
        pane.mount_all(widgets)
        if focus is not None:
            pane.call_after_refresh(pane.scroll_to_widget, focus, top=True, animate=False)
        else:
            pane.scroll_home(animate=False)

    # --- actions ----------------------------------------------------------------------
    def action_unfold(self) -> None:
        self.unfold = not self.unfold
        row = self.highlighted()
        if row is not None and row.key == self.previewed:
            self._start_preview(row, self._window)

    def action_results(self) -> None:
        self.query_one("#results", DataTable).focus()

    def action_query(self) -> None:
        self.query_one("#query", Input).focus()

    def action_focus_filter(self, name: str) -> None:
        self.query_one(f"#{name}", Select).focus()

    def action_choose(self) -> None:
        row = self.highlighted()
        if row is None:
            self.set_status("nothing to open: no result is highlighted")
            return
        self.exit(model.choice(row))

    @on(Input.Submitted, "#query")
    def _submitted(self) -> None:
        self.action_choose()

    @on(DataTable.RowSelected, "#results")
    def _selected(self) -> None:
        self.action_choose()
