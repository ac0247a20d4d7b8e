"""Gemini CLI (`~/.gemini`): discovery and the pure parser (also the old Qwen Code tree).

Layouts (capture mode in readers/registry.py):
- `gemini.chat` (snapshot): `tmp/<dir>/chats/session-*.json`, one rewritten JSON object per
  session; subagent chats `tmp/<dir>/chats/<parent>/<id>.json`;
- `gemini.chat_log` (append): the v0.39+ `session-*.jsonl` update log: a metadata line, then
  message records, `{"$set": {...}}` metadata updates (`$set.messages` replaces the list) and
  `{"$rewindTo": id}`; a message id seen again replaces the earlier record (same uid);
- `gemini.logs` (snapshot): `tmp/<dir>/logs.json`, the prompt log (user records);
- `gemini.checkpoint` (snapshot): `tmp/<dir>/checkpoint-<tag>.json` from `/chat save`, a raw
  API `Content[]` with no timestamps and no ids (`at` is None: the format has no time);
- `gemini.projects` (snapshot) `projects.json` and `gemini.project_root` (snapshot)
  `tmp/<dir>/.project_root`: they only teach the project path of a `<dir>`.

Promises: pure and never raising (readers.parse catches); every source of one root shares one
state (`state_scope`), so a chat learns its project from `.project_root`, `projects.json`,
a path whose sha256 is the chat's `projectHash`, or the cwd named in a checkpoint's setup
text; state maps are bounded. A `$rewindTo` drops nothing already indexed (the rewound turns
were said; the log keeps them) and is counted as skipped.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import unquote

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

AGENT = "gemini"
_SETUP = re.compile(r"This is the (Gemini CLI|Qwen Code)\. We are setting up the context")
_CWD = re.compile(r"I'm currently working in the directory: ([^\n]+)")
_SYSTEM_TYPES = ("info", "error", "warning")
_MAP_LIMIT = 1024
EXAMPLE_PATHS = {  # one path per layout (tests: classify, fuzzing)
    "gemini.chat": "tmp/p/chats/session-2026-01-01T00-00-abcd1234.json",
    "gemini.chat_log": "tmp/p/chats/session-2026-01-01T00-00-abcd1234.jsonl",
    "gemini.logs": "tmp/p/logs.json",
    "gemini.checkpoint": "tmp/p/checkpoint-tag.json",
    "gemini.projects": "projects.json",
    "gemini.project_root": "tmp/p/.project_root",
}


# --- discovery -------------------------------------------------------------------------

def classify_tree(rel: str, agent: str) -> str | None:
    """The Gemini-style `tmp/` tree (Gemini CLI, old Qwen Code) and `projects.json`."""
    parts = rel.split("/")
    name = parts[-1]
    if parts == ["projects.json"]:
        return f"{agent}.projects"
    if parts[0] != "tmp" or len(parts) < 3:
        return None
    if len(parts) == 3:
        if name == ".project_root":
            return f"{agent}.project_root"
        if name == "logs.json":
            return f"{agent}.logs"
        if name.startswith("checkpoint-") and name.endswith(".json"):
            return f"{agent}.checkpoint"
        return None
    if parts[2] != "chats" or len(parts) > 5:
        return None
    if len(parts) == 4 and not name.startswith("session-"):
        return None
    if name.endswith(".json"):
        return f"{agent}.chat"
    if name.endswith(".jsonl"):
        return f"{agent}.chat_log"
    return None


def descend_tree(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] != "tmp":
        return False
    return len(parts) <= 2 or (parts[2] == "chats" and len(parts) <= 4)


def classify(rel: str) -> str | None:
    return classify_tree(rel, AGENT)


def descend(rel_dir: str) -> bool:
    return descend_tree(rel_dir)


def may_hold_session(rel: str, session: str) -> bool:
    """restore --session: a chat file names only the first 8 characters of its session;
    prompt logs, checkpoints and project files belong to no single session."""
    name = rel.rsplit("/", 1)[-1]
    if "/chats/" not in rel:
        return True
    return name.startswith("session-") and name.rsplit(".", 1)[0].endswith(session[:8])


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    return prefix + source.agent  # a root's sources share what they learn about projects


# --- parsing ---------------------------------------------------------------------------

def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    return parse_tree_snapshot(source, state, data, AGENT, "gemini")


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    return parse_tree_line(source, state, line, offset, generation, AGENT, "gemini")


def parse_tree_snapshot(
    source: SourceInfo, state: dict[str, Any], data: bytes, agent: str, assistant: str
) -> ParseResult:
    result = ParseResult()
    kind = source.layout.split(".", 1)[1]
    parts = source.path.split("/")
    if kind == "project_root":
        path = data.decode("utf-8", "replace").strip()
        if path:
            _learn_dir(state, parts[1], path)
        return result
    value = load_json(data)
    if kind == "projects":
        projects = value.get("projects") if isinstance(value, dict) else None
        if not isinstance(projects, dict):
            result.count_unknown(f"{source.layout}:shape")
            return result
        for path, slug in projects.items():
            if isinstance(slug, str) and isinstance(path, str):
                _learn_dir(state, slug, path)
        return result
    if value is None:
        result.count_unknown(f"{source.layout}:undecodable")
        return result
    if kind == "logs":
        _logs(source, state, value, result, agent)
    elif kind == "checkpoint":
        _checkpoint(source, state, value, result, agent, parts)
    elif kind == "chat":
        messages = value.get("messages") if isinstance(value, dict) else None
        if not isinstance(value, dict) or not isinstance(messages or [], list):
            result.count_unknown(f"{source.layout}:shape")  # wrong types: damage, named
            return result
        ctx = _chat_context(source, state, value, agent)
        _summary(ctx, value, result)
        for i, msg in enumerate(value.get("messages") or []):
            _message(ctx, msg, i, result, assistant)
    else:
        result.count_unknown(f"{source.layout}:layout")
    return result


def parse_tree_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int,
    agent: str, assistant: str,
) -> ParseResult:
    result = ParseResult()
    obj = load_json(line)
    if not isinstance(obj, dict):
        result.count_unknown(f"{source.layout}:undecodable")
        return result
    meta = state.setdefault("files", {}).get(source.path)
    if "$rewindTo" in obj:
        result.skipped += 1
        return result
    if "$set" in obj:
        update = obj["$set"]
        if not isinstance(update, dict):
            result.count_unknown(f"{source.layout}:$set")
            return result
        meta = _file_meta(source, state, {**(meta or {}), **_meta_fields(update)}, agent)
        ctx = _chat_context(source, state, meta, agent)
        _summary(ctx, update, result)
        for i, msg in enumerate(update.get("messages") or []):
            _message(ctx, msg, i, result, assistant, f"{generation}:{offset}")
        return result
    if "type" in obj and "id" in obj:
        if meta is None:
            meta = _file_meta(source, state, {}, agent)
        ctx = _chat_context(source, state, meta, agent)
        _message(ctx, obj, offset, result, assistant, f"{generation}:{offset}")
        return result
    if "sessionId" in obj:  # the metadata line
        _file_meta(source, state, _meta_fields(obj), agent)
        return result
    result.count_unknown(f"{source.layout}:line")
    return result


# --- projects --------------------------------------------------------------------------

def _learn_dir(state: dict[str, Any], dirname: str, path: str) -> None:
    dirs = state.setdefault("dirs", {})
    dirs[dirname] = path
    trim_map(dirs, _MAP_LIMIT)
    _learn_path(state, path)


def _learn_path(state: dict[str, Any], path: str) -> None:
    hashes = state.setdefault("hashes", {})
    hashes[hashlib.sha256(path.encode("utf-8", "replace")).hexdigest()] = path
    trim_map(hashes, _MAP_LIMIT)


def project_of(state: dict[str, Any], dirname: str, project_hash: Any,
               directories: Any = None) -> str | None:
    """`.project_root`/projects.json for the folder, else a known path with that hash, else
    the chat's first workspace directory; a 64-hex folder is its own project hash."""
    found = state.get("dirs", {}).get(dirname)
    hashes = state.get("hashes", {})
    if found is None and isinstance(project_hash, str):
        found = hashes.get(project_hash)
    if found is None:
        found = hashes.get(dirname)
    if found is None and isinstance(directories, list) and directories:
        found = str_or_none(directories[0])
    return found if isinstance(found, str) else None


