"""Claude Code transcripts → records (formats.md §1).

Layouts: `claude.session` and `claude.subagent` (JSONL lines), `claude.subagent_meta` (the
`agent-*.meta.json` snapshot naming a subagent), `claude.tool_result` (a persisted
`tool-results/*.txt` output), `claude.history` (the prompt history `history.jsonl`).

Promises:
- uid = "claude:<uuid>" for the text of a line; "claude:<uuid>#<block index>" for each
  thinking/tool_use/tool_result block, so a record copied by resume/fork into another file
  (same uuid) gets the same uid.
- The project comes from `cwd` (remembered in `state` for lines without one), never from the
  encoded folder name; the session from `sessionId`, else the file name's UUID.
- Skipped on purpose (known, not indexed): progress, file-history snapshots, queue operations,
  metadata lines, most attachments, `isMeta` user text, empty/redacted thinking, base64 images
  (replaced by "[image]"). Types and blocks not listed here are counted in `unknown`.
"""

from __future__ import annotations

import re
from typing import Any

from readers import parse_known as known
from readers.builtin_paths import claude_classify as classify  # noqa: F401 (reader protocol)
from readers.builtin_paths import claude_descend as descend  # noqa: F401 (reader protocol)
from readers.parse_common import (
    MAX_TEXT,
    MAX_TITLE,
    checked,
    compact_json,
    digest,
    iso_ms,
    join_lines,
    load_object,
    make_record,
    session_from_path,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, Record, SessionTitle, SourceInfo, SubagentNamed

AGENT = "claude"

_AGENT_FILE = re.compile(r"agent-([A-Za-z0-9_-]+?)(?:\.meta)?\.(?:jsonl|json)$")
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|$)", re.S)
_TAG = re.compile(r"</?[a-z][a-z0-9-]*>")
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)

_OUTPUT_WRAPPERS = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
)
_NO_CONTENT = "(no content)"  # Claude's placeholder for an empty output or reply
_TOOL_MAP_LIMIT = 512  # tool results follow their call closely; state stays small


def subagent_from_path(path: str) -> str | None:
    match = _AGENT_FILE.search(path.rsplit("/", 1)[-1])
    return match.group(1) if match else None


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    if not line or line.isspace():  # blank (no copy of the line, unlike strip)
        return result
    obj = load_object(line)
    if obj is None:
        result.count_unknown("claude:undecodable")
        return result
    cursor = f"{generation}:{offset}"
    if source.layout == "claude.history":
        _history_line(obj, cursor, result)
        return result
    kind = obj.get("type")
    if not isinstance(kind, str):
        result.count_unknown("claude:untyped")
        return result
    ctx = _Context(source, state, obj, cursor)
    if kind == "user":
        _user(ctx, result)
    elif kind == "assistant":
        _assistant(ctx, result)
    elif kind == "system":
        _system(ctx, result)
    elif kind == "attachment":
        _attachment(ctx, result)
    elif kind == "summary":
        # A summary titles the branch ending at leafUuid, usually in ANOTHER (earlier) session
        # file: only a leaf known to end this file names this session.
        leaf = str_or_none(obj.get("leafUuid"), 200)
        if leaf and leaf == state.get("last_uuid"):
            _title(ctx, obj.get("summary"), "summary", result, f"claude:{leaf}")
        else:
            result.skipped += 1
    elif kind in known.CLAUDE_TITLE_TYPES:
        if kind == "custom-title":
            state["named"] = True  # the user's own name outranks any later AI title
        if kind == "ai-title" and state.get("named"):
            result.skipped += 1
        else:
            _title(ctx, obj.get(known.CLAUDE_TITLE_TYPES[kind]), kind, result)
    elif kind in known.CLAUDE_QUIET_TYPES:
        result.skipped += 1
    else:
        result.count_unknown(f"claude:{kind[:64]}")
    return result


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    if source.layout == "claude.subagent_meta":
        meta = load_object(data)
        if meta is None:
            result.count_unknown("claude:meta-undecodable")
            return result
        name = str_or_none(meta.get("agentType"), 200) or str_or_none(meta.get("name"), 200)
        description = str_or_none(meta.get("description"), 500)
        label = name if not description else f"{name}: {description}" if name else description
        subagent = subagent_from_path(source.path)
        if label and subagent:
            state["subagent_name"] = label
            result.subagents.append(
                SubagentNamed(
                    agent=AGENT,
                    session=session_from_path(source.path),
                    subagent=subagent,
                    name=label,
                )
            )
        return result
    if source.layout == "claude.tool_result":
        text = text_of(data[: MAX_TEXT * 4].decode("utf-8", "replace"))
        if not text.strip():
            return result
        stem = source.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        session = session_from_path(source.path.rsplit("/tool-results/", 1)[0])
        # Shares its session transcript's state (readers.parse.state_scope): the project
        # and the time of the result line naming it, else of the last line seen.
        times = state.get("result_at")
        at = times.get(stem) if isinstance(times, dict) else None
        at = at if isinstance(at, int) else state.get("last_at")
        result.records.append(
            make_record(
                uid=f"claude:tool-result:{session}:{stem}",
                agent=AGENT,
                session=session,
                role="tool_result",
                text=text,
                cursor="0:0",
                project=state.get("cwd"),
                at=at if isinstance(at, int) else None,
            )
        )
        return result
    result.count_unknown(f"claude:snapshot:{source.layout}")
    return result


