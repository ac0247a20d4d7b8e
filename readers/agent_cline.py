"""Cline, Roo Code and Kilo Code task folders: discovery and the pure parser.

The root is an editor's `User/globalStorage` folder (VS Code, VS Code Server, forks); each
extension keeps `<extension id>/tasks/<taskId = start ms>/` with:
- `cline.api` (snapshot) `api_conversation_history.json`: the Anthropic `MessageParam[]` sent
  to the model; no timestamps. Indexed: tool uses (Cline 3.x writes them as XML tags in the
  assistant text, `<read_file><path>…</path></read_file>`; native `tool_use` blocks too) and
  tool results (`[tool for 'x'] Result:` text blocks and the blocks after them, or native
  `tool_result` blocks). Their `at` is the task start (the folder name), the best the file
  offers. `<environment_details>` blocks (injected context) are not indexed; its
  "# Current Working Directory (…)" line gives the task's project;
- `cline.ui` (snapshot) `ui_messages.json`: the UI's `ClineMessage[]` with `ts` (ms):
  the task and `user_feedback` → user, `text` → assistant, `reasoning` → thinking,
  `completion_result` → assistant, `error` → system; tool, command, api_req_started,
  checkpoint and resume entries repeat the API history or are UI state (skipped);
- `cline.meta` (snapshot) `task_metadata.json`: files in context and model usage; nothing
  is indexed from it (captured so restore is complete).

Promises: pure and never raising; a task's files share one state (the project, learned from
the API history, which sorts first); session = the task id, with `subagent_name` naming the
extension for Roo Code / Kilo Code. A 0-byte or truncated JSON file is counted as
`<layout>:undecodable`.
"""

from __future__ import annotations

import re
from typing import Any

from readers.parse_common import (
    compact_json,
    digest,
    load_json,
    make_record,
    str_or_none,
    text_of,
)
from readers.records import ParseResult, SourceInfo

AGENT = "cline"
EXTENSIONS = {
    "saoudrizwan.claude-dev": None,
    "rooveterinaryinc.roo-cline": "Roo Code",
    "kilocode.kilo-code": "Kilo Code",
}
_FILES = {"api_conversation_history.json": "cline.api", "ui_messages.json": "cline.ui",
          "task_metadata.json": "cline.meta"}
EXAMPLE_PATHS = {  # one path per layout (tests: classify, fuzzing)
    layout: f"saoudrizwan.claude-dev/tasks/1744702133547/{name}" for name, layout in _FILES.items()
}
_CWD = re.compile(r"# Current Working Directory \(([^)\n]+)\)")
_RESULT = re.compile(r"^\[(\w+)(?: for '([^'\n]*)')?\] Result:", re.S)
_TAG = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.S)
_CONTEXT_TAGS = ("environment_details", "task", "feedback", "answer", "user_message")
_UI_ROLES = {"user_feedback": "user", "text": "assistant", "reasoning": "thinking",
             "completion_result": "assistant", "error": "system"}
_UI_QUIET = frozenset({
    "api_req_started", "api_req_finished", "api_req_retried", "tool", "command",
    "command_output", "checkpoint_created", "resume_task", "resume_completed_task",
    "followup", "browser_action", "browser_action_result", "browser_action_launch",
    "mcp_server_request_started", "mcp_server_response", "use_mcp_server",
    "shell_integration_warning", "deleted_api_reqs", "diff_error", "clineignore_error",
    "task_progress", "info", "condense", "mistake_limit_reached", "auto_approval_max_req_reached",
    "new_task", "plan_mode_respond", "act_mode_respond", "load_mcp_documentation",
    "api_req_failed", "user_feedback_diff", "subtask_result",
})


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) != 4 or parts[0] not in EXTENSIONS or parts[1] != "tasks":
        return None
    return _FILES.get(parts[3])


def descend(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] not in EXTENSIONS:
        return False
    return len(parts) == 1 or (parts[1] == "tasks" and len(parts) <= 3)


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    return prefix + source.path.rsplit("/", 1)[0]  # the task folder


def _base(source: SourceInfo, state: dict[str, Any]) -> dict[str, Any]:
    ext, _, task = source.path.split("/")[:3]
    start = int(task) if task.isdigit() and 10**11 < int(task) < 10**14 else None
    return {"agent": AGENT, "session": task, "project": state.get("cwd"), "at": start,
            "subagent_name": EXTENSIONS.get(ext)}


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    value = load_json(data)
    if value is None:
        result.count_unknown(f"{source.layout}:undecodable")
        return result
    if source.layout == "cline.meta":
        result.skipped += 1
        return result
    if not isinstance(value, list):
        result.count_unknown(f"{source.layout}:shape")
        return result
    if source.layout == "cline.api":
        _api(source, state, value, result)
    else:
        _ui(source, state, value, result)
    return result


