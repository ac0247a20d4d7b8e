"""Kiro CLI (v3 session files) → records.

Root: `~/.kiro`. Layouts under `sessions/cli/`:
- `kiro.events`: `<sessionId>.jsonl`, append-only, one event per line
  `{version:"v1", kind:"Prompt"|"AssistantMessage", data:{message_id, content[{kind, data}]}}`
  (no timestamps);
- `kiro.state`: `<sessionId>.json`, rewritten: `{session_id, cwd, created_at, updated_at,
  session_state{conversation_metadata{user_turn_metadatas[{message_ids, result{Ok{id, role,
  content, timestamp (unix s)}}, end_timestamp}]}}}`.
`<sessionId>.lock` (`{pid, started_at}`) is not history and is not captured.

Promises (pure, never raise):
- a session's `.json` and `.jsonl` share one state (same stem): the state file gives the
  project (`cwd`), the session start and per-message times; session = the file stem (the
  `session_id`);
- events: uid "kiro:<session>:<message_id>"; Prompt → user, AssistantMessage → assistant;
  text blocks joined; a block that is one injected `<…-context>…</…>` element (AgentSpaces
  puts its whole environment brief in every prompt) is skipped; other kinds are counted
  ("kiro:kind:<k>", "kiro:block:<k>");
- the state file's turn results (the last assistant message of each turn) are records with
  the uid of that message's id in the events file (`message_ids[-1]`), so the two copies
  collapse into one;
- time: the events carry none. A record takes the time the state file gives its message
  (`result.Ok.timestamp`), else the session's `created_at`; before the state file has been
  read, none (`at` unknown). Never the capture time.
"""

from __future__ import annotations

import re
from typing import Any

from readers.parse_common import (
    iso_ms,
    load_object,
    make_record,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, SourceInfo

AGENT = "kiro"
EXAMPLE_PATHS = {"kiro.events": "sessions/cli/4760a44c.jsonl",
                 "kiro.state": "sessions/cli/4760a44c.json"}
_CONTEXT = re.compile(r"\s*<([\w.-]*context[\w.-]*)>")
_TIMES_LIMIT = 512


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) != 3 or parts[:2] != ["sessions", "cli"]:
        return None
    name = parts[2]
    if name.endswith(".jsonl"):
        return "kiro.events"
    if name.endswith(".json"):
        return "kiro.state"
    return None


def descend(rel_dir: str) -> bool:
    return rel_dir in ("sessions", "sessions/cli")


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    for suffix in (".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    return f"{prefix}{source.path.rsplit('.', 1)[0]}"


def _text(content: Any, result: ParseResult) -> str:
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        kind = block.get("kind") if isinstance(block, dict) else None
        if kind != "text":
            result.count_unknown(f"kiro:block:{str(kind)[:64]}")
            continue
        text = text_of(block.get("data"))
        opened = _CONTEXT.match(text)
        if opened and text.rstrip().endswith(f"</{opened.group(1)}>"):
            result.skipped += 1
            continue
        if text.strip():
            texts.append(text)
    return "\n\n".join(texts)


def _where(source: SourceInfo, state: dict[str, Any], message: str | None) -> dict[str, Any]:
    times = state.get("times")
    at = times.get(message) if isinstance(times, dict) and message else None
    if not isinstance(at, int):
        at = state.get("created") if isinstance(state.get("created"), int) else None
    return {"agent": AGENT, "session": state.get("session") or _stem(source.path),
            "project": state.get("cwd"), "at": at}


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    event = load_object(line)
    if event is None:
        if line.strip():
            result.count_unknown("kiro:undecodable")
        else:
            result.skipped += 1
        return result
    kind = event.get("kind")
    data = event.get("data")
    roles = {"Prompt": "user", "AssistantMessage": "assistant"}
    if kind not in roles or not isinstance(data, dict):
        result.count_unknown(f"kiro:kind:{str(kind)[:64]}")
        return result
    message = str_or_none(data.get("message_id"), 200)
    text = _text(data.get("content"), result)
    if not text.strip():
        result.skipped += 1
        return result
    where = _where(source, state, message)
    uid = f"kiro:{where['session']}:{message or f'{generation}:{offset}'}"
    result.records.append(
        make_record(uid=uid, role=roles[kind], text=text, cursor=f"{generation}:{offset}",
                    message=message, **where)
    )
    return result


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    obj = load_object(data)
    if obj is None:
        result.count_unknown("kiro:state-undecodable")
        return result
    state["session"] = str_or_none(obj.get("session_id"), 200) or _stem(source.path)
    cwd = str_or_none(obj.get("cwd"), 4096)
    if cwd:
        state["cwd"] = cwd
    created = iso_ms(_trim_nanos(obj.get("created_at")))
    if created is not None:
        state["created"] = created
    session_state = obj.get("session_state")
    meta = session_state.get("conversation_metadata") if isinstance(session_state, dict) else None
    turns = meta.get("user_turn_metadatas") if isinstance(meta, dict) else None
    if not isinstance(turns, list):
        result.skipped += 1
        return result
    times = state.setdefault("times", {})
    for turn in turns:
        _turn(source, state, turn, times, result)
    if isinstance(times, dict):
        trim_map(times, _TIMES_LIMIT)
    return result


def _turn(
    source: SourceInfo, state: dict[str, Any], turn: Any, times: Any, result: ParseResult
) -> None:
    outcome = turn.get("result") if isinstance(turn, dict) else None
    ok = outcome.get("Ok") if isinstance(outcome, dict) else None
    if not isinstance(ok, dict):
        result.count_unknown("kiro:turn")
        return
    ids = turn.get("message_ids") if isinstance(turn, dict) else None
    ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    message = ids[-1] if ids else str_or_none(ok.get("id"), 200)
    at = iso_ms(ok.get("timestamp")) or iso_ms(_trim_nanos(turn.get("end_timestamp")))
    if at is not None and isinstance(times, dict):
        for mid in ids or [message]:
            if mid:
                times[mid] = at
    role = "assistant" if ok.get("role") == "assistant" else "user"
    text = _text(ok.get("content"), result)
    if not text.strip():
        result.skipped += 1
        return
    where = _where(source, state, message)
    result.records.append(
        make_record(uid=f"kiro:{where['session']}:{message}", role=role, text=text,
                    cursor="0:0", message=message, **where)
    )


def _trim_nanos(value: Any) -> Any:
    """RFC 3339 with nanoseconds ("…:15.804165464Z") → microseconds, which Python parses."""
    if isinstance(value, str):
        return re.sub(r"(\.\d{6})\d+", r"\1", value)
    return value
