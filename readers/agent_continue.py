"""Continue (`~/.continue/sessions/`): discovery and the pure parser.

Layouts (capture mode in readers/registry.py):
- `continue.session` (snapshot): `sessions/<sessionId>.json`, rewritten whole:
  `{sessionId, title, workspaceDirectory, history[], mode?, chatModelTitle?, usage?}`;
- `continue.index` (snapshot): `sessions/sessions.json`, `[{sessionId, title, dateCreated
  (ms as a string), workspaceDirectory, messageCount?}]` → titles and creation times.

Promises: pure and never raising. History items → user / assistant text, thinking
(`reasoning.text`), tool_use per `message.toolCalls`, tool_result per `toolCallStates[].output`
or `role: "tool"` message (uid by tool call id, so both collapse); `contextItems` (attached
files) and `editorState` are not indexed. uid `continue:<session>:<item index>` (+ `#…`).
Project: `workspaceDirectory` in both dialects — a plain path, a `file:///c%3A/…` URI, or a
`vscode-remote://dev-container+<hex JSON>` URI whose `hostPath` is the folder on the user's
machine (else the remote path) — Windows paths normalised to `C:\\…` so the dialects agree.
There are **no per-message timestamps**: records take the session's `dateCreated` from
`sessions.json` when it was read first (the sources share one state), else `at` is None.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote, urlsplit

from readers.parse_common import (
    compact_json,
    iso_ms,
    load_json,
    make_record,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, SessionTitle, SourceInfo

AGENT = "continue"
EXAMPLE_PATHS = {  # one path per layout (tests: classify, fuzzing)
    "continue.session": "sessions/11111111-2222-4333-8444-555555555555.json",
    "continue.index": "sessions/sessions.json",
}
_UNTITLED = "Untitled Session"
_WINDOWS = re.compile(r"^/?([A-Za-z]):[\\/]")


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) != 2 or parts[0] != "sessions" or not parts[1].endswith(".json"):
        return None
    return "continue.index" if parts[1] == "sessions.json" else "continue.session"


def descend(rel_dir: str) -> bool:
    return rel_dir == "sessions"


def may_hold_session(rel: str, session: str) -> bool:
    return rel == "sessions/sessions.json"  # the index names every session


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    return prefix + "sessions"  # a session learns its creation time from the index


def project_of(value: Any) -> str | None:
    """The workspace folder of either dialect (see the module docstring)."""
    if not isinstance(value, str) or not value:
        return None
    path: str | None = value
    if "://" in value:
        parts = urlsplit(value)
        path = unquote(parts.path) or None
        if parts.scheme == "vscode-remote":
            kind, _, blob = unquote(parts.netloc).partition("+")
            host = _host_path(blob) if kind == "dev-container" else None
            path = host or path
        elif parts.scheme != "file":
            path = value
    if path and _WINDOWS.match(path):
        path = path.lstrip("/")
        path = path[0].upper() + path[1:].replace("/", "\\")
    return str_or_none(path, 4096)


def _host_path(blob: str) -> str | None:
    try:
        meta = json.loads(bytes.fromhex(blob).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return meta.get("hostPath") if isinstance(meta, dict) else None


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    value = load_json(data)
    if source.layout == "continue.index":
        _index(state, value, result)
        return result
    if not isinstance(value, dict):
        result.count_unknown(f"{source.layout}:{'shape' if value is not None else 'undecodable'}")
        return result
    session = str_or_none(value.get("sessionId")) or source.path.rsplit("/", 1)[-1][:-5]
    project = project_of(value.get("workspaceDirectory"))
    title = str_or_none(value.get("title"), 512)
    if title and title != _UNTITLED:
        result.titles.append(SessionTitle(agent=AGENT, session=session, title=title,
                                          project=project, kind="title"))
    base = {"agent": AGENT, "session": session, "project": project,
            "at": state.get("created", {}).get(session)}
    for i, item in enumerate(value.get("history") or []):
        if isinstance(item, dict) and isinstance(item.get("message"), dict):
            _item(item, f"{AGENT}:{session}:{i}", {**base, "cursor": f"0:{i}"}, result)
        else:
            result.count_unknown("continue.session:item")
    return result


def _index(state: dict[str, Any], value: Any, result: ParseResult) -> None:
    if not isinstance(value, list):
        result.count_unknown(f"continue.index:{'shape' if value is not None else 'undecodable'}")
        return
    created = state.setdefault("created", {})
    for entry in value:
        if not isinstance(entry, dict) or not str_or_none(entry.get("sessionId")):
            result.count_unknown("continue.index:entry")
            continue
        session = entry["sessionId"][:200]
        raw = entry.get("dateCreated")
        at = iso_ms(int(raw)) if isinstance(raw, str) and raw.isdigit() else iso_ms(raw)
        if at is not None:
            created[session] = at
        title = str_or_none(entry.get("title"), 512)
        if title and title != _UNTITLED:
            result.titles.append(SessionTitle(
                agent=AGENT, session=session, title=title,
                project=project_of(entry.get("workspaceDirectory")), kind="title"))
    trim_map(created, 4096)


def _emit(result: ParseResult, base: dict[str, Any], **fields: Any) -> None:
    if fields.get("text"):
        result.records.append(make_record(**base, **fields))


def _content(content: Any) -> str:
    if isinstance(content, str):
        return text_of(content)
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict):
            if isinstance(part.get("text"), str):
                out.append(part["text"])
            elif part.get("type") == "imageUrl":
                out.append("[image]")
    return text_of("\n".join(out))


def _item(item: dict[str, Any], uid: str, base: dict[str, Any], result: ParseResult) -> None:
    msg = item["message"]
    role = msg.get("role")
    if role in ("user", "assistant"):
        _emit(result, base, uid=uid, role=role, text=_content(msg.get("content")))
    elif role == "tool":
        call = str(msg.get("toolCallId") or "")
        _emit(result, base, uid=f"{AGENT}:call:{call or uid}:result", role="tool_result",
              text=_content(msg.get("content")))
        return
    elif role in ("system", "thinking"):
        _emit(result, base, uid=uid, role="system" if role == "system" else "thinking",
              text=_content(msg.get("content")))
        return
    else:
        result.count_unknown(f"continue.session:{str(role)[:40]}")
        return
    reasoning = item.get("reasoning")
    if isinstance(reasoning, dict):
        _emit(result, base, uid=f"{uid}#r", role="thinking", text=text_of(reasoning.get("text")))
    names: dict[str, str] = {}
    for call in msg.get("toolCalls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        name = str_or_none(fn.get("name"), 200) or "tool"
        call_id = str(call.get("id") or "")
        names[call_id] = name
        args = fn.get("arguments")
        parsed = load_json(args.encode("utf-8", "replace")) if isinstance(args, str) else args
        body = compact_json(parsed if parsed is not None else args or {})
        _emit(result, base, uid=f"{AGENT}:call:{call_id or uid}", role="tool_use",
              text=f"{name} {body}", tool=name, tool_input=body)
    for st in item.get("toolCallStates") or []:
        if not isinstance(st, dict):
            continue
        call_id = str(st.get("toolCallId") or "")
        outs = st.get("output")
        texts = [o["content"] for o in outs if isinstance(o, dict) and isinstance(
            o.get("content"), str)] if isinstance(outs, list) else []
        text = "\n".join(texts)
        _emit(result, base, uid=f"{AGENT}:call:{call_id or uid}:result", role="tool_result",
              text=text_of(text), tool=names.get(call_id))