# --- chats -----------------------------------------------------------------------------

def _meta_fields(obj: dict[str, Any]) -> dict[str, Any]:
    keys = ("sessionId", "projectHash", "kind", "directories")
    return {k: obj[k] for k in keys if k in obj}


def _file_meta(source: SourceInfo, state: dict[str, Any], meta: dict[str, Any],
               agent: str) -> dict[str, Any]:
    files = state.setdefault("files", {})
    dirs = meta.get("directories")
    if isinstance(dirs, list):
        meta["directories"] = [d for d in dirs[:1] if isinstance(d, str)]
    files[source.path] = meta
    trim_map(files, _MAP_LIMIT)
    return meta


def _chat_context(source: SourceInfo, state: dict[str, Any], obj: dict[str, Any],
                  agent: str) -> dict[str, Any]:
    parts = source.path.split("/")  # tmp/<dir>/chats/[<parent>/]<file>
    own = str_or_none(obj.get("sessionId")) or _session_from_name(parts[-1])
    parent = parts[3] if len(parts) == 5 else None
    if isinstance(obj.get("directories"), list):
        for d in obj["directories"][:4]:
            if isinstance(d, str):
                _learn_path(state, d)
    return {
        "agent": agent,
        "session": parent or own,
        "subagent": own if parent else None,
        "project": project_of(state, parts[1], obj.get("projectHash"), obj.get("directories")),
    }


