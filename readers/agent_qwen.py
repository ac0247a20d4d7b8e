"""Qwen Code (`~/.qwen`): discovery and the pure parser.

Layouts (capture mode in readers/registry.py):
- the old Gemini-style tree (late 2025): `qwen.chat`, `qwen.chat_log`, `qwen.logs`,
  `qwen.checkpoint`, `qwen.projects`, `qwen.project_root` under `tmp/<sha256(cwd)>/`, parsed
  exactly like Gemini CLI's (readers/agent_gemini.py) except that assistant messages have
  `type: "qwen"`; the folder is a hash of the path, so the project is known only when some
  source names a path with that hash;
- `qwen.session` (append, v0.12+): `projects/<sanitized cwd>/chats/<sessionId>.jsonl`,
  Claude-like lines `{uuid, parentUuid, sessionId, timestamp, type, cwd, message, …}` with a
  Gemini-style `message: {role, parts[]}`; `type` user | assistant | tool_result | system
  (`slash_command` becomes a system record with the command, `ui_telemetry` is skipped).

Promises: pure and never raising; uid `qwen:<uuid>` (`#<part index>` per part), so a line
copied into another file collapses; project = the line's `cwd` (never the lossy folder
name); `at` = the line's timestamp.
"""

from __future__ import annotations

from typing import Any

from readers import agent_gemini as gem
from readers.parse_common import (
    compact_json,
    iso_ms,
    load_json,
    make_record,
    str_or_none,
    text_of,
)
from readers.records import ParseResult, SourceInfo

AGENT = "qwen"
_QUIET_SYSTEM = ("ui_telemetry",)
EXAMPLE_PATHS = {  # one path per layout (tests: classify, fuzzing)
    **{k.replace("gemini.", "qwen."): v for k, v in gem.EXAMPLE_PATHS.items()},
    "qwen.session": "projects/c--users-x/chats/11111111-2222-4333-8444-555555555555.jsonl",
}


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if parts[0] == "projects":
        ok = len(parts) == 4 and parts[2] == "chats" and parts[3].endswith(".jsonl")
        return "qwen.session" if ok else None
    return gem.classify_tree(rel, AGENT)


def descend(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] == "projects":
        return len(parts) <= 2 or (len(parts) == 3 and parts[2] == "chats")
    return gem.descend_tree(rel_dir)


def may_hold_session(rel: str, session: str) -> bool:
    return not rel.startswith("projects/") and gem.may_hold_session(rel, session)


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    if source.layout == "qwen.session":
        return None  # a session file needs nothing from the others
    return gem.state_scope(source, prefix)


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    return gem.parse_tree_snapshot(source, state, data, AGENT, "qwen")


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    if source.layout != "qwen.session":
        return gem.parse_tree_line(source, state, line, offset, generation, AGENT, "qwen")
    result = ParseResult()
    obj = load_json(line)
    if not isinstance(obj, dict):
        result.count_unknown("qwen.session:undecodable")
        return result
    typ = obj.get("type")
    uid = f"qwen:{str_or_none(obj.get('uuid')) or f'{generation}:{offset}'}"
    base = {
        "agent": AGENT, "session": str_or_none(obj.get("sessionId")),
        "project": str_or_none(obj.get("cwd"), 4096), "cursor": f"{generation}:{offset}",
        "at": iso_ms(obj.get("timestamp")),
    }
    if typ == "system":
        _system(obj, uid, base, result)
        return result
    if typ not in ("user", "assistant", "tool_result"):
        result.count_unknown(f"qwen.session:{str(typ)[:40]}")
        return result
    message = obj.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        result.count_unknown(f"qwen.session:{typ}:message")
        return result
    role = "assistant" if typ == "assistant" else "user"
    for i, part in enumerate(parts):
        _part(part, f"{uid}#{i}", role, base, result)
    return result


def _part(part: Any, uid: str, role: str, base: dict[str, Any], result: ParseResult) -> None:
    if not isinstance(part, dict):
        result.count_unknown("qwen.session:part")
        return
    rec: dict[str, Any] | None = None
    if isinstance(part.get("text"), str):
        kind = "thinking" if part.get("thought") else role
        rec = {"role": kind, "text": text_of(part["text"])}
    elif isinstance(part.get("functionCall"), dict):
        call = part["functionCall"]
        name = str_or_none(call.get("name"), 200) or "tool"
        args = compact_json(call.get("args") or {})
        rec = {"role": "tool_use", "text": f"{name} {args}", "tool": name, "tool_input": args}
    elif isinstance(part.get("functionResponse"), dict):
        rec = {"role": "tool_result", "text": gem.response_text(part),
               "tool": str_or_none(part["functionResponse"].get("name"), 200)}
    elif "inlineData" in part or "fileData" in part:
        rec = {"role": role, "text": gem.content_text(part)}
    else:
        result.count_unknown(f"qwen.session:part:{','.join(sorted(part))[:40]}")
        return
    if rec["text"]:
        result.records.append(make_record(uid=uid, **base, **rec))


def _system(obj: dict[str, Any], uid: str, base: dict[str, Any], result: ParseResult) -> None:
    sub = obj.get("subtype")
    raw = obj.get("systemPayload")
    payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if sub in _QUIET_SYSTEM:
        result.skipped += 1
        return
    if sub != "slash_command":
        result.count_unknown(f"qwen.session:system:{str(sub)[:40]}")
        return
    if payload.get("phase") == "invocation":
        text = text_of(payload.get("rawCommand"))
    else:  # the command's output, when it printed any
        items = payload.get("outputHistoryItems")
        texts = [i.get("text") for i in items or [] if isinstance(i, dict)]
        text = text_of("\n".join(t for t in texts if isinstance(t, str)))
    if text:
        result.records.append(make_record(uid=uid, role="system", text=text, **base))
    else:
        result.skipped += 1
