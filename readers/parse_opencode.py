"""opencode sessions, messages and parts → records (formats.md §3).

Layouts: `opencode.json` (one file of the JSON `storage/` tree, either layout: ≤0.5
`project/<slug>/storage/session/{info,message,part}/…` or 0.6–1.1 `storage/{session,message,
part}/…`) and `opencode.db` (one row of the `session`, `message` or `part` table of
`opencode.db`, as a JSON object of its columns; `data` holds the row's JSON text).

Promises:
- The text lives in parts: uid = "opencode:<part id>" (a tool part also yields
  "opencode:<part id>#result" for its output), cursor = the part id. A part rewritten while it
  streamed yields the same uid again, so the newest version replaces the older one.
- Sessions give titles (SessionTitle) and the project (`directory`); a child session
  (`parentID`) is a subagent: its records carry the parent as `session` and the child id as
  `subagent`. Messages give the role of their parts; a part whose message has not been seen yet
  is classified from its own shape (assistant parts carry timing, user text does not).
- All of this is remembered in the state shared by every opencode source of one root; the
  message map is bounded. Never read: any table but session/message/part (the database also
  holds credentials).
- Skipped: step-start/step-finish/snapshot/patch/compaction/retry/agent parts, `data:` URLs of
  file parts and tool attachments, synthetic user text is indexed as role "system".
"""

from __future__ import annotations

from typing import Any

