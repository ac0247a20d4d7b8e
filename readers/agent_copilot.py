"""GitHub Copilot CLI (`~/.copilot`): discovery and the pure parser.

Layouts (capture mode in readers/registry.py):
- `copilot.events` (append): `session-state/<id>/events.jsonl` (2026 on);
- `copilot.flat` (append): `session-state/<id>.jsonl` (about Dec 2025); both are event lines
  `{type, data, id, timestamp, parentId}`;
- `copilot.workspace` (snapshot): `session-state/<id>/workspace.yaml` (flat YAML: cwd, name,
  summary, …) → the session's title (`name`, else `summary`) and project;
- `copilot.history` (snapshot): `history-session-state/session_<uuid>_<ms>.json` (Oct 2025):
  OpenAI-style `chatMessages[]` and a UI `timeline[]`.
Other files of a session folder (checkpoints, rewind snapshots, `session.db`, VS Code
metadata, locks) are not history and never read.

Promises: pure and never raising; a session folder's sources share one state (the cwd of
`session.start` / `session.resume`, tool names by call id; bounded); uid `copilot:<event
id>` (`#<i>` per part), tool calls `copilot:call:<toolCallId>` (the assistant's
`toolRequests` and `tool.execution_start` collapse), results `…:result`. Project = the cwd of
`session.start`/`session.resume` context or `workspace.yaml`; a flat file without a context
takes the "working directory:" its system prompt names (the best available; the few records
before it are re-emitted with it, same uid, kept meanwhile in the bounded state). `at` = the
event's timestamp; `chatMessages` have none, so they take the time of the matching timeline
entry (the same user text, assistant text, or tool call id), else the latest earlier one,
else `startTime`.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from readers.parse_common import (
    compact_json,
    digest,
    iso_ms,
    load_json,
    make_record,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, SessionTitle, SourceInfo

AGENT = "copilot"
EXAMPLE_PATHS = {  # one path per layout (tests: classify, fuzzing)
    "copilot.events": "session-state/11111111-2222-4333-8444-555555555555/events.jsonl",
    "copilot.flat": "session-state/11111111-2222-4333-8444-555555555555.jsonl",
    "copilot.workspace": "session-state/11111111-2222-4333-8444-555555555555/workspace.yaml",
    "copilot.history": "history-session-state/session_11111111-2222-4333-8444-555555555555_1.json",
}
_QUIET = frozenset({
    "session.model_change", "session.info", "session.shutdown", "assistant.turn_start",
    "assistant.turn_end", "hook.start", "hook.end", "permission.requested",
    "permission.completed", "session.truncation", "session.compaction_start",
    "session.compaction_complete", "session.usage_info", "assistant.usage",
})
_PENDING = 4
_CWD = re.compile(r"working directory: ?([^\n]+)")
_NOISE = re.compile(r"\s*<(current_datetime|reminder)>.*?</\1>\s*", re.S)


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    name = parts[-1]
    if parts[0] == "session-state":
        if len(parts) == 2 and name.endswith(".jsonl"):
            return "copilot.flat"
        if len(parts) == 3 and name == "events.jsonl":
            return "copilot.events"
        if len(parts) == 3 and name == "workspace.yaml":
            return "copilot.workspace"
        return None
    if parts[0] == "history-session-state" and len(parts) == 2 and name.endswith(".json"):
        return "copilot.history"
    return None


def descend(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] == "session-state":
        return len(parts) <= 2
    return rel_dir == "history-session-state"


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    if source.layout in ("copilot.events", "copilot.workspace"):
        return prefix + source.path.rsplit("/", 1)[0]  # the session folder
    return None


def _session_of_path(path: str) -> str:
    parts = path.split("/")
    if len(parts) == 3:
        return parts[1]
    stem = parts[-1].rsplit(".", 1)[0]
    if stem.startswith("session_"):
        return stem[len("session_"):].rsplit("_", 1)[0]
    return stem


def clean_user(text: Any) -> str:
    return text_of(_NOISE.sub("\n", text).strip()) if isinstance(text, str) else ""


# --- event lines -----------------------------------------------------------------------

def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    obj = load_json(line)
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        result.count_unknown(f"{source.layout}:undecodable")
        return result
    typ, data = obj["type"], obj.get("data")
    data = data if isinstance(data, dict) else {}
    if typ in ("session.start", "session.resume"):
        ctx = data.get("context")
        cwd = str_or_none(ctx.get("cwd"), 4096) if isinstance(ctx, dict) else None
        if cwd:
            state["cwd"] = cwd
        if typ == "session.start" and str_or_none(data.get("sessionId")):
            state["session"] = data["sessionId"]
        result.skipped += 1
        return result
    if typ in _QUIET:
        result.skipped += 1
        return result
    if typ == "system.message":
        found = _CWD.search(data.get("content") or "") if isinstance(
            data.get("content"), str) else None
        if found and "cwd" not in state:
            state["cwd"] = found.group(1).strip()
            for rec in state.pop("pending", []):  # re-emitted with the project (same uid)
                result.records.append(make_record(**{**rec, "project": state["cwd"]}))
        result.skipped += 1  # the CLI's own system prompt
        return result
    eid = str_or_none(obj.get("id")) or f"{generation}:{offset}"
    base = {"agent": AGENT, "session": state.get("session") or _session_of_path(source.path),
            "project": state.get("cwd"), "cursor": f"{generation}:{offset}",
            "at": iso_ms(obj.get("timestamp"))}
    handler = _HANDLERS.get(typ)
    if handler is None:
        result.count_unknown(f"{source.layout}:{typ[:40]}")
        return result
    handler(state, data, f"{AGENT}:{eid}", base, result)
    if "cwd" not in state and result.records and len(state.get("pending", ())) < _PENDING:
        # a flat file names its cwd only in the system prompt after the first prompt: keep
        # the first few short records to re-emit them once the project is known
        keep = [msgspec.structs.asdict(r) for r in result.records if len(r.text) <= 4096]
        state["pending"] = (state.get("pending", []) + keep)[:_PENDING]
    return result


def _emit(result: ParseResult, base: dict[str, Any], **fields: Any) -> None:
    if fields.get("text"):
        result.records.append(make_record(**base, **fields))


def _user(state: dict[str, Any], data: dict[str, Any], uid: str, base: dict[str, Any],
          result: ParseResult) -> None:
    _emit(result, base, uid=uid, role="user", text=clean_user(data.get("content")))


def _assistant(state: dict[str, Any], data: dict[str, Any], uid: str, base: dict[str, Any],
               result: ParseResult) -> None:
    _emit(result, base, uid=f"{uid}#r", role="thinking", text=text_of(data.get("reasoningText")))
    _emit(result, base, uid=uid, role="assistant", text=text_of(data.get("content")))
    for req in data.get("toolRequests") or []:
        if isinstance(req, dict):
            _tool_use(state, req.get("toolCallId"), req.get("name"), req.get("arguments"), uid,
                      base, result)


def _tool_use(state: dict[str, Any], call_id: Any, name: Any, args: Any, uid: str,
              base: dict[str, Any], result: ParseResult) -> None:
    tool = str_or_none(name, 200) or "tool"
    if isinstance(call_id, str) and call_id:
        uid = f"{AGENT}:call:{digest(call_id)}"
        tools = state.setdefault("tools", {})
        tools[call_id[:200]] = tool
        trim_map(tools, 512)
    text_args = compact_json(args if args is not None else {})
    _emit(result, base, uid=uid, role="tool_use", text=f"{tool} {text_args}", tool=tool,
          tool_input=text_args)


def _tool_start(state: dict[str, Any], data: dict[str, Any], uid: str, base: dict[str, Any],
                result: ParseResult) -> None:
    _tool_use(state, data.get("toolCallId"), data.get("toolName"), data.get("arguments"),
              uid, base, result)


def _tool_done(state: dict[str, Any], data: dict[str, Any], uid: str, base: dict[str, Any],
               result: ParseResult) -> None:
    call_id = data.get("toolCallId")
    if isinstance(call_id, str) and call_id:
        uid = f"{AGENT}:call:{digest(call_id)}:result"
    out = data.get("result")
    if isinstance(out, dict):
        out = out.get("content", out.get("detailedContent", out))
    err = data.get("error")
    text = text_of(out) if isinstance(out, str) else (compact_json(out) if out else "")
    if not text and err:
        text = text_of(err) if isinstance(err, str) else compact_json(err)
    tool = state.get("tools", {}).get(call_id) if isinstance(call_id, str) else None
    _emit(result, base, uid=uid, role="tool_result", text=text, tool=tool)


def _error(state: dict[str, Any], data: dict[str, Any], uid: str, base: dict[str, Any],
           result: ParseResult) -> None:
    _emit(result, base, uid=uid, role="system", text=text_of(data.get("message")))


_HANDLERS = {
    "user.message": _user,
    "assistant.message": _assistant,
    "tool.execution_start": _tool_start,
    "tool.execution_complete": _tool_done,
    "session.error": _error,
    "session.warning": _error,
}


# --- snapshots -------------------------------------------------------------------------

def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    if source.layout == "copilot.workspace":
        _workspace(source, state, data, result)
        return result
    obj = load_json(data)
    if not isinstance(obj, dict):
        result.count_unknown(f"{source.layout}:undecodable")
        return result
    _history(source, obj, result)
    return result


def yaml_scalars(text: str) -> dict[str, str]:
    """Top-level `key: value` pairs of a flat YAML mapping: plain and double-quoted scalars
    (multi-line quoted ones folded as YAML does: a line break is a space, an empty line a
    newline, backslash escapes decoded); nested or block values are ignored."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"([A-Za-z_][\w-]*):(?: (.*))?$", lines[i].rstrip("\r"))
        i += 1
        if not m:
            continue
        key, value = m.group(1), (m.group(2) or "").strip()
        if value.startswith('"'):
            body = value[1:]
            while not re.search(r'(?<!\\)(\\\\)*"\s*$', body) and i < len(lines):
                body += "\n" + lines[i].rstrip("\r")
                i += 1
            body = re.sub(r'"\s*$', "", body)
            folded = re.sub(r"[ \t]*\n[ \t]*", "\n", body)
            folded = re.sub(r"(?<!\n)\n(?!\n)", " ", folded).replace("\n\n", "\n")
            out[key] = re.sub(r'\\(["\\/rnt ])', lambda e: {"r": "\r", "n": "\n", "t": "\t"}.get(
                e.group(1), e.group(1)), folded)
        elif value and value[0] not in "'|>[{&*!":
            out[key] = value.split(" #", 1)[0].strip()
    return out