def _session_from_name(name: str) -> str:
    stem = name.rsplit(".", 1)[0]
    return stem[len("session-"):] if stem.startswith("session-") else stem


def _summary(ctx: dict[str, Any], obj: dict[str, Any], result: ParseResult) -> None:
    summary = text_of(obj.get("summary"), 512)
    if summary and ctx["session"] and not ctx["subagent"]:
        result.titles.append(SessionTitle(agent=ctx["agent"], session=ctx["session"],
                                          title=summary, project=ctx["project"],
                                          kind="summary"))


def content_text(content: Any) -> str:
    """Text of a `PartListUnion`: a string, a part, or a list of parts."""
    if isinstance(content, str):
        return text_of(content)
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                out.append(part["text"])
            elif "inlineData" in part or "fileData" in part:
                data = part.get("inlineData") or part.get("fileData") or {}
                mime = data.get("mimeType") if isinstance(data, dict) else None
                out.append(f"[{str(mime or 'file').split('/')[0]}]")
    return text_of("\n".join(out))


def _emit(ctx: dict[str, Any], result: ParseResult, **fields: Any) -> None:
    if not fields.get("text"):
        return
    result.records.append(make_record(
        agent=ctx["agent"], session=ctx["session"], subagent=ctx["subagent"],
        project=ctx["project"], **fields))


def _message(ctx: dict[str, Any], msg: Any, index: int, result: ParseResult,
             assistant: str, cursor: str | None = None) -> None:
    """One MessageRecord; `cursor` is the line's for the JSONL log, else the message id."""
    agent = ctx["agent"]
    if not isinstance(msg, dict):
        result.count_unknown(f"{agent}.chat:message")
        return
    typ = msg.get("type")
    role = ("user" if typ == "user" else "assistant" if typ == assistant
            else "system" if typ in _SYSTEM_TYPES else None)
    if role is None:
        result.count_unknown(f"{agent}.chat:{str(typ)[:40]}")
        return
    mid = str_or_none(msg.get("id")) or digest(str(ctx["session"]), str(index))
    at = iso_ms(msg.get("timestamp"))
    base = f"{agent}:{mid}"
    cursor = cursor or mid
    _emit(ctx, result, uid=base, role=role, text=content_text(msg.get("content")),
          cursor=cursor, at=at)
    for i, thought in enumerate(msg.get("thoughts") or []):
        if isinstance(thought, dict):
            subject, desc = thought.get("subject"), thought.get("description")
            text = ": ".join(t for t in (subject, desc) if isinstance(t, str) and t)
            _emit(ctx, result, uid=f"{base}#t{i}", role="thinking", text=text_of(text),
                  cursor=cursor, at=iso_ms(thought.get("timestamp")) or at)
    for i, call in enumerate(msg.get("toolCalls") or []):
        if isinstance(call, dict):
            _tool_call(ctx, call, f"{base}#{i}", cursor, at, result)


def _tool_call(ctx: dict[str, Any], call: dict[str, Any], uid: str, cursor: str,
               at: int | None, result: ParseResult) -> None:
    name = str_or_none(call.get("name"), 200) or "tool"
    args = compact_json(call.get("args") or {})
    at = iso_ms(call.get("timestamp")) or at
    _emit(ctx, result, uid=uid, role="tool_use", text=f"{name} {args}", tool=name,
          tool_input=args, cursor=cursor, at=at)
    out = response_text(call.get("result"))
    if not out:
        display = call.get("resultDisplay")
        out = text_of(display) if isinstance(display, str) else (
            compact_json(display) if display else "")
    _emit(ctx, result, uid=f"{uid}:result", role="tool_result", text=out, tool=name,
          cursor=cursor, at=at)


