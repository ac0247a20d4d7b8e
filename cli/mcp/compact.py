"""What an agent reads: the answers of the MCP tools, and their text block.

An MCP result is read by a model, so every character is paid for in its context (issue 29,
`bench/tokens.py`). Promises:
- `detail: "compact"` (the default) is the text block alone, no `structuredContent`: a
  client that reads both would pay for every hit twice, and one that reads only text needs
  everything in the text anyway. A hit is one line: its reference (`@<row>.<check>`,
  `projections.filters.hit_ref`, which `get_conversation` opens at the hit), time (the date
  only when it changes), role, snippet; a header line per run of hits of one session names
  agent, project, session (and host). A conversation page is one line per item: time,
  role (+ tool, subagent, folded/cut), text; what all items share said once; the `next`
  cursor and the resume command.
- `detail: "full"` is the seed's shape as `structuredContent`, exactly what
  `cli.services.calls` returns (the HTTP API's), with the same text block beside it.
- Pure: dicts in, dicts and strings out; no I/O, no clock but the formatting of times.
"""

from __future__ import annotations

import time
from typing import Any

SHARED_KEYS = ("agent", "session", "project", "kind")
TOOL_OUTPUT_ROLES = ("tool_result",)
FOLDED_CHARS = 80


def when(at: Any, *, date: bool = True, seconds: bool = False) -> str:
    """Epoch ms as `YYYY-MM-DD HH:MM[:SS]` UTC (`HH:MM:SS` without the date); '?' if
    unknown."""
    if not isinstance(at, int) or isinstance(at, bool):
        return "?"
    try:
        t = time.gmtime(at / 1000)
    except (OverflowError, OSError, ValueError):
        return "?"
    if not date:
        return time.strftime("%H:%M:%S", t)
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", t)


def _line(text: str, width: int) -> str:
    """`text` on one line, cut at `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


# --- search_history -------------------------------------------------------------------------


def coverage_line(cov: dict[str, Any]) -> str | None:
    """One line saying how far from current the answer is, or None when caught up."""
    reading = cov.get("reading")
    if isinstance(reading, str) and reading:
        return reading
    if cov.get("stale"):
        return "history.db differs from the log (agentlog verify found it): run agentlog reindex"
    if cov.get("caughtUp") or "caughtUp" not in cov:
        return None
    files, events = cov.get("pendingFiles"), cov.get("pendingEvents")
    if not cov.get("capturing"):
        return "no capture running: history may be behind (agentlog capture, or agentlog mcp)"
    parts = [f"{files:,} files" if files else "", f"{events:,} events" if events else ""]
    pending = " and ".join(p for p in parts if p)
    return ("history is being captured" + (f": {pending} pending" if pending else "")
            + "; later searches may find more")


def search_text(result: dict[str, Any], query: str) -> str:
    """The readable answer: one header line per session, one line a hit; then the
    `related` hits (by meaning, not containing every word) the same way."""
    hits = result.get("hits", [])
    engine = "" if result.get("engine", "fts5") == "fts5" else f", {result.get('engine')} engine"
    mode = result.get("mode", "words")
    by = "" if mode == "words" else f", by {mode}"
    lines = [f"{len(hits)} hits for {query!r} (times UTC{engine}{by})" if hits
             else f"no hits for {query!r}{engine}{by}"]
    _hit_lines(lines, hits)
    related = result.get("related") or []
    if related:
        lines.append(f"related by meaning (not every word of the query): {len(related)}")
        _hit_lines(lines, related)
    note = coverage_line(result.get("coverage") or {})
    if note:
        lines.append(note)
    answer = result.get("answer")
    if isinstance(answer, dict):
        if answer.get("text"):
            lines.append(f"answer: {answer['text']}")
        elif answer.get("error"):
            lines.append(f"answer: none ({answer['error']})")
    near = [" or ".join(words) for words in (result.get("suggestions") or {}).values()]
    if not hits and near:
        lines.append(f"did you mean: {'; '.join(near)}?")
    if hits or related:
        lines.append("read one in context: get_conversation(id=\"@ref\")")
    return "\n".join(lines)


def _hit_lines(lines: list[str], hits: list[dict[str, Any]]) -> None:
    """A header line per session (agent, project, session, host; sessions in the order of
    their best hit), then a line a hit, best first: its reference (or id), time (the date
    when it changes), role, snippet."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for h in hits:
        key = (h.get("agent"), h.get("session"), h.get("project"), h.get("host"))
        groups.setdefault(key, []).append(h)
    group: tuple[Any, ...] | None = None
    day = None
    for h in (h for run in groups.values() for h in run):
        key = (h.get("agent"), h.get("session"), h.get("project"), h.get("host"))
        if key != group:
            group = key
            head = [str(h.get("agent") or "?")]
            if h.get("project"):
                head.append(str(h["project"]))
            if h.get("session"):
                head.append(f"session {h['session']}")
            if h.get("host"):
                head.append(f"host {h['host']}")
            lines.append(" ".join(head))
        stamp = when(h.get("at"))
        if stamp[:10] == day:
            stamp = stamp[11:]
        day = stamp[:10] if len(stamp) > 10 else day
        role = f" {h['role']}" if h.get("role") else ""
        flag = " (archived)" if h.get("archived") else ""
        lines.append(f"{h.get('ref') or h.get('id')} {stamp}{role}{flag}: "
                     f"{_line(str(h.get('snippet') or ''), 400)}")