class _Context:
    """What every record of one line shares."""

    __slots__ = ("at", "cursor", "obj", "project", "session", "state", "subagent",
                 "subagent_name", "uuid")

    def __init__(
        self, source: SourceInfo, state: dict[str, Any], obj: dict[str, Any], cursor: str
    ) -> None:
        self.state = state
        self.obj = obj
        self.cursor = cursor
        # `str_or_none` asked only off the common shape (an exact ASCII str within its
        # limit, kept as it is): "" stays "", which every test below reads as None
        cwd = obj.get("cwd")
        if cwd.__class__ is not str or len(cwd) > 4096 or not cwd.isascii():
            cwd = str_or_none(cwd, 4096)
        if cwd:
            state["cwd"] = cwd
        session = obj.get("sessionId")
        if session.__class__ is not str or len(session) > 200 or not session.isascii():
            session = str_or_none(session, 200)
        if session:
            state.setdefault("session", session)
        else:
            session = state.get("session") or session_from_path(source.path)
        self.session: str | None = session
        self.project: str | None = state.get("cwd")
        self.subagent: str | None = None
        if source.layout == "claude.subagent":
            self.subagent = str_or_none(obj.get("agentId"), 200) or subagent_from_path(source.path)
        elif obj.get("isSidechain") is True:
            self.subagent = str_or_none(obj.get("agentId"), 200) or "sidechain"
        self.subagent_name: str | None = state.get("subagent_name") if self.subagent else None
        uuid = obj.get("uuid")
        if uuid.__class__ is not str or len(uuid) > 200 or not uuid.isascii():
            uuid = str_or_none(uuid, 200)
        self.uuid = uuid or "line-" + digest(cursor, str(obj.get("timestamp")))
        if uuid:
            state["last_uuid"] = uuid
        self.at = iso_ms(obj.get("timestamp"))
        if self.at is not None and not self.subagent:
            state["last_at"] = self.at

    def record(self, role: str, text: str, block: int | None = None, tool: str | None = None,
               tool_input: str | None = None) -> Record:
        uid = f"claude:{self.uuid}" if block is None else f"claude:{self.uuid}#{block}"
        return checked(Record(
            uid=uid,
            agent=AGENT,
            session=self.session,
            role=role,
            text=text,
            cursor=self.cursor,
            at=self.at,
            project=self.project,
            subagent=self.subagent,
            subagent_name=self.subagent_name,
            tool=tool,
            tool_input=tool_input,
        ))


