"""Delegated run logs and their metadata → records.

Layouts: `runs.log` (the plain-text log of one run, read line by line) and `runs.meta` (the
run's JSON metadata file beside it, read as a snapshot). A log and its metadata share one
state (their paths differ only by extension), so log records learn the run's agent, session
and job once the metadata has been seen.

Promises:
- A log yields one record per bounded chunk of consecutive lines (at most `CHUNK_LINES`
  lines or `CHUNK_CHARS` characters). While a chunk grows, each new line re-emits the chunk
  with the same uid ("run:<name>.log:<generation>:<start offset>", unchanged when the log
  moves to `archive/`) so the newest, longer version replaces the older one. Lines the
  runner itself wrote (`[system]`, `[broker]`, …) are role "system", the rest "assistant";
  agent "other" unless the metadata names one.
- `run` is the log's basename (`<name>.log`); the time of a chunk is the run start
  (`jobStartedAt`, else a UTC timestamp in the file name).
- JSON event lines (`claude -p --output-format stream-json`, `codex exec --json`) are
  reduced to their words; setup, result and partial-item events add nothing.
- Metadata yields one "system" record: known fields as `key: value`, unknown fields kept
  searchable as quoted JSON text.
"""

from __future__ import annotations

import re
from typing import Any

from readers.builtin_paths import runs_classify as classify  # noqa: F401 (reader protocol)
from readers.builtin_paths import runs_descend as descend  # noqa: F401 (reader protocol)
from readers.parse_common import (
    MAX_TEXT,
    compact_json,
    iso_ms,
    load_object,
    make_record,
    str_or_none,
    text_of,
)
from readers.records import ParseResult, SourceInfo

CHUNK_LINES = 64
CHUNK_CHARS = 8 * 1024
_SYSTEM_PREFIXES = ("[system]", "[broker]", "[agentlog]", "[runner]", "[run]", "[bridge]")
_FILENAME_TIME = re.compile(
    r"(\d{4})-?(\d{2})-?(\d{2})T(\d{2})[-:]?(\d{2})[-:]?(\d{2})(?:[.,](\d{1,6}))?Z?"
)
_KNOWN_META = ("job", "run", "jobStartedAt", "agent", "session", "sessionId", "model", "status")
_AGENTS = ("claude", "codex", "opencode")


def run_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    stem = base[:-4] if base.endswith(".log") else base[:-5] if base.endswith(".json") else base
    return stem + ".log"


def filename_time(path: str) -> int | None:
    match = _FILENAME_TIME.search(path.rsplit("/", 1)[-1])
    if not match:
        return None
    y, mo, d, h, mi, s, frac = match.groups()
    return iso_ms(f"{y}-{mo}-{d}T{h}:{mi}:{s}{'.' + frac if frac else ''}Z")


def _agent_of(value: Any) -> str:
    if isinstance(value, str):
        lowered = value.lower()
        for agent in _AGENTS:
            if agent in lowered:
                return agent
    return "other"


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    role, text = _line_text(line)
    chunk = state.get("chunk")
    contiguous = (
        isinstance(chunk, dict) and chunk.get("gen") == generation and chunk.get("end") == offset
    )
    fits = (
        contiguous
        and isinstance(chunk, dict)
        and chunk.get("role") == role
        and isinstance(chunk.get("text"), str)
        and isinstance(chunk.get("lines"), int)
        and chunk["lines"] < CHUNK_LINES
        and len(chunk["text"]) + len(text) < CHUNK_CHARS
    )
    if not text.strip() and line.strip():
        # an event line with nothing to index: it keeps the chunk contiguous, adds nothing
        if contiguous and isinstance(chunk, dict):
            chunk["end"] = offset + len(line) + 1
        result.skipped += 1
        return result
    if fits and isinstance(chunk, dict):
        chunk["text"] = f"{chunk['text']}\n{text}"
        chunk["lines"] += 1
    else:
        chunk = {"gen": generation, "start": offset, "role": role, "text": text, "lines": 1}
    chunk["end"] = offset + len(line) + 1
    state["chunk"] = chunk
    if not chunk["text"].strip():
        result.skipped += 1
        return result
    result.records.append(
        make_record(
            uid=f"run:{run_name(source.path)}:{generation}:{chunk['start']}",
            agent=state.get("agent") or "other",
            session=state.get("session"),
            role=role,
            text=chunk["text"],
            cursor=f"{generation}:{chunk['start']}",
            at=state.get("started") or filename_time(source.path),
            job=state.get("job"),
            run=run_name(source.path),
        )
    )
    return result


