"""Charm Crush → records, from the rows of `<project>/.crush/crush.db`.

Crush keeps its data directory (`.crush/`) inside each project, so a Crush root is a folder
that holds projects (see `readers.project_scan`): the layout `crush.db` is any
`[<dirs>/].crush/crush.db` under it, or `crush.db` itself when the root is a data directory.
The database is SQLite in WAL mode; capture reads only the tables `sessions` and `messages`
(never `files`, which holds file contents) read-only, as row snapshots.

Promises (pure, never raise):
- project = the folder that holds `.crush/` (the data directory's parent); session = the
  `sessions.id`; a session with a `parent_session_id` (a sub-task) reports its parent as
  `session` and itself as `subagent` (once its sessions row has been seen); titles from
  `sessions.title`;
- `messages.parts` is a JSON array of `{type, data}`: one record per part, uid
  "crush:<message id>#<part index>" (a message rewritten while it streamed replaces its
  records). text → the message role (`user`/`assistant`); reasoning → thinking; tool_call →
  tool_use (`name`, `input` is a JSON string, kept as given); tool_result → tool_result (its
  tool name from the call, when the result's own name is empty); finish is skipped;
  binary/image parts become "[image]"; other types are counted ("crush:part:<type>");
- times are Unix SECONDS (the schema comments say milliseconds; the data says seconds):
  `at` = `created_at` × 1000. A value ≥ 10^11 is taken as milliseconds.
"""

from __future__ import annotations

import posixpath
from typing import Any

from readers import project_scan
from readers.parse_common import (
    MAX_TITLE,
    compact_json,
    iso_ms,
    load_text_json,
    make_record,
    row_object,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, SessionTitle, SourceInfo

AGENT = "crush"
EXAMPLE_PATHS = {"crush.db": "code/game/.crush/crush.db"}
DATA_DIRS = frozenset({".crush"})
_SESSIONS_LIMIT = 1024
_CALLS_LIMIT = 512


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if parts[-1] != "crush.db":
        return None
    if len(parts) == 1 or (parts[-2] == ".crush" and project_scan.depth_ok("/".join(parts[:-1]))):
        return "crush.db"
    return None


def descend(rel_dir: str) -> bool:
    return project_scan.descend(rel_dir, DATA_DIRS)


def project_of(source: SourceInfo) -> str:
    """The folder holding the `.crush` data directory."""
    data_dir = posixpath.dirname(posixpath.join(source.root, source.path))
    if posixpath.basename(data_dir) == ".crush" or source.path == "crush.db":
        return posixpath.dirname(data_dir) or data_dir
    return data_dir


def parse_row(
    source: SourceInfo, state: dict[str, Any], table: str, row_id: str, data: bytes
) -> ParseResult:
    result, row = row_object("crush", data)
    if row is None:
        return result
    if table == "sessions":
        _session(source, state, row, row_id, result)
    elif table == "messages":
        _message(source, state, row, row_id, result)
    else:
        result.count_unknown(f"crush:table:{table[:64]}")
    return result


def _session(
    source: SourceInfo, state: dict[str, Any], row: dict[str, Any], row_id: str,
    result: ParseResult,
) -> None:
    session = str_or_none(row.get("id"), 200) or row_id
    parent = str_or_none(row.get("parent_session_id"), 200)
    title = text_of(row.get("title"), MAX_TITLE).strip()
    sessions = state.setdefault("sessions", {})
    if isinstance(sessions, dict):
        sessions[session] = [parent, title[:120] or None]
        trim_map(sessions, _SESSIONS_LIMIT)
    if title and not parent:
        result.titles.append(SessionTitle(agent=AGENT, session=session, title=title,
                                          project=project_of(source), kind="title"))
    else:
        result.skipped += 1


def _message(
    source: SourceInfo, state: dict[str, Any], row: dict[str, Any], row_id: str,
    result: ParseResult,
) -> None:
    message = str_or_none(row.get("id"), 200) or row_id
    session = str_or_none(row.get("session_id"), 200)
    role = row.get("role")
    parts = load_text_json(row.get("parts"))
    if not isinstance(parts, list):
        result.count_unknown("crush:parts")
        return
    if role not in ("user", "assistant", "tool"):
        result.count_unknown(f"crush:role:{str(role)[:64]}")
        return
    base: dict[str, Any] = {"agent": AGENT, "project": project_of(source), "cursor": message,
                            "at": iso_ms(row.get("created_at")), "message": message}
    base.update(_where(state, session))
    calls = state.setdefault("calls", {})
    for i, part in enumerate(parts):
        _part(part, f"crush:{message}#{i}", str(role), calls, base, result)
    if isinstance(calls, dict):
        trim_map(calls, _CALLS_LIMIT)


def _where(state: dict[str, Any], session: str | None) -> dict[str, Any]:
    sessions = state.get("sessions")
    info = sessions.get(session) if isinstance(sessions, dict) and session else None
    if isinstance(info, list) and len(info) == 2 and isinstance(info[0], str):
        return {"session": info[0], "subagent": session,
                "subagent_name": info[1] if isinstance(info[1], str) else None}
    return {"session": session}


def _part(
    part: Any, uid: str, role: str, calls: Any, base: dict[str, Any], result: ParseResult
) -> None:
    ptype = part.get("type") if isinstance(part, dict) else None
    data = part.get("data") if isinstance(part, dict) else None
    if not isinstance(ptype, str) or not isinstance(data, dict):
        result.count_unknown("crush:part")
        return
    if ptype == "finish":
        result.skipped += 1
    elif ptype in ("text", "reasoning"):
        text = text_of(data.get("text") if ptype == "text" else data.get("thinking"))
        if not text.strip():
            result.skipped += 1
            return
        kind = "thinking" if ptype == "reasoning" else "system" if role == "tool" else role
        result.records.append(make_record(uid=uid, role=kind, text=text, **base))
    elif ptype == "tool_call":
        name = str_or_none(data.get("name"), 200) or "tool"
        call = str_or_none(data.get("id"), 200)
        if call and isinstance(calls, dict):
            calls[call] = name
        raw = data.get("input")
        tool_input = text_of(raw, 16 * 1024) if isinstance(raw, str) else compact_json(raw)
        result.records.append(make_record(
            uid=uid, role="tool_use", text=f"{name} {tool_input}".strip(), tool=name,
            tool_input=tool_input or None, **base))
    elif ptype == "tool_result":
        call_id = str_or_none(data.get("tool_call_id"), 200)
        named = str_or_none(data.get("name"), 200)
        if not named and isinstance(calls, dict) and call_id:
            named = calls.get(call_id)
        content = data.get("content")
        text = text_of(content) if isinstance(content, str) else compact_json(content)
        if not text.strip():
            result.skipped += 1
            return
        result.records.append(make_record(uid=uid, role="tool_result", text=text,
                                          tool=str(named or "tool"), **base))
    elif ptype in ("binary", "image_url"):
        label = str_or_none(data.get("path"), 1024) or str_or_none(data.get("url"), 200) or ""
        if label.startswith("data:"):
            label = ""
        result.records.append(make_record(uid=uid, role=role if role != "tool" else "system",
                                          text=f"[image] {label}".strip(), **base))
    else:
        result.count_unknown(f"crush:part:{ptype[:64]}")
