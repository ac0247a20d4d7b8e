"""Amp (Sourcegraph) threads → records.

Root: `~/.local/share/amp` (`$XDG_DATA_HOME/amp`). Layouts:
- `amp.thread`: `threads/T-<uuid>.json`, one JSON object per thread, rewritten in place as the
  thread grows (captured as whole-file snapshots);
- `amp.history`: `history.jsonl`, one JSON string per prompt, append-only. Captured for the raw
  log and restore; its lines are understood and skipped (the same prompts are in the threads).

Promises (pure, never raise):
- session = the thread id (`T-…`); project = the path of the first `env.initial.trees[].uri`
  (`file://` URI, percent-decoded); the thread `title` is a SessionTitle;
- one record per content block: uid "amp:<thread>:<messageId>#<block index>", so a rewritten
  thread replaces its earlier records. text → the message's role; thinking → thinking;
  tool_use → tool_use (`name`, compact JSON `input`); tool_result → tool_result (`run.result`,
  else `run.progress`), with the tool's name learned from its tool_use in the same thread;
- time: a user message's `meta.sentAt`; an assistant message's `usageLedger` inference event
  whose `toMessageId` is that message; else the time of the message before it; else the
  thread's `created` (ms). Amp writes no per-message time for assistant turns otherwise.
- unknown roles and block types are counted as "amp:role:<r>" / "amp:block:<type>".
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from readers.parse_common import (
    MAX_TITLE,
    compact_json,
    iso_ms,
    load_json,
    load_object,
    make_record,
    str_or_none,
    text_of,
)
from readers.records import ParseResult, SessionTitle, SourceInfo

AGENT = "amp"
EXAMPLE_PATHS = {"amp.thread": "threads/T-16c2227a.json", "amp.history": "history.jsonl"}


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if len(parts) == 2 and parts[0] == "threads" and name.startswith("T-") and name.endswith(
        ".json"
    ):
        return "amp.thread"
    if parts == ["history.jsonl"]:
        return "amp.history"
    return None


def descend(rel_dir: str) -> bool:
    return rel_dir == "threads"


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    if isinstance(load_json(line), str):
        result.skipped += 1  # a prompt; the thread holds it with its session
    elif line.strip():
        result.count_unknown("amp:history-line")
    else:
        result.skipped += 1
    return result


def project_of_env(env: Any) -> str | None:
    initial = env.get("initial") if isinstance(env, dict) else None
    trees = initial.get("trees") if isinstance(initial, dict) else None
    if not isinstance(trees, list):
        return None
    for tree in trees:
        uri = tree.get("uri") if isinstance(tree, dict) else None
        if isinstance(uri, str) and uri.startswith("file://"):
            path = unquote(urlparse(uri).path)
            if len(path) >= 3 and path[0] == "/" and path[2] == ":":
                path = path[1:]  # file:///c:/… is a Windows path
            return str_or_none(path, 4096)
    return None


def _ledger_times(ledger: Any) -> dict[int, int]:
    events = ledger.get("events") if isinstance(ledger, dict) else None
    out: dict[int, int] = {}
    if not isinstance(events, list):
        return out
    for event in events:
        if not isinstance(event, dict) or event.get("operationType") != "inference":
            continue
        to = event.get("toMessageId")
        at = iso_ms(event.get("timestamp"))
        if isinstance(to, int) and at is not None:
            out.setdefault(to, at)
    return out


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    thread = load_object(data)
    if thread is None:
        result.count_unknown("amp:undecodable")
        return result
    session = str_or_none(thread.get("id"), 200)
    if session is None:
        name = source.path.rsplit("/", 1)[-1]
        session = name[:-5] if name.endswith(".json") else name
    project = project_of_env(thread.get("env"))
    title = text_of(thread.get("title"), MAX_TITLE).strip()
    if title:
        result.titles.append(
            SessionTitle(agent=AGENT, session=session, title=title, project=project, kind="title")
        )
    messages = thread.get("messages")
    if not isinstance(messages, list):
        result.count_unknown("amp:messages")
        return result
    ledger = _ledger_times(thread.get("usageLedger"))
    last_at = iso_ms(thread.get("created"))
    tools: dict[str, str] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            result.count_unknown("amp:message")
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            result.count_unknown(f"amp:role:{str(role)[:64]}")
            continue
        mid = message.get("messageId")
        mid = mid if isinstance(mid, int | str) and not isinstance(mid, bool) else index
        meta = message.get("meta")
        at = iso_ms(meta.get("sentAt")) if isinstance(meta, dict) else None
        if at is None and isinstance(mid, int):
            at = ledger.get(mid)
        at = at or last_at
        last_at = at
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            result.count_unknown("amp:content")
            continue
        base = {"agent": AGENT, "session": session, "project": project, "at": at,
                "cursor": f"{mid}"}
        for i, block in enumerate(content):
            _block(block, f"amp:{session}:{mid}#{i}", str(role), tools, base, result)
    return result


def _block(
    block: Any, uid: str, role: str, tools: dict[str, str], base: dict[str, Any],
    result: ParseResult,
) -> None:
    btype = block.get("type") if isinstance(block, dict) else None
    if not isinstance(block, dict) or not isinstance(btype, str):
        result.count_unknown("amp:block")
        return
    if btype in ("text", "thinking"):
        text = text_of(block.get(btype))
        if not text.strip():
            result.skipped += 1
            return
        kind = role if btype == "text" else "thinking"
        result.records.append(make_record(uid=uid, role=kind, text=text, **base))
    elif btype == "tool_use":
        name = str_or_none(block.get("name"), 200) or "tool"
        call = str_or_none(block.get("id"), 200)
        if call:
            tools[call] = name
        tool_input = compact_json(block.get("input")) if block.get("input") is not None else ""
        result.records.append(
            make_record(uid=uid, role="tool_use", text=f"{name} {tool_input}".strip(), tool=name,
                        tool_input=tool_input or None, **base)
        )
    elif btype == "tool_result":
        call = str_or_none(block.get("toolUseID"), 200)
        name = tools.get(call or "") or "tool"
        run = block.get("run")
        output: Any = None
        if isinstance(run, dict):
            output = run.get("result")
            if output is None:
                output = run.get("progress")
            if output is None:
                output = run.get("error")
        text = (text_of(output) if isinstance(output, str)
                else compact_json(output) if output else "")
        if not text.strip():
            result.skipped += 1
            return
        result.records.append(
            make_record(uid=uid, role="tool_result", text=text, tool=name, **base)
        )
    elif btype in ("image", "redacted_thinking"):
        result.skipped += 1
    else:
        result.count_unknown(f"amp:block:{btype[:64]}")
