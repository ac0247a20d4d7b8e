"""Readable transcripts: a session or a project as markdown or one self-contained HTML file.

Promises:
- the items are the conversation as `get_conversation` pages it (`calls.conversation`,
  every page), oldest first; a session's subagent threads are placed under the call that
  started them (`projections.sessions.session_info`'s `parent`), as the page places them;
- HTML is built from the same blocks as the dashboard's reader (`static/reader.js`):
  `li.item.role-<role>`, a `.meta` line, markdown turns as `.md` rendered and cleaned by
  `cli.services.render.to_html` (markdown-it-py, raw HTML off, nh3 allowlist), tool calls,
  results and thinking folded in `details` with a `summary.call-line`, the resume command in
  `.resume`. Every other text is escaped. The file carries the reader's stylesheet inline
  (`render.stylesheet()`, which the page serves as /static/reader.css: one source) and a
  Content-Security-Policy of `default-src 'none'`: it loads nothing, runs nothing, and opens
  offline;
- markdown keeps each turn's text as written (it is markdown already) under a heading with
  role, agent and time; tool calls, results and thinking are folded in `<details>` with
  their text in a fence longer than any backtick run inside it;
- titles are the session's own title, else its first user prompt, else its id.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home

PAGE = 100
FOLDED = ("tool_use", "tool_result", "thinking")


@dataclass
class Transcript:
    title: str
    agent: str | None
    session: str | None
    project: str | None
    conversation: str
    items: list[dict[str, Any]]
    resume: dict[str, Any] | None
    # subagent threads by the id of the call that started them (None: no call found)
    threads: dict[str | None, list[Transcript]] = field(default_factory=dict)


def _all_items(home: Home, conversation: str) -> tuple[list[dict[str, Any]], Any]:
    from cli.services import calls

    items: list[dict[str, Any]] = []
    after = None
    resume = None
    while True:
        page = calls.conversation(home, conversation, after, PAGE)
        resume = resume or page.get("resume")
        items.extend(page["items"])
        after = page["next"]
        if after is None:
            return items, resume


def _title(title: str | None, items: list[dict[str, Any]], fallback: str) -> str:
    """The session's `heading` (projections.sessions: the page's and the browser's too)."""
    from projections.sessions import heading

    first = next((i for i in items if i.get("role") == "user" and i.get("text")), None)
    return heading(title, str(first["text"]) if first else None, fallback)


def session_transcript(home: Home, ident: str) -> Transcript:
    """The transcript of a session (a session id or a conversation id), subagents included.
    Raises `cli.services.errors.NotFound` for an unknown id."""
    from cli.services import calls
    from projections.sessions import session_info

    items, resume = _all_items(home, ident)
    first = next((i for i in items if i.get("session")), items[0] if items else {})
    agent, session = first.get("agent"), first.get("session")
    project = next((i["project"] for i in items if i.get("project")), None)
    info = None
    if agent and session:
        info = calls._call(session_info, home.history_db, agent, session)
    conv = str(items[0].get("conversation") or ident) if items else ident
    out = Transcript(_title(info["title"] if info else None, items, session or ident), agent,
                     session, project, conv, items, resume)
    own = {i.get("id") for i in items}
    for sub in (info or {}).get("subagents", []):
        if sub["conversation"] == conv or sub["conversation"] in own:
            continue
        sub_items, _ = _all_items(home, sub["conversation"])
        name = sub.get("name") or sub["subagent"]
        thread = Transcript(f"subagent {name}", agent, session, project, sub["conversation"],
                            sub_items, None)
        out.threads.setdefault(sub.get("parent"), []).append(thread)
    return out