def _workspace(source: SourceInfo, state: dict[str, Any], data: bytes,
               result: ParseResult) -> None:
    fields = yaml_scalars(data.decode("utf-8", "replace"))
    if not fields:
        result.count_unknown(f"{source.layout}:shape")
        return
    cwd = str_or_none(fields.get("cwd"), 4096)
    if cwd:
        state["cwd"] = cwd
    session = str_or_none(fields.get("id")) or _session_of_path(source.path)
    title = " ".join(text_of(fields.get("name") or fields.get("summary") or "", 512).split())
    if title:
        kind = "name" if fields.get("name") else "summary"
        result.titles.append(SessionTitle(agent=AGENT, session=session, title=title,
                                          project=cwd, kind=kind))


def _history(source: SourceInfo, obj: dict[str, Any], result: ParseResult) -> None:
    session = str_or_none(obj.get("sessionId")) or _session_of_path(source.path)
    start = iso_ms(obj.get("startTime"))
    times = _timeline_times(obj.get("timeline"))
    base = {"agent": AGENT, "session": session, "project": None}
    tools: dict[str, str] = {}
    last = start
    for i, msg in enumerate(obj.get("chatMessages") or []):
        if not isinstance(msg, dict):
            result.count_unknown("copilot.history:message")
            continue
        role, cursor = msg.get("role"), f"0:{i}"
        uid = f"{AGENT}:{session}:{i}"
        if role == "user":
            text = clean_user(msg.get("content"))
            last = times.get(f"user:{digest(text)}", last)
            _emit(result, {**base, "cursor": cursor, "at": last}, uid=uid, role="user", text=text)
        elif role == "assistant":
            text = text_of(msg.get("content"))
            last = times.get(f"copilot:{digest(text)}", last) if text else last
            at_base = {**base, "cursor": cursor, "at": last}
            _emit(result, at_base, uid=uid, role="assistant", text=text)
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    name = str_or_none(fn.get("name"), 200) or "tool"
                    call_id = str(call.get("id") or "")
                    tools[call_id] = name
                    args = compact_json(fn.get("arguments") or {})
                    _emit(result, at_base, uid=f"{AGENT}:call:{digest(call_id or uid)}",
                          role="tool_use", text=f"{name} {args}", tool=name, tool_input=args)
        elif role == "tool":
            call_id = str(msg.get("tool_call_id") or "")
            last = times.get(f"call:{call_id}", last)
            _emit(result, {**base, "cursor": cursor, "at": last},
                  uid=f"{AGENT}:call:{digest(call_id or uid)}:result", role="tool_result",
                  text=text_of(msg.get("content")) or compact_json(msg.get("content") or ""),
                  tool=tools.get(call_id))
        elif role == "system":
            result.skipped += 1
        else:
            result.count_unknown(f"copilot.history:{str(role)[:40]}")


def _timeline_times(timeline: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in timeline if isinstance(timeline, list) else []:
        if not isinstance(item, dict):
            continue
        at = iso_ms(item.get("timestamp"))
        if at is None:
            continue
        typ = item.get("type")
        if typ == "user":
            out.setdefault(f"user:{digest(clean_user(item.get('text')))}", at)
        elif typ == "copilot":
            out.setdefault(f"copilot:{digest(text_of(item.get('text')))}", at)
        elif typ == "tool_call_completed" and isinstance(item.get("callId"), str):
            out.setdefault(f"call:{item['callId']}", at)
    return out
