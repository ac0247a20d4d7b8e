"""Codex CLI rollouts and prompt history → records (formats.md §2).

Layouts: `codex.rollout` (wrapped `{timestamp,type,payload}` JSONL, and the older bare JSONL
with no envelope) and `codex.history` (`{session_id, ts, text}`).

Promises:
- Everything Codex writes twice is indexed once: the `response_item`s are the record of the
  conversation; the `event_msg` copies (user_message, agent_message, agent_reasoning,
  exec_command_end, …) are skipped. Injected context (developer messages, user items that
  start with `<environment_context>`, `# AGENTS.md instructions`, …), encrypted reasoning,
  token counts and `compacted.replacement_history` are skipped.
- uid: tool calls and outputs by their `call_id`; every other item by a hash of its kind, its
  text and how many identical items came before it in the file. A resumed or forked rollout
  re-stamps the history it copies, so timestamps are left out: the copy and the original
  yield the same uids, while a prompt typed twice stays two records.
- A file's records belong to the session of its first `session_meta` (a subagent thread's
  records to its parent thread, with `subagent` = its own id); later `session_meta` lines
  (resumed history) do not change it.
"""

from __future__ import annotations

import re
from typing import Any

from readers import parse_known as known
from readers.builtin_paths import codex_classify as classify  # noqa: F401 (reader protocol)
from readers.builtin_paths import codex_descend as descend  # noqa: F401 (reader protocol)
from readers.parse_common import (
    MAX_TITLE,
    checked,
    compact_json,
    digest,
    iso_ms,
    join_lines,
    load_json,
    load_object,
    make_record,
    session_from_path,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, Record, SessionTitle, SourceInfo

AGENT = "codex"

_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.S)
# Occurrence counters of repeatable items (messages, reasoning); bounded so a huge rollout keeps
# a small state. Past the bound the oldest counters restart, merging an old repeat at worst.
_SEEN_LIMIT = 4096
_CALLS_LIMIT = 512


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    if not line or line.isspace():  # blank (no copy of the line, unlike strip)
        return result
    obj = load_object(line)
    if obj is None:
        result.count_unknown("codex:undecodable")
        return result
    cursor = f"{generation}:{offset}"
    if source.layout == "codex.history":
        _history_line(obj, cursor, result)
        return result
    if state.get("gen", generation) != generation:
        state.clear()  # a rewritten file is read again from its start: count afresh
    state["gen"] = generation
    _Line(source, state, cursor, result).handle(obj)
    return result