from readers import parse_known as known
from readers.builtin_paths import opencode_classify as classify  # noqa: F401 (reader protocol)
from readers.builtin_paths import opencode_descend as descend  # noqa: F401 (reader protocol)
from readers.parse_common import (
    MAX_TITLE,
    compact_json,
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

AGENT = "opencode"

# The state is shared by every opencode source of a root and saved after each row or file:
# keep it small. Parts follow their message closely, so recent messages suffice.
_MESSAGES_LIMIT = 1024
_SESSIONS_LIMIT = 1024
_SUBAGENT_TITLE = 120


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    kind = _kind_of_path(source.path)
    if kind in known.OPENCODE_QUIET_FILES:
        result.skipped += 1
        return result
    obj = load_object(data)
    if obj is None:
        result.count_unknown("opencode:undecodable")
        return result
    if kind is None:
        kind = _kind_of_object(obj)
    if kind == "session":
        _session(state, obj, result)
    elif kind == "message":
        if "sessionID" not in obj:
            obj["sessionID"] = _parent_folder(source.path)
        _message(state, obj, result)
    elif kind == "part":
        if "messageID" not in obj:
            obj["messageID"] = _parent_folder(source.path)
        _part(state, obj, None, result)
    else:
        result.count_unknown("opencode:json")
    return result


def parse_row(
    source: SourceInfo, state: dict[str, Any], table: str, row_id: str, data: bytes
) -> ParseResult:
    result, row = row_object("opencode", data)
    if row is None:
        return result
    if table == "session":
        _session(state, _session_of_row(row, row_id), result)
        return result
    if table == "project":
        result.skipped += 1  # sessions carry their own directory
        return result
    if table not in ("message", "part"):
        result.count_unknown(f"opencode:table:{table[:64]}")
        return result
    inner = load_text_json(row.get("data"))
    if not isinstance(inner, dict):
        result.count_unknown(f"opencode:{table}-data")
        return result
    inner.setdefault("id", str_or_none(row.get("id"), 200) or row_id)
    inner.setdefault("sessionID", row.get("session_id"))
    created = row.get("time_created")
    if table == "message":
        if not isinstance(inner.get("time"), dict):
            inner["time"] = {"created": created}
        _message(state, inner, result)
    else:
        inner.setdefault("messageID", row.get("message_id"))
        _part(state, inner, iso_ms(created), result)
    return result


def _kind_of_path(path: str) -> str | None:
    parts = path.split("/")
    marks = [i for i, part in enumerate(parts) if part.startswith("storage")]
    if not marks:
        return None
    rest = parts[marks[-1] + 1 :]
    if not rest:
        return None
    if rest[0] == "session" and len(rest) > 1 and rest[1] in ("info", "message", "part"):
        return "session" if rest[1] == "info" else rest[1]
    if rest[0] in ("session", "message", "part") or rest[0] in known.OPENCODE_QUIET_FILES:
        return rest[0]
    return None


def _kind_of_object(obj: dict[str, Any]) -> str | None:
    if "messageID" in obj and "type" in obj:
        return "part"
    if "role" in obj and "sessionID" in obj:
        return "message"
    if "title" in obj and ("directory" in obj or "projectID" in obj):
        return "session"
    return None


def _parent_folder(path: str) -> str | None:
    parts = path.split("/")
    return parts[-2] if len(parts) >= 2 else None


def _session_of_row(row: dict[str, Any], row_id: str) -> dict[str, Any]:
    return {
        "id": row.get("id") or row_id,
        "title": row.get("title"),
        "directory": row.get("directory"),
        "parentID": row.get("parent_id"),
        "time": {"created": row.get("time_created"), "updated": row.get("time_updated")},
    }


def _session(state: dict[str, Any], obj: dict[str, Any], result: ParseResult) -> None:
    session = str_or_none(obj.get("id"), 200)
    if not session:
        result.count_unknown("opencode:session-without-id")
        return
    title = text_of(obj.get("title"), MAX_TITLE).strip()
    directory = str_or_none(obj.get("directory"), 4096)
    parent = str_or_none(obj.get("parentID"), 200)
    sessions = state.setdefault("sessions", {})
    if isinstance(sessions, dict):
        # [directory, parent, title] — a title only for a child session (its subagent name)
        child_title = title[:_SUBAGENT_TITLE] or None if parent else None
        sessions[session] = [directory, parent, child_title]
        trim_map(sessions, _SESSIONS_LIMIT)
    if title:
        result.titles.append(
            SessionTitle(agent=AGENT, session=session, title=title, project=directory, kind="title")
        )
    else:
        result.skipped += 1


def _message(state: dict[str, Any], obj: dict[str, Any], result: ParseResult) -> None:
    message = str_or_none(obj.get("id"), 200)
    if not message:
        result.count_unknown("opencode:message-without-id")
        return
    role = obj.get("role") if obj.get("role") in ("user", "assistant") else None
    times = obj.get("time")
    created = iso_ms(times.get("created")) if isinstance(times, dict) else None
    path = obj.get("path")
    cwd = str_or_none(path.get("cwd"), 4096) if isinstance(path, dict) else None
    session = str_or_none(obj.get("sessionID"), 200)
    messages = state.setdefault("messages", {})
    if isinstance(messages, dict):
        messages[message] = [role, created, session]
        trim_map(messages, _MESSAGES_LIMIT)
    sessions = state.setdefault("sessions", {})
    known_session = sessions.get(session) if isinstance(sessions, dict) and session else None
    if cwd and session and isinstance(sessions, dict):
        # discovery reads storage/message before storage/session (and 0.5 sessions have no
        # directory): an assistant message's cwd stands for the session's project
        if not isinstance(known_session, list) or len(known_session) != 3:
            sessions[session] = [cwd, None, None]
            trim_map(sessions, _SESSIONS_LIMIT)
        elif not known_session[0]:
            known_session[0] = cwd
    error = obj.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    text = text_of(data.get("message")) if isinstance(data, dict) else ""
    if text.strip():
        where = _where(state, session, cwd)
        result.records.append(
            make_record(
                uid=f"opencode:{message}#error",
                agent=AGENT,
                role="system",
                text=text,
                cursor=message,
                at=created,
                message=message,
                **where,
            )
        )
    else:
        result.skipped += 1


def _where(state: dict[str, Any], session: str | None, cwd: str | None) -> dict[str, Any]:
    """session, subagent, subagent_name and project of a session id."""
    sessions = state.get("sessions")
    info = sessions.get(session) if isinstance(sessions, dict) and session else None
    directory, parent, title = info if isinstance(info, list) and len(info) == 3 else [None] * 3
    project = directory if isinstance(directory, str) else cwd
    if isinstance(parent, str) and parent != session:
        return {
            "session": parent,
            "subagent": session,
            "subagent_name": title if isinstance(title, str) else None,
            "project": project,
        }
    return {"session": session, "project": project}


def _part(
    state: dict[str, Any], obj: dict[str, Any], row_at: int | None, result: ParseResult
) -> None:
    part = str_or_none(obj.get("id"), 200)
    ptype = obj.get("type")
    if not part or not isinstance(ptype, str):
        result.count_unknown("opencode:part-without-id")
        return
    if ptype in known.OPENCODE_QUIET_PARTS:
        result.skipped += 1
        return
    message = str_or_none(obj.get("messageID"), 200)
    messages = state.get("messages")
    msg_info = messages.get(message) if isinstance(messages, dict) and message else None
    msg_info = msg_info if isinstance(msg_info, list) and len(msg_info) == 3 else [None] * 3
    session = str_or_none(obj.get("sessionID"), 200) or msg_info[2]
    times = obj.get("time")
    tstate = obj.get("state")
    if not isinstance(times, dict) and isinstance(tstate, dict):
        times = tstate.get("time")  # tool parts keep their timing in their state
    start = iso_ms(times.get("start")) if isinstance(times, dict) else None
    at = start or row_at or (msg_info[1] if isinstance(msg_info[1], int) else None)
    role = msg_info[0] or ("assistant" if isinstance(times, dict) else "user")
    base = {"agent": AGENT, "cursor": part, "at": at, "message": message}
    base.update(_where(state, session, None))
    if ptype == "text":
        text = text_of(obj.get("text"))
        if text.strip():
            synthetic = obj.get("synthetic") is True and role == "user"
            result.records.append(
                make_record(
                    uid=f"opencode:{part}", role="system" if synthetic else role, text=text, **base
                )
            )
        else:
            result.skipped += 1
    elif ptype == "reasoning":
        text = text_of(obj.get("text"))
        if text.strip():
            result.records.append(
                make_record(uid=f"opencode:{part}", role="thinking", text=text, **base)
            )
        else:
            result.skipped += 1
    elif ptype == "tool":
        _tool(part, obj, base, result)
    elif ptype == "file":
        name = str_or_none(obj.get("filename"), 1024) or str_or_none(obj.get("mime"), 200)
        url = obj.get("url")
        if isinstance(url, str) and not url.startswith("data:"):
            name = f"{name} {url[:1024]}" if name else url[:1024]
        result.records.append(
            make_record(
                uid=f"opencode:{part}", role=role, text=f"[file] {name or ''}".strip(), **base
            )
        )
    elif ptype == "subtask":
        text = "\n".join(
            t for t in (text_of(obj.get("description")), text_of(obj.get("prompt"))) if t
        )
        agent = str_or_none(obj.get("agent"), 200) or "subtask"
        result.records.append(
            make_record(
                uid=f"opencode:{part}",
                role="tool_use",
                text=f"{agent} {text}".strip(),
                tool=agent,
                **base,
            )
        )
    else:
        result.count_unknown(f"opencode:part:{ptype[:64]}")


def _tool(part: str, obj: dict[str, Any], base: dict[str, Any], result: ParseResult) -> None:
    name = str_or_none(obj.get("tool"), 200) or "tool"
    tstate = obj.get("state")
    tstate = tstate if isinstance(tstate, dict) else {}
    tool_input = compact_json(tstate.get("input")) if tstate.get("input") is not None else ""
    title = str_or_none(tstate.get("title"), MAX_TITLE)
    result.records.append(
        make_record(
            uid=f"opencode:{part}",
            role="tool_use",
            text=f"{name} {tool_input}".strip(),
            tool=name,
            tool_input=tool_input or None,
            title=title,
            **base,
        )
    )
    output = tstate.get("output") if tstate.get("status") != "error" else tstate.get("error")
    text = text_of(output) if isinstance(output, str) else compact_json(output) if output else ""
    if text.strip():
        result.records.append(
            make_record(
                uid=f"opencode:{part}#result", role="tool_result", text=text, tool=name, **base
            )
        )
