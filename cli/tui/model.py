"""What the browser shows, without Textual: result rows for a query and its filters, a
conversation window around a hit, the choice Enter makes.

Promises:
- `results` answers with the rows of `cli.services.search.find` (the search of
  `agentlog search`, every filter it has) or, for an empty query with a project chosen, that
  project's sessions, newest first (`projections.sessions.sessions_of`); a query the search
  refuses (no searchable word, a bad filter) is a `Rows` with `problem` set, never raised;
  a search stopped by its `cancel` (a newer query superseded it) raises
  `projections.errors.Interrupted`: it has no rows to show, and is no problem;
- `window` reads the conversation through `cli.services.calls.conversation` (MCP's and the
  page's call) page by page until the hit is found (at most `MAX_ITEMS` items) and keeps
  `BEFORE` items before it and `AFTER` after it (the preview draws a bounded window);
- `choice` is what Enter does: the session's resume command (`cli.services.resume`, the one
  source) with the folder to run it in, or the `agentlog conversation` command to read it
  when its agent has no resume.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home
    from projections.cancel import Cancel

LIMIT = 30
PAGE = 100
MAX_ITEMS = 1000
BEFORE = 15
AFTER = 45
DAY_MS = 86_400_000
# (label, how far back in ms, None = any time)
TIMES: tuple[tuple[str, int | None], ...] = (
    ("any time", None), ("last 24 hours", DAY_MS), ("last 7 days", 7 * DAY_MS),
    ("last 30 days", 30 * DAY_MS), ("last year", 365 * DAY_MS))


MODES = ("words", "hybrid", "meaning")  # F6 steps through them


@dataclass(frozen=True)
class Filters:
    agent: str | None = None
    project: str | None = None
    within_ms: int | None = None  # one of TIMES
    kind: str | None = None
    mode: str = "words"  # one of MODES (F6): words as you type, or by meaning too

    def options(self, now_ms: int) -> dict[str, str]:
        """The `find` options (`agentlog search`'s flags) of these filters."""
        out = {"agent": self.agent, "project": self.project, "kind": self.kind,
               "since": str(now_ms - self.within_ms) if self.within_ms else None}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class Row:
    """One line of the results: a search hit or (empty query) a session of the project."""
    key: str
    at: int | None
    agent: str
    project: str | None
    text: str
    conversation: str | None
    session: str | None
    hit: str | None = None  # the document id a search hit points at


@dataclass
class Rows:
    query: str
    filters: Filters
    rows: list[Row] = field(default_factory=list)
    problem: str | None = None
    note: str = ""
    partial: bool = False  # the latest matches, not ranked yet (`results(latest=True)`)


def results(home: Home, query: str, filters: Filters, *, now_ms: int | None = None,
            catch_up: bool = False, cancel: Cancel | None = None,
            latest: bool = False) -> Rows:
    """The rows for `query` under `filters` (see the module's promises); history.db is
    caught up first only with `catch_up` (the command catches up once, before the app);
    `cancel` stops the search from another thread (`Interrupted` raised); with `latest`, the
    latest captured matches, not ranked (`partial` set: a first page, labelled so)."""
    from cli.services.errors import AgentlogError
    from projections.errors import Interrupted, ProjectionError

    now = int(time.time() * 1000) if now_ms is None else now_ms
    out = Rows(query, filters)
    try:
        if query.strip():
            from cli.services.search import find

            # words by default: a scan by meaning per keystroke costs more than a keystroke's
            # budget on a big home; F6 asks for it (docs/browse.md)
            found = find(home, query, filters.options(now), LIMIT, catch_up=catch_up,
                         cancel=cancel, latest=latest and filters.mode == "words",
                         mode=filters.mode)
            out.rows = [_hit_row(h) for h in found["hits"]]
            how = found["engine"] + ("" if filters.mode == "words" else f" · {filters.mode}")
            out.note = f"{len(out.rows)} hit(s) [{how}]"
            if found.get("unranked"):
                out.partial = True
                out.note = (f"first page: {len(out.rows)} of the latest matches, newest first,"
                            f" not ranked yet; ranking every match… [{found['engine']}]")
        elif filters.project:
            out.rows = _session_rows(home, filters, now)
            out.note = f"{len(out.rows)} session(s) of {filters.project}"
        else:
            out.note = "type to search; choose a project to list its sessions"
    except Interrupted:
        raise  # superseded: nothing to show, and no problem
    except (ProjectionError, AgentlogError) as exc:
        out.problem = getattr(exc, "message", None) or str(exc)
        param = getattr(exc, "param", None)
        if param and not out.problem.startswith(param):
            out.problem = f"{param}: {out.problem}"
    return out


def _hit_row(hit: dict[str, Any]) -> Row:
    return Row(key=str(hit["id"]), at=hit.get("at"), agent=str(hit.get("agent") or "?"),
               project=hit.get("project"), text=" ".join(str(hit.get("snippet") or "").split()),
               conversation=hit.get("conversation"), session=hit.get("session"),
               hit=str(hit["id"]))


def _session_rows(home: Home, filters: Filters, now: int) -> list[Row]:
    from cli.services import calls
    from projections.sessions import sessions_of

    assert filters.project is not None
    found = calls._call(sessions_of, home.history_db, filters.project)
    since = now - filters.within_ms if filters.within_ms else None
    rows = []
    for s in found["sessions"]:
        if filters.agent and s["agent"] != filters.agent:
            continue
        if since is not None and (s.get("at") or 0) < since:
            continue
        text = s.get("heading") or s.get("title") or s.get("firstPrompt") or s["sessionId"]
        rows.append(Row(key=f"{s['agent']}:{s['sessionId']}", at=s.get("at"),
                        agent=s["agent"], project=filters.project, text=" ".join(text.split()),
                        conversation=s.get("conversation"), session=s["sessionId"]))
    return rows


@dataclass
class Window:
    conversation: str
    items: list[dict[str, Any]]
    focus: int | None  # index of the hit in items
    resume: dict[str, Any] | None
    more: bool  # items follow beyond the window


def window(home: Home, conversation: str, hit: str | None = None) -> Window:
    """The items around `hit` (or the first page) of a conversation."""
    from cli.services import calls

    items: list[dict[str, Any]] = []
    after: str | None = None
    resume = None
    focus = None
    while True:
        page = calls.conversation(home, conversation, after, PAGE)
        if resume is None:
            resume = page.get("resume")
        items.extend(page["items"])
        after = page["next"]
        if hit is not None and focus is None:
            focus = next((i for i, it in enumerate(items) if it.get("id") == hit), None)
        done = hit is None or focus is not None
        if after is None or len(items) >= MAX_ITEMS or (done and len(items) >= PAGE):
            break
    start = max(0, (focus or 0) - BEFORE)
    end = (focus or 0) + AFTER
    return Window(conversation, items[start:end], None if focus is None else focus - start,
                  resume, after is not None or end < len(items))


@dataclass(frozen=True)
class Choice:
    """What Enter chose: run `argv` in `cwd`, or (no resume) show `command`."""
    agent: str
    session: str | None
    conversation: str | None
    argv: list[str] | None
    cwd: str | None
    command: str  # the line to print or paste


def choice(row: Row) -> Choice:
    from cli.services.resume import resume, shell_line

    found = resume(row.agent, row.session)
    if found is not None:
        return Choice(row.agent, row.session, row.conversation, list(found["argv"]),
                      row.project, shell_line(found, row.project))
    import shlex

    target = row.conversation or row.session or row.key
    return Choice(row.agent, row.session, row.conversation, None, row.project,
                  f"agentlog conversation {shlex.quote(target)}")
