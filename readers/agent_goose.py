"""Block Goose → records.

Root: `~/.local/share/goose` (`$XDG_DATA_HOME/goose`). Layouts:
- `goose.db`: `sessions/sessions.db` (current versions), SQLite; capture reads only the
  tables `sessions` and `messages`, read-only, as row snapshots;
- `goose.jsonl`: `sessions/<name>.jsonl` (older versions): the first line is the session's
  metadata (`working_dir`, `description`, …), every later line one message
  `{id?, role, created (unix s), content[…]}`. Goose rewrites these files whole; capture
  reads them as append-only files (a changed prefix starts a new generation).

Promises (pure, never raise):
- session = `sessions.id` ("YYYYMMDD_N") or the `.jsonl` file stem; project =
  `sessions.working_dir` / the metadata's `working_dir`; titles from `sessions.name` /
  `description`;
- content items: text → the message role; thinking → thinking (redactedThinking skipped);
  toolRequest → tool_use (`toolCall.value.name` + `arguments`); toolResponse → tool_result
  (the text of `toolResult.value[]`; the tool name from its request); image → "[image]";
  other types counted ("goose:content:<type>");
- uid: a database message "goose:<session>:<row id>#<i>"; a `.jsonl` message
  "goose:<session>:<message id or hash of role, time and content>#<i>", so a rewritten file
  yields the same uids again;
- time: `created_timestamp` / `created` are Unix seconds (× 1000); `messages.timestamp` (UTC
  text) when `created_timestamp` is missing.
"""

from __future__ import annotations

from typing import Any

from readers.parse_common import (
    MAX_TITLE,
    compact_json,
    digest,
    iso_ms,
    load_object,
    load_text_json,
    make_record,
    row_object,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, SessionTitle, SourceInfo

AGENT = "goose"
EXAMPLE_PATHS = {"goose.db": "sessions/sessions.db", "goose.jsonl": "sessions/20250101_1.jsonl"}
_SESSIONS_LIMIT = 1024
_CALLS_LIMIT = 512


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) != 2 or parts[0] != "sessions":
        return None
    if parts[1] == "sessions.db":
        return "goose.db"
    if parts[1].endswith(".jsonl"):
        return "goose.jsonl"
    return None


def descend(rel_dir: str) -> bool:
    return rel_dir == "sessions"


def sql_time(value: Any) -> int | None:
    """SQLite CURRENT_TIMESTAMP text ("2025-12-02 16:58:55", UTC) or epoch seconds."""
    if isinstance(value, str) and len(value) >= 19 and value[10] == " ":
        return iso_ms(value[:10] + "T" + value[11:] + "Z")
    return iso_ms(value)


def parse_row(
    source: SourceInfo, state: dict[str, Any], table: str, row_id: str, data: bytes
) -> ParseResult:
    result, row = row_object("goose", data)
    if row is None:
        return result
    if table == "sessions":
        session = str_or_none(row.get("id"), 200) or row_id
        _session(state, session, row.get("working_dir"), row.get("name"), result)
    elif table == "messages":
        owner = str_or_none(row.get("session_id"), 200)
        content = load_text_json(row.get("content_json"))
        at = iso_ms(row.get("created_timestamp")) or sql_time(row.get("timestamp"))
        _message(state, owner, f"{row.get('id') or row_id}", row.get("role"), content, at,
                 row_id, result)
    else:
        result.count_unknown(f"goose:table:{table[:64]}")
    return result


def _session(
    state: dict[str, Any], session: str, cwd: Any, title: Any, result: ParseResult
) -> None:
    project = str_or_none(cwd, 4096)
    sessions = state.setdefault("sessions", {})
    if isinstance(sessions, dict):
        sessions[session] = project
        trim_map(sessions, _SESSIONS_LIMIT)
    text = text_of(title, MAX_TITLE).strip()
    if text:
        result.titles.append(
            SessionTitle(agent=AGENT, session=session, title=text, project=project, kind="title")
        )
    else:
        result.skipped += 1