def response_text(value: Any) -> str:
    """The output of `functionResponse` parts (or a plain string result)."""
    if isinstance(value, str):
        return text_of(value)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return ""
    out = []
    for part in value:
        if not isinstance(part, dict):
            continue
        resp = part.get("functionResponse", part)
        body = resp.get("response") if isinstance(resp, dict) else None
        if isinstance(body, dict):
            got = body.get("output", body.get("error", body.get("content")))
            out.append(got if isinstance(got, str) else compact_json(body))
        elif isinstance(part.get("text"), str):
            out.append(part["text"])
    return text_of("\n".join(out))


# --- logs.json and checkpoints ---------------------------------------------------------

def _logs(source: SourceInfo, state: dict[str, Any], value: Any, result: ParseResult,
          agent: str) -> None:
    if not isinstance(value, list):
        result.count_unknown(f"{source.layout}:shape")
        return
    dirname = source.path.split("/")[1]
    project = project_of(state, dirname, None)
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("message"), str):
            result.count_unknown(f"{source.layout}:entry")
            continue
        if item.get("type") not in (None, "user"):
            result.count_unknown(f"{source.layout}:{str(item.get('type'))[:40]}")
            continue
        session = str_or_none(item.get("sessionId"))
        text = text_of(item["message"])
        if not text:
            continue
        result.records.append(make_record(
            uid=f"{agent}:prompt:{digest(str(session), str(item.get('messageId')), text)}",
            agent=agent, session=session, role="user", text=text, cursor=f"0:{i}",
            at=iso_ms(item.get("timestamp")), project=project))


def _checkpoint(source: SourceInfo, state: dict[str, Any], value: Any, result: ParseResult,
                agent: str, parts: list[str]) -> None:
    """`/chat save <tag>`: session "checkpoint-<tag>" (the tag URL-decoded); no times."""
    if not isinstance(value, list):
        result.count_unknown(f"{source.layout}:shape")
        return
    dirname = parts[1]
    tag = unquote(parts[-1][len("checkpoint-"):-len(".json")])
    ctx = {"agent": agent, "session": f"checkpoint-{tag}", "subagent": None,
           "project": project_of(state, dirname, None)}
    base = f"{agent}:checkpoint:{dirname}:{digest(tag)}"
    for i, content in enumerate(value):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            result.count_unknown(f"{source.layout}:content")
            continue
        for j, part in enumerate(content["parts"]):
            _checkpoint_part(source, state, ctx, content.get("role"), part, f"{base}:{i}:{j}",
                             result, dirname)


def _checkpoint_part(source: SourceInfo, state: dict[str, Any], ctx: dict[str, Any],
                     role: Any, part: Any, uid: str, result: ParseResult,
                     dirname: str) -> None:
    cursor = uid.rsplit(":", 2)[-2]
    if not isinstance(part, dict):
        result.count_unknown(f"{source.layout}:part")
        return
    if isinstance(part.get("text"), str):
        text = part["text"]
        found = _CWD.search(text[:4000]) if _SETUP.match(text) else None
        if found:  # the injected setup context names the working directory
            cwd = found.group(1).strip()
            _learn_path(state, cwd)
            ctx["project"] = ctx["project"] or cwd
            if hashlib.sha256(cwd.encode()).hexdigest() == dirname:
                _learn_dir(state, dirname, cwd)
            kind = "system"
        else:
            kind = "thinking" if part.get("thought") else (
                "assistant" if role == "model" else "user")
        _emit(ctx, result, uid=uid, role=kind, text=text_of(text), cursor=cursor)
    elif isinstance(part.get("functionCall"), dict):
        call = part["functionCall"]
        name = str_or_none(call.get("name"), 200) or "tool"
        args = compact_json(call.get("args") or {})
        _emit(ctx, result, uid=uid, role="tool_use", text=f"{name} {args}", tool=name,
              tool_input=args, cursor=cursor)
    elif isinstance(part.get("functionResponse"), dict):
        _emit(ctx, result, uid=uid, role="tool_result", text=response_text(part),
              tool=str_or_none(part["functionResponse"].get("name"), 200), cursor=cursor)
    elif "inlineData" in part or "fileData" in part:
        _emit(ctx, result, uid=uid, role="user", text=content_text(part), cursor=cursor)
    else:
        result.count_unknown(f"{source.layout}:{','.join(sorted(part))[:40]}")