def _user_text(raw: str) -> tuple[str, str] | None:
    """(role, text) of a user string, or None when it is injected noise."""
    if raw.startswith("<local-command-caveat>"):
        return None
    if raw.startswith(_OUTPUT_WRAPPERS) or raw.startswith("[Request interrupted by user"):
        text = _TAG.sub("", raw).strip()
        return ("system", text) if text and text != _NO_CONTENT else None
    if raw.startswith("<bash-input>"):
        text = _TAG.sub("", raw).strip()
        return ("user", f"! {text}") if text else None
    if "<" not in raw:  # one memchr: no tag to look for
        pass
    elif "<command-name>" in raw:
        name = _COMMAND_NAME.search(raw)
        args = _COMMAND_ARGS.search(raw)
        text = " ".join(m.group(1).strip() for m in (name, args) if m and m.group(1).strip())
        return ("user", text) if text else None
    elif "<system-reminder>" in raw:
        raw = _REMINDER.sub("", raw)
    raw = raw.strip()
    return ("user", raw) if raw else None


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _message_blocks(content: Any, result: ParseResult) -> list[Any]:
    """A message's content blocks; content of another type than text or a list, and blocks
    that are not objects, are counted as `claude:shape` (damage, in capture's report), not
    dropped silently (issue 31: `"content": 12` vanished without a count)."""
    if content is not None and not isinstance(content, (str, list, tuple)):
        result.count_unknown("claude:shape")
    blocks = _blocks(content)
    for block in blocks:
        if not isinstance(block, dict):
            result.count_unknown("claude:shape")
    return blocks


def _user(ctx: _Context, result: ParseResult) -> None:
    message = ctx.obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if ctx.obj.get("isMeta") is True:
        result.skipped += 1
        return
    compact_summary = ctx.obj.get("isCompactSummary") is True
    texts: list[str] = []
    role = "user"
    if isinstance(content, str):  # a plain prompt: the one text block `_blocks` makes of it
        found = _user_text(text_of(content))
        if found:
            role = found[0]
            texts.append(found[1])
        content = ()
    for index, block in enumerate(_message_blocks(content, result)):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text":
            found = _user_text(text_of(block.get("text")))
            if found:
                role = found[0] if not texts else role
                texts.append(found[1])
        elif btype == "image":
            texts.append("[image]")
        elif btype == "tool_result":
            _tool_result(ctx, block, index, result)
        elif btype == "document":
            texts.append("[document]")
        else:
            result.count_unknown(f"claude:block:{str(btype)[:64]}")
    text = join_lines(texts)
    if text:
        if compact_summary:
            role = "system"
        result.records.append(ctx.record(role, text[:MAX_TEXT]))
    elif not texts and content is None:
        result.count_unknown("claude:user-without-message")


def _tool_result(ctx: _Context, block: dict[str, Any], index: int, result: ParseResult) -> None:
    content = block.get("content")
    parts: list[str] = []
    for item in _blocks(content):
        if isinstance(item, dict):
            if item.get("type") == "text":
                parts.append(text_of(item.get("text")))
            elif item.get("type") == "image":
                parts.append("[image]")
            elif item.get("type") == "tool_reference":
                parts.append(text_of(item.get("tool_name")))
    text = join_lines(parts)
    if not text:
        result.skipped += 1
        return
    tools = ctx.state.get("tools")
    use_id = block.get("tool_use_id")
    tool = tools.get(use_id) if isinstance(tools, dict) and isinstance(use_id, str) else None
    if isinstance(use_id, str) and ctx.at is not None:
        # a persisted output (tool-results/<use_id>.txt) is dated by its result line
        times = ctx.state.setdefault("result_at", {})
        if isinstance(times, dict):
            times[use_id] = ctx.at
            trim_map(times, _TOOL_MAP_LIMIT)
    result.records.append(ctx.record("tool_result", text[:MAX_TEXT], index, tool=tool))