def _message(
    state: dict[str, Any], session: str | None, key: str, role: Any, content: Any,
    at: int | None, cursor: str, result: ParseResult,
) -> None:
    if role not in ("user", "assistant"):
        result.count_unknown(f"goose:role:{str(role)[:64]}")
        return
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        result.count_unknown("goose:content")
        return
    sessions = state.get("sessions")
    project = sessions.get(session) if isinstance(sessions, dict) and session else None
    base = {"agent": AGENT, "session": session, "project": project, "at": at, "cursor": cursor}
    calls = state.setdefault("calls", {})
    for i, item in enumerate(content):
        _item(item, f"goose:{session}:{key}#{i}", str(role), calls, base, result)
    if isinstance(calls, dict):
        trim_map(calls, _CALLS_LIMIT)


def _item(
    item: Any, uid: str, role: str, calls: Any, base: dict[str, Any], result: ParseResult
) -> None:
    ctype = item.get("type") if isinstance(item, dict) else None
    if not isinstance(item, dict) or not isinstance(ctype, str):
        result.count_unknown("goose:content-item")
        return
    if ctype in ("text", "thinking"):
        text = text_of(item.get(ctype))
        if text.strip():
            kind = role if ctype == "text" else "thinking"
            result.records.append(make_record(uid=uid, role=kind, text=text, **base))
        else:
            result.skipped += 1
    elif ctype in ("toolRequest", "frontendToolRequest"):
        call = item.get("toolCall")
        value = call.get("value") if isinstance(call, dict) else None
        value = value if isinstance(value, dict) else {}
        name = str_or_none(value.get("name"), 200) or "tool"
        cid = str_or_none(item.get("id"), 200)
        if cid and isinstance(calls, dict):
            calls[cid] = name
        args = value.get("arguments")
        tool_input = compact_json(args) if args is not None else ""
        result.records.append(make_record(
            uid=uid, role="tool_use", text=f"{name} {tool_input}".strip(), tool=name,
            tool_input=tool_input or None, **base))
    elif ctype == "toolResponse":
        rid = str_or_none(item.get("id"), 200)
        called = calls.get(rid) if isinstance(calls, dict) and rid else None
        tool_result = item.get("toolResult")
        value = tool_result.get("value") if isinstance(tool_result, dict) else None
        if value is None and isinstance(tool_result, dict):
            value = tool_result.get("error")
        text = _result_text(value)
        if text.strip():
            result.records.append(make_record(uid=uid, role="tool_result", text=text,
                                              tool=str(called or "tool"), **base))
        else:
            result.skipped += 1
    elif ctype == "image":
        result.records.append(make_record(uid=uid, role=role, text="[image]", **base))
    elif ctype in ("redactedThinking", "toolConfirmationRequest", "summarizationRequested",
                   "contextLengthExceeded", "systemNotification"):
        result.skipped += 1
    else:
        result.count_unknown(f"goose:content:{ctype[:64]}")


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return text_of(value)
    if isinstance(value, list):
        texts = [text_of(v.get("text")) for v in value
                 if isinstance(v, dict) and isinstance(v.get("text"), str)]
        if texts:
            return text_of("\n".join(texts))
    return compact_json(value) if value else ""


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-6] if name.endswith(".jsonl") else name


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    obj = load_object(line)
    if obj is None:
        if line.strip():
            result.count_unknown("goose:undecodable")
        else:
            result.skipped += 1
        return result
    session = _stem(source.path)
    if "role" not in obj and "content" not in obj:
        # the metadata line: working_dir, description, message_count, tokens …
        _session(state, session, obj.get("working_dir"), obj.get("description"), result)
        return result
    content = obj.get("content")
    key = str_or_none(obj.get("id"), 200) or digest(
        str(obj.get("role")), str(obj.get("created")), compact_json(content))[:16]
    _message(state, session, key, obj.get("role"), content, iso_ms(obj.get("created")),
             f"{generation}:{offset}", result)
    return result