def _emit(result: ParseResult, base: dict[str, Any], **fields: Any) -> None:
    if fields.get("text"):
        result.records.append(make_record(**{k: v for k, v in base.items() if v is not None},
                                          **fields))


# --- the API history -------------------------------------------------------------------

def _api(source: SourceInfo, state: dict[str, Any], messages: list[Any],
         result: ParseResult) -> None:
    for msg in messages:
        blocks = msg.get("content") if isinstance(msg, dict) else None
        for block in blocks if isinstance(blocks, list) else []:
            text = block.get("text") if isinstance(block, dict) else None
            found = _CWD.search(text) if isinstance(text, str) else None
            if found:
                state["cwd"] = found.group(1).strip()
                break
        if "cwd" in state:
            break
    base = _base(source, state)
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            result.count_unknown("cline.api:message")
            continue
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            result.count_unknown("cline.api:content")
            continue
        cursor = f"0:{i}"
        if msg["role"] == "assistant":
            _assistant_blocks(blocks, f"cline:{base['session']}:{i}", base, cursor, result)
        else:
            _user_blocks(blocks, f"cline:{base['session']}:{i}", base, cursor, result)


def _assistant_blocks(blocks: list[Any], uid: str, base: dict[str, Any], cursor: str,
                      result: ParseResult) -> None:
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            for k, m in enumerate(_TAG.finditer(block["text"])):
                name = m.group(1)
                if name == "thinking":
                    continue  # the UI's `text` message repeats it, with its time
                params = {p.group(1): p.group(2).strip() for p in _TAG.finditer(m.group(2))}
                args = compact_json(params or m.group(2).strip())
                _emit(result, {**base, "cursor": cursor}, uid=f"{uid}#{j}.{k}",
                      role="tool_use", text=f"{name} {args}", tool=name, tool_input=args)
        elif kind == "tool_use":
            name = str_or_none(block.get("name"), 200) or "tool"
            args = compact_json(block.get("input") or {})
            _emit(result, {**base, "cursor": cursor}, uid=f"{uid}#{j}", role="tool_use",
                  text=f"{name} {args}", tool=name, tool_input=args)
        elif kind in ("thinking", "redacted_thinking", "image"):
            result.skipped += 1
        else:
            result.count_unknown(f"cline.api:assistant:{str(kind)[:40]}")


def _user_blocks(blocks: list[Any], uid: str, base: dict[str, Any], cursor: str,
                 result: ParseResult) -> None:
    tool: str | None = None
    parts: list[str] = []
    start = 0

    def flush() -> None:
        if tool is not None:
            _emit(result, {**base, "cursor": cursor}, uid=f"{uid}#{start}",
                  role="tool_result", text=text_of("\n".join(p for p in parts if p.strip())),
                  tool=tool)

    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            m = _RESULT.match(text)
            if m:
                flush()
                tool, parts, start = m.group(1), [text[m.end():].strip()], j
            elif text.lstrip().startswith(tuple(f"<{t}>" for t in _CONTEXT_TAGS)) or (
                    text.startswith("[TASK RESUMPTION]")):
                flush()
                tool, parts = None, []  # injected context, or the UI's own user text
            elif tool is not None:
                parts.append(text)
        elif kind == "tool_result":
            flush()
            inner = block.get("content")
            body = inner if isinstance(inner, str) else "\n".join(
                b.get("text", "") for b in inner if isinstance(b, dict)) if isinstance(
                inner, list) else ""
            tool, parts, start = "tool", [body], j
        elif kind == "image":
            parts.append("[image]")
        else:
            result.count_unknown(f"cline.api:user:{str(kind)[:40]}")
    flush()


# --- the UI messages -------------------------------------------------------------------

def _ui(source: SourceInfo, state: dict[str, Any], messages: list[Any],
        result: ParseResult) -> None:
    base = _base(source, state)
    first_text = True
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("type") not in ("say", "ask"):
            result.count_unknown("cline.ui:message")
            continue
        what = msg.get(msg["type"])
        ts = msg.get("ts")
        at = ts if isinstance(ts, int) and not isinstance(ts, bool) and ts > 0 else base["at"]
        role = _UI_ROLES.get(str(what))
        if what == "text" and msg["type"] == "say" and first_text:
            role, first_text = "user", False  # the task the user typed
        elif what == "text":
            first_text = False
        if role is None:
            if what in _UI_QUIET or what in ("completion_result",):
                result.skipped += 1
            else:
                result.count_unknown(f"cline.ui:{msg['type']}:{str(what)[:40]}")
            continue
        if msg["type"] == "ask" and what == "completion_result":
            result.skipped += 1  # the button; its text is the `say` before it
            continue
        text = text_of(msg.get("text"))
        if msg.get("images"):
            text = (text + "\n[image]").strip()
        key = digest(str(ts), str(what))
        _emit(result, {**base, "at": at, "cursor": f"0:{i}"},
              uid=f"cline:{base['session']}:ui:{key}", role=role, text=text)