def search_answer(result: dict[str, Any], query: str, detail: str
                  ) -> tuple[dict[str, Any] | None, str]:
    """(structured content, text) of a `search_history` result: compact is the text alone."""
    if detail == "full":
        return result, search_text(result, query)
    return None, search_text(result, query)


# --- get_conversation -----------------------------------------------------------------------


def fold_items(items: list[dict[str, Any]], max_chars: int, tool_output: bool) -> None:
    """Cut each item's text at `max_chars` (`truncated: true`); without `tool_output`, a
    tool's output is folded to its first line (`folded`: the output's length)."""
    for it in items:
        text = str(it.get("text") or "")
        if not tool_output and it.get("role") in TOOL_OUTPUT_ROLES and len(text) > FOLDED_CHARS:
            it["text"] = _line(text, FOLDED_CHARS)
            it["folded"] = len(text)
        elif len(text) > max_chars:
            it["text"] = text[: max_chars - 1].rstrip() + "…"
            it["truncated"] = True


def shared(items: list[dict[str, Any]]) -> dict[str, Any]:
    """What every item of a page shares (agent, session, project, kind): said once."""
    out: dict[str, Any] = {}
    for key in SHARED_KEYS:
        values = {it.get(key) for it in items}
        if len(values) == 1 and None not in values:
            out[key] = values.pop()
    return out


def page_text(page: dict[str, Any]) -> str:
    items = page.get("items", [])
    common = shared(items)
    head = [str(common.get("agent") or ""), f"session {common['session']}"
            if common.get("session") else "", str(common.get("project") or "")]
    lines = [" ".join(h for h in head if h) or str(page.get("id")),
             f"{len(items)} items of {page.get('id')} (times UTC)"]
    day = None
    for it in items:
        d = when(it.get("at"))[:10]
        stamp = when(it.get("at"), date=d != day, seconds=True)
        day = d
        who = str(it.get("role") or it.get("kind") or "")
        if it.get("tool"):
            who += f" {it['tool']}"
        if it.get("subagent"):
            who += f" [{it.get('subagent_name') or it['subagent']}]"
        for key in SHARED_KEYS:
            if key not in common and it.get(key) and key != "kind":
                who += f" {key}={it[key]}"
        if it.get("folded"):
            who += f" (folded, {it['folded']:,} chars)"
        elif it.get("truncated"):
            who += " (cut)"
        lines.append(f"{stamp} {who}: {it.get('text') or ''}")
    if page.get("next"):
        lines.append(f"more: after={page['next']}")
    resume = page.get("resume")
    if isinstance(resume, dict) and resume.get("command"):
        cwd = f"cd {resume['cwd']} && " if resume.get("cwd") else ""
        lines.append(f"resume: {cwd}{resume['command']}")
    return "\n".join(lines)


def conversation_answer(
    page: dict[str, Any], detail: str, max_chars: int, tool_output: bool
) -> tuple[dict[str, Any] | None, str]:
    """(structured content, text) of a `get_conversation` page: compact is the text alone."""
    fold_items(page.get("items", []), max_chars, tool_output)
    text = page_text(page)
    return (page if detail == "full" else None), text