def _line_text(line: bytes) -> tuple[str, str]:
    """(role, text) of one log line.

    JSON event lines (`claude -p --output-format stream-json`, `codex exec --json`) are reduced
    to their words; any other line is kept as it is.
    """
    if line[:1] == b"{":
        event = load_object(line)
        if event is not None:
            found = _event_text(event)
            if found is not None:
                return found
    text = text_of(line.decode("utf-8", "replace").rstrip("\r"), CHUNK_CHARS)
    role = "system" if text.lstrip().lower().startswith(_SYSTEM_PREFIXES) else "assistant"
    return role, text


def _event_text(event: dict[str, Any]) -> tuple[str, str] | None:
    kind = event.get("type")
    message = event.get("message")
    if kind in ("assistant", "user") and isinstance(message, dict):
        parts: list[str] = []
        content = message.get("content")
        for block in content if isinstance(content, list) else [{"text": content}]:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                parts.append(text_of(block["text"], CHUNK_CHARS))
            elif isinstance(block.get("thinking"), str):
                parts.append(text_of(block["thinking"], CHUNK_CHARS))
            elif block.get("type") == "tool_use":
                name = str_or_none(block.get("name"), 200) or "tool"
                parts.append(f"{name} {compact_json(block.get('input'), 2048)}")
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                parts.append(text_of(inner, CHUNK_CHARS) if isinstance(inner, str) else "")
        role = "assistant" if kind == "assistant" else "system"
        return role, "\n".join(p for p in parts if p)[:CHUNK_CHARS]
    item = event.get("item")
    if kind == "item.completed" and isinstance(item, dict):
        words = [item.get("text"), item.get("command"), item.get("aggregated_output")]
        text = "\n".join(text_of(w, CHUNK_CHARS) for w in words if isinstance(w, str))
        role = "assistant" if item.get("type") in ("agent_message", "reasoning") else "system"
        return role, text[:CHUNK_CHARS]
    if kind in ("system", "result", "thread.started", "turn.started", "turn.completed"):
        return "system", ""  # session setup and the final result (a repeat of the last reply)
    if isinstance(kind, str) and kind.startswith("item."):
        return "system", ""  # started/updated: the completed item comes later
    return None


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    result = ParseResult()
    meta = load_object(data)
    if meta is None:
        result.count_unknown("runs:meta-undecodable")
        return result
    agent = _agent_of(meta.get("agent"))
    session = str_or_none(meta.get("session"), 200) or str_or_none(meta.get("sessionId"), 200)
    job = str_or_none(meta.get("job"), 500)
    started = iso_ms(meta.get("jobStartedAt")) or filename_time(source.path)
    state.update({"agent": agent, "session": session, "job": job, "started": started})
    lines = [
        f"{key}: {text_of(value) if isinstance(value, str) else compact_json(value)}"
        for key in _KNOWN_META
        if (value := meta.get(key)) is not None
    ]
    lines += [compact_json({key: value}) for key, value in meta.items() if key not in _KNOWN_META]
    text = "\n".join(lines)[:MAX_TEXT]
    run = run_name(source.path)
    result.records.append(
        make_record(
            uid=f"run-meta:{run}",
            agent=agent,
            session=session,
            role="system",
            text=text,
            cursor="0:0",
            at=started,
            job=job,
            run=run,
        )
    )
    return result