class _Line:
    __slots__ = ("at", "cursor", "result", "source", "state")

    def __init__(
        self, source: SourceInfo, state: dict[str, Any], cursor: str, result: ParseResult
    ) -> None:
        self.source = source
        self.state = state
        self.cursor = cursor
        self.result = result
        self.at: int | None = None

    def handle(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        payload = obj.get("payload")
        if isinstance(kind, str) and isinstance(payload, dict):
            self.at = iso_ms(obj.get("timestamp"))
            self.wrapped(kind, payload)
        elif isinstance(kind, str) and kind in known.CODEX_RESPONSE_TYPES:
            self.response_item(obj)  # bare era: a response item with no envelope
        elif kind is None and obj.get("record_type") == "state":
            self.result.skipped += 1
        elif kind is None and "id" in obj and "timestamp" in obj:
            self.session_meta(obj)  # bare era: the first line
        else:
            self.result.count_unknown(f"codex:{str(kind)[:64]}")

    def wrapped(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "response_item":
            self.response_item(payload)
        elif kind == "event_msg":
            self.event(payload)
        elif kind == "session_meta":
            self.session_meta(payload)
        elif kind == "compacted":
            text = text_of(payload.get("message"))
            if text.strip():
                self.emit("system", "compacted", text)
            else:
                self.result.skipped += 1
        elif kind in known.CODEX_QUIET_TOP:
            cwd = str_or_none(payload.get("cwd"), 4096)
            if cwd:
                self.state["cwd"] = cwd
            self.result.skipped += 1
        else:
            self.result.count_unknown(f"codex:{kind[:64]}")

    def session_meta(self, meta: dict[str, Any]) -> None:
        self.result.skipped += 1
        own = str_or_none(meta.get("id"), 200)
        if "session" in self.state or not own:
            if not self.state.get("cwd") and str_or_none(meta.get("cwd"), 4096):
                self.state["cwd"] = meta["cwd"]
            return
        self.state["session"] = own
        cwd = str_or_none(meta.get("cwd"), 4096)
        if cwd:
            self.state["cwd"] = cwd
        origin = meta.get("source")
        spawn = origin.get("subagent") if isinstance(origin, dict) else None
        spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
        parent = str_or_none(meta.get("parent_thread_id"), 200)
        if isinstance(spawn, dict):
            parent = str_or_none(spawn.get("parent_thread_id"), 200) or parent
            name = str_or_none(spawn.get("agent_nickname"), 200) or str_or_none(
                spawn.get("agent_role"), 200
            )
            if name:
                self.state["subagent_name"] = name
        if parent and parent != own:
            self.state["session"] = parent
            self.state["subagent"] = own

    def event(self, payload: dict[str, Any]) -> None:
        etype = payload.get("type")
        if etype == "thread_name_updated":
            title = text_of(payload.get("thread_name"), MAX_TITLE).strip()
            session = self.session()
            if title and session:
                self.result.titles.append(
                    SessionTitle(
                        agent=AGENT,
                        session=session,
                        title=title,
                        project=self.state.get("cwd"),
                        kind="thread_name",
                    )
                )
        elif etype == "error":
            text = text_of(payload.get("message"))
            if text.strip():
                self.emit("system", "error", text)
        elif isinstance(etype, str) and etype in known.CODEX_QUIET_EVENTS:
            self.result.skipped += 1
        else:
            self.result.count_unknown(f"codex:event_msg:{str(etype)[:64]}")

    def response_item(self, item: dict[str, Any]) -> None:
        itype = item.get("type")
        if itype == "message":
            self.message(item)
        elif itype == "reasoning":
            texts = [
                text_of(part.get("text"))
                for key in ("summary", "content")
                for part in _list(item.get(key))
                if isinstance(part, dict)
            ]
            text = "\n\n".join(t for t in texts if t.strip())
            if text:
                self.emit("thinking", "reasoning", text)
            else:
                self.result.skipped += 1  # encrypted only
        elif itype in ("function_call", "custom_tool_call", "tool_search_call"):
            name = str_or_none(item.get("name"), 200) or str(itype).replace("_call", "")
            args = item.get("arguments") if itype != "custom_tool_call" else item.get("input")
            self.tool_call(item, name, args)
        elif itype == "local_shell_call":
            action = item.get("action")
            args = action.get("command") if isinstance(action, dict) else action
            self.tool_call(item, "local_shell", args)
        elif itype == "web_search_call":
            action = item.get("action")
            query = (
                action.get("query") or action.get("queries") if isinstance(action, dict) else None
            )
            self.tool_call(item, "web_search", query if query else action)
        elif itype == "image_generation_call":
            self.tool_call(item, "image_generation", item.get("revised_prompt"))
        elif itype in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
            self.tool_output(item)
        elif itype == "agent_message":
            text = _content_text(item.get("content"))
            if text.strip():
                self.emit("system", "agent_message", text)
            else:
                self.result.skipped += 1
        elif itype == "ghost_snapshot":
            self.result.skipped += 1
        else:
            self.result.count_unknown(f"codex:response_item:{str(itype)[:64]}")

    def message(self, item: dict[str, Any]) -> None:
        role = item.get("role")
        if role == "assistant":
            text = _content_text(item.get("content"))
            if text.strip():
                self.emit("assistant", "message", text)
                return
        elif role == "user":
            texts: list[str] = []
            content = item.get("content")
            if isinstance(content, str):
                content = [{"type": "input_text", "text": content}]
            for block in _list(content):
                if not isinstance(block, dict):
                    continue
                if block.get("type") in ("input_image", "image"):
                    if block.get("image_url"):
                        texts.append("[image]")
                    continue
                text = text_of(block.get("text"))
                if text.lstrip().startswith(known.CODEX_INJECTED):
                    cwd = _CWD.search(text)
                    if cwd and not self.state.get("cwd"):
                        self.state["cwd"] = cwd.group(1).strip()
                    continue
                if text.strip():
                    texts.append(text)
            text = "\n".join(texts)
            if text.strip():
                self.emit("user", "message", text)
                return
        self.result.skipped += 1  # developer/system prompts, injected context, empty

    def tool_call(self, item: dict[str, Any], name: str, args: Any) -> None:
        call_id = str_or_none(item.get("call_id"), 200) or str_or_none(item.get("id"), 200)
        if call_id:
            calls = self.state.setdefault("calls", {})
            if isinstance(calls, dict):
                calls[call_id] = name
                trim_map(calls, _CALLS_LIMIT)
        tool_input = compact_json(args) if args is not None else ""
        text = f"{name} {tool_input}".strip()
        uid = "codex:call:" + digest(call_id, "call") if call_id else None
        self.emit("tool_use", "call", text, uid=uid, tool=name, tool_input=tool_input or None)

    def tool_output(self, item: dict[str, Any]) -> None:
        output = item.get("output")
        if isinstance(output, str) and output.startswith("{"):
            decoded = load_json(output.encode("utf-8", "surrogatepass"))
            if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
                output = decoded["output"]
        if isinstance(output, dict | list):
            text = _content_text(output) if isinstance(output, list) else compact_json(output)
        else:
            text = text_of(output)
        if not text.strip():
            self.result.skipped += 1
            return
        call_id = str_or_none(item.get("call_id"), 200)
        calls = self.state.get("calls")
        tool = calls.get(call_id) if call_id and isinstance(calls, dict) else None
        uid = "codex:output:" + digest(call_id, "output") if call_id else None
        self.emit("tool_result", "output", text, uid=uid, tool=tool)

    def session(self) -> str | None:
        session = self.state.get("session")
        return session if isinstance(session, str) else session_from_path(self.source.path)

    def emit(self, role: str, kind: str, text: str, uid: str | None = None,
             tool: str | None = None, tool_input: str | None = None) -> None:
        if uid is None:
            key = digest(kind, role, text)[:16]
            seen = self.state.setdefault("seen", {})
            count = 0
            if isinstance(seen, dict):
                count = seen.get(key, 0)
                if count.__class__ is not int and not isinstance(count, int):
                    count = 0
                seen[key] = count + 1
                if len(seen) > _SEEN_LIMIT:
                    trim_map(seen, _SEEN_LIMIT)
            uid = f"codex:{key}:{count}"
        state = self.state
        subagent = state.get("subagent")
        session = state.get("session")  # `self.session()`, inlined (once per record)
        if session.__class__ is not str:
            session = self.session()
        self.result.records.append(
            checked(Record(
                uid=uid,
                agent=AGENT,
                session=session,
                role=role,
                text=text,
                cursor=self.cursor,
                at=self.at,
                project=state.get("cwd"),
                subagent=subagent,
                subagent_name=state.get("subagent_name") if subagent else None,
                tool=tool,
                tool_input=tool_input,
            ))
        )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return text_of(content)
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            if block.get("type") in ("input_image", "image"):
                if block.get("image_url"):
                    texts.append("[image]")
            elif isinstance(block.get("text"), str):
                texts.append(text_of(block["text"]))
    return join_lines(texts)


def _history_line(obj: dict[str, Any], cursor: str, result: ParseResult) -> None:
    text = text_of(obj.get("text"))
    if not text.strip():
        result.skipped += 1
        return
    session = str_or_none(obj.get("session_id"), 200)
    stamp = obj.get("ts")
    result.records.append(
        make_record(
            uid="codex:history:" + digest(session or "", str(stamp), text),
            agent=AGENT,
            session=session,
            role="user",
            text=text,
            cursor=cursor,
            at=iso_ms(stamp),
        )
    )