def project_transcripts(home: Home, project: str, *, include_archived: bool = False
                        ) -> list[Transcript]:
    """Every session of `project`, newest activity first. Raises `BadInput` naming the known
    projects when `project` is unknown."""
    from cli.services import calls
    from cli.services.errors import BadInput
    from projections.project_key import project_key
    from projections.sessions import known_projects, sessions_of, unknown_project_hint

    project = project_key(project)
    known = known_projects(home.history_db)
    if project not in known:
        raise BadInput(f"--project: unknown project {project!r}", unknown_project_hint(known))
    found = calls._call(sessions_of, home.history_db, project,
                        include_archived=include_archived)
    return [session_transcript(home, s["conversation"] or s["sessionId"])
            for s in found["sessions"]]


# --- shared ---------------------------------------------------------------------------
def when(ms: Any) -> str:
    """The page's time format (`Reader.fmtTime`): UTC, to the second."""
    if not isinstance(ms, int):
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _first_line(text: str, n: int) -> str:
    line = next((ln for ln in text.split("\n") if ln.strip()), "")
    return line if len(line) <= n else line[: n - 1] + "…"


def folded_line(item: dict[str, Any]) -> str:
    """The summary line of a folded item, as the page writes it."""
    from cli.services.render import summary

    text = str(item.get("text") or "")
    role = item.get("role")
    if role == "tool_use":
        return f"▸ {summary(text, item.get('tool'))}  {when(item.get('at'))}"
    if role == "tool_result":
        tool = f" · {item['tool']}" if item.get("tool") else ""
        return f"result{tool} · {_first_line(text, 120)}"
    return f"thinking · {_first_line(text, 120)}"


def _who(item: dict[str, Any]) -> str:
    return str(item.get("role") or item.get("kind") or "")


def _credit() -> str:
    from cli import VERSION

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"exported by agentlog {VERSION} at {now}"


# --- markdown -------------------------------------------------------------------------
def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{text}\n{ticks}"


def _md_items(t: Transcript, level: int) -> list[str]:
    out: list[str] = []
    hashes = "#" * level
    for item in t.items:
        role = _who(item)
        text = str(item.get("text") or "")
        if role in FOLDED:
            from cli.services.render import markdown_result

            plain = role == "tool_use" or (role == "tool_result" and not markdown_result(item))
            body = _fence(text) if plain else text
            out.append(f"<details><summary>{html.escape(folded_line(item))}</summary>\n\n"
                       f"{body}\n\n</details>\n")
        else:
            head = f"{hashes} {role}"
            if item.get("subagent"):
                head += f" [{item.get('subagent_name') or item['subagent']}]"
            out.append(f"{head} · {item.get('agent') or ''} · {when(item.get('at'))}\n\n{text}\n")
        if item.get("truncated"):
            out.append("*(shortened; the full record is kept in the log)*\n")
        for thread in t.threads.get(item.get("id"), []):
            out.append(f"<details><summary>{html.escape(thread.title)}</summary>\n")
            out.extend(_md_items(thread, level + 1))
            out.append("</details>\n")
    return out


def _md_session(t: Transcript, level: int) -> list[str]:
    from cli.services.resume import shell_line

    facts = [f"agent: {t.agent or '-'}", f"project: `{t.project or '-'}`",
             f"session: `{t.session or t.conversation}`"]
    out = [f"{'#' * level} {t.title}\n", "- " + " · ".join(facts)]
    if t.resume:
        out.append(f"- resume: `{shell_line(t.resume)}`")
    out.append("")
    out.extend(_md_items(t, level + 1))
    for orphan in t.threads.get(None, []):
        out.append(f"{'#' * (level + 1)} {orphan.title}\n")
        out.extend(_md_items(orphan, level + 2))
    return out


def to_markdown(transcripts: list[Transcript], title: str | None = None) -> str:
    """One markdown document: a session, or (with `title`) a project's sessions."""
    out: list[str] = []
    level = 1
    if title is not None:
        out += [f"# {title}\n", f"{len(transcripts)} session(s) · {_credit()}\n"]
        level = 2
    for t in transcripts:
        out += _md_session(t, level)
        out.append("---\n")
    if title is None:
        out.append(f"*{_credit()}*\n")
    return "\n".join(out)