def _assistant(ctx: _Context, result: ParseResult) -> None:
    message = ctx.obj.get("message")
    if not isinstance(message, dict):
        result.count_unknown("claude:assistant-without-message")
        return
    synthetic = message.get("model") == "<synthetic>" or ctx.obj.get("isApiErrorMessage")
    texts: list[str] = []
    for index, block in enumerate(_message_blocks(message.get("content"), result)):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text":
            texts.append(text_of(block.get("text")))
        elif btype == "thinking":
            thought = text_of(block.get("thinking"))
            if thought.strip():
                result.records.append(ctx.record("thinking", thought, index))
            else:
                result.skipped += 1
        elif btype == "redacted_thinking":
            result.skipped += 1
        elif btype in ("tool_use", "server_tool_use"):
            _tool_use(ctx, block, index, result)
        elif btype == "web_search_tool_result":
            text = compact_json(block.get("content"), MAX_TEXT)
            result.records.append(ctx.record("tool_result", text, index))
        elif btype == "image":
            texts.append("[image]")
        else:
            result.count_unknown(f"claude:block:{str(btype)[:64]}")
    text = join_lines(texts).strip()
    if text and text != _NO_CONTENT:
        result.records.append(ctx.record("system" if synthetic else "assistant", text))


def _tool_use(ctx: _Context, block: dict[str, Any], index: int, result: ParseResult) -> None:
    name = str_or_none(block.get("name"), 200) or "tool"
    use_id = block.get("id")
    if isinstance(use_id, str):
        tools = ctx.state.setdefault("tools", {})
        if isinstance(tools, dict):
            tools[use_id] = name
            trim_map(tools, _TOOL_MAP_LIMIT)
    tool_input = compact_json(block.get("input"))
    text = f"{name} {tool_input}".strip()
    result.records.append(
        ctx.record("tool_use", text, index, tool=name, tool_input=tool_input or None)
    )


def _system(ctx: _Context, result: ParseResult) -> None:
    subtype = ctx.obj.get("subtype")
    if isinstance(subtype, str) and subtype in known.CLAUDE_QUIET_SYSTEM:
        result.skipped += 1
        return
    text = _TAG.sub("", text_of(ctx.obj.get("content"))).strip()
    if text:
        result.records.append(ctx.record("system", text))
    else:
        result.skipped += 1


def _attachment(ctx: _Context, result: ParseResult) -> None:
    attachment = ctx.obj.get("attachment")
    if isinstance(attachment, dict) and attachment.get("type") == "queued_command":
        text = text_of(attachment.get("prompt"))
        if text.strip():
            result.records.append(ctx.record("user", text))
            return
    result.skipped += 1


def _title(
    ctx: _Context, value: Any, kind: str, result: ParseResult, leaf: str | None = None
) -> None:
    title = text_of(value, MAX_TITLE).strip()
    if title and ctx.session:
        result.titles.append(
            SessionTitle(
                agent=AGENT,
                session=ctx.session,
                title=title,
                project=ctx.project,
                kind=kind,
                leaf=leaf,
            )
        )
    else:
        result.skipped += 1


def _history_line(obj: dict[str, Any], cursor: str, result: ParseResult) -> None:
    display = text_of(obj.get("display"))
    texts = [display] if display else []
    pasted = obj.get("pastedContents")
    if isinstance(pasted, dict):
        for item in pasted.values():
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                texts.append(text_of(item["content"]))
    text = "\n".join(texts).strip()
    if not text:
        result.skipped += 1
        return
    session = str_or_none(obj.get("sessionId"), 200)
    stamp = obj.get("timestamp")
    result.records.append(
        make_record(
            uid="claude:history:" + digest(session or "", str(stamp), text),
            agent=AGENT,
            session=session,
            role="user",
            text=text[:MAX_TEXT],
            cursor=cursor,
            at=iso_ms(stamp),
            project=str_or_none(obj.get("project"), 4096),
        )
    )