# --- HTML -----------------------------------------------------------------------------
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'"
_ROLE = re.compile(r"[^a-z_]")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _meta(item: dict[str, Any]) -> str:
    parts = []
    who = _who(item)
    if who:
        parts.append(f'<span class="pill">{_e(who)}</span>')
    if item.get("tool") and item.get("role") != "tool_use":
        parts.append(f'<span class="pill">{_e(item["tool"])}</span>')
    if item.get("subagent_name") or item.get("subagent"):
        name = item.get("subagent_name") or item["subagent"]
        parts.append(f'<span class="field">subagent {_e(name)}</span>')
    if item.get("agent"):
        parts.append(f'<span class="field">{_e(item["agent"])}</span>')
    parts.append(f"<time>{_e(when(item.get('at')))}</time>")
    return f'<div class="meta">{"".join(parts)}</div>'


def _body(item: dict[str, Any]) -> str:
    """The page's body of a turn: rendered markdown (`.md`) or the text as `pre.body`."""
    from cli.services.render import readable

    shown = readable(dict(item))
    if isinstance(shown.get("html"), str):
        return f'<div class="md">{shown["html"]}</div>'
    return f'<pre class="body">{_e(item.get("text") or "")}</pre>'


def _html_item(item: dict[str, Any], t: Transcript) -> str:
    role = _ROLE.sub("", _who(item))
    text = str(item.get("text") or "")
    inner: str
    if role in FOLDED:
        cls = {"tool_use": "call", "tool_result": "result", "thinking": "thinking"}[role]
        body = (f'<pre class="body">{_e(text)}</pre>' if role == "tool_use" else _body(item))
        inner = (f'<details class="{cls}"><summary class="call-line">'
                 f"{_e(folded_line(item))}</summary>{body}</details>")
    else:
        inner = _meta(item) + _body(item)
    if item.get("truncated"):
        inner += ('<p class="muted truncated">(shortened; the full record is kept in the log)'
                  "</p>")
    for thread in t.threads.get(item.get("id"), []):
        inner += (f'<details class="subagent"><summary class="call-line">{_e(thread.title)}'
                  f'</summary><ol class="items">{_html_items(thread)}</ol></details>')
    return f'<li class="item role-{role}">{inner}</li>'


def _html_items(t: Transcript) -> str:
    return "".join(_html_item(item, t) for item in t.items)


def _html_session(t: Transcript, heading: str) -> str:
    from cli.services.resume import shell_line

    facts = " · ".join(f"{k} {_e(v)}" for k, v in (
        ("agent", t.agent or "-"), ("project", t.project or "-"),
        ("session", t.session or t.conversation)))
    resume = (f'<div class="resume"><span class="muted">Resume: </span>'
              f'<code class="resume-command">{_e(shell_line(t.resume))}</code></div>'
              if t.resume else "")
    orphans = "".join(
        f'<details class="subagent"><summary class="call-line">{_e(o.title)}</summary>'
        f'<ol class="items">{_html_items(o)}</ol></details>' for o in t.threads.get(None, []))
    return (f'<section class="session"><header class="session"><{heading}>{_e(t.title)}'
            f'</{heading}><p class="muted">{facts}</p>{resume}</header>'
            f'<ol class="items">{_html_items(t)}</ol>{orphans}</section>')


def to_html(transcripts: list[Transcript], title: str | None = None) -> str:
    """One self-contained HTML file (inline CSS, no script, nothing loaded)."""
    from cli.services.render import stylesheet

    heading = "h2" if title is not None else "h1"
    page_title = title if title is not None else (transcripts[0].title if transcripts else "")
    top = (f'<header class="session"><h1>{_e(title)}</h1><p class="muted">'
           f"{len(transcripts)} session(s)</p></header>" if title is not None else "")
    body = "".join(_html_session(t, heading) for t in transcripts)
    return ("<!doctype html>\n"
            f'<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(page_title)}</title><style>{stylesheet()}</style></head>"
            f"<body><main>{top}{body}</main>"
            f'<footer class="muted">{_e(_credit())}</footer></body></html>\n')
