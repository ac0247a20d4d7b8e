"""Test helper: feed whole files (or SQLite rows) through the parse API as capture would."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from readers import parse
from readers.records import ParseResult, SourceInfo


def _agent_of_layout(layout: str) -> str:
    from readers import registry

    spec = registry.agent_of_layout(layout)
    return spec.name if spec is not None and spec.search else "other"


def source_info(layout: str, path: str, root: str = "/root") -> SourceInfo:
    agent = _agent_of_layout(layout)
    return SourceInfo(source=f"{agent}:r1:{path}", agent=agent, root=root, path=path, layout=layout)


def merge(total: ParseResult, part: ParseResult) -> None:
    total.records.extend(part.records)
    total.titles.extend(part.titles)
    total.subagents.extend(part.subagents)
    total.skipped += part.skipped
    for key, count in part.unknown.items():
        total.unknown[key] = total.unknown.get(key, 0) + count


def feed_lines(
    source: SourceInfo, data: bytes, states: dict[str, dict[str, Any]], generation: int = 0
) -> ParseResult:
    """Every complete line of `data`, with its byte offset (a torn tail is left out)."""
    total = ParseResult()
    state = states.setdefault(parse.state_scope(source), {})
    offset = 0
    while True:
        end = data.find(b"\n", offset)
        if end < 0:
            break
        merge(total, parse.parse_line(source, state, data[offset:end], offset, generation))
        offset = end + 1
    return total


def feed_snapshot(
    source: SourceInfo, data: bytes, states: dict[str, dict[str, Any]]
) -> ParseResult:
    state = states.setdefault(parse.state_scope(source), {})
    return parse.parse_snapshot(source, state, data)


def db_rows(db: Path) -> list[tuple[str, str, bytes]]:
    """(table, row id, row JSON) of session/message/part, read-only, in capture order."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows: list[tuple[int, int, str, str, bytes]] = []
    try:
        for rank, table in enumerate(("session", "message", "part")):
            cursor = con.execute(f"SELECT * FROM {table}")
            names = [column[0] for column in cursor.description]
            for row in cursor:
                columns = dict(zip(names, row, strict=True))
                blob = json.dumps(columns, ensure_ascii=False).encode()
                rows.append((int(columns["time_updated"]), rank, table, str(columns["id"]), blob))
    finally:
        con.close()
    rows.sort(key=lambda r: (r[1] > 0, r[0], r[1]))
    return [(table, row_id, blob) for _, _, table, row_id, blob in rows]


def feed_rows(
    source: SourceInfo, rows: list[tuple[str, str, bytes]], states: dict[str, dict[str, Any]]
) -> ParseResult:
    total = ParseResult()
    state = states.setdefault(parse.state_scope(source), {})
    for table, row_id, blob in rows:
        merge(total, parse.parse_row(source, state, table, row_id, blob))
    return total


def layout_of(rel: str) -> str | None:
    """The layout capture would give a file of the shared corpus (by its path)."""
    name = rel.rsplit("/", 1)[-1]
    top = rel.split("/", 1)[0]
    if "/gemini/" in rel or "/cursor/" in rel:
        return None
    if top == "claude-code" or "/claude/" in rel:
        if name.endswith(".meta.json"):
            return "claude.subagent_meta"
        if "/tool-results/" in rel:
            return "claude.tool_result"
        if name == "history.jsonl":
            return "claude.history"
        if name.endswith(".jsonl"):
            sub = "agent-" in name or "/subagents/" in rel or "-subagent-" in name
            return "claude.subagent" if sub else "claude.session"
        return None
    if top == "codex" or "/codex/" in rel:
        if name == "history.jsonl":
            return "codex.history"
        return "codex.rollout" if name.endswith(".jsonl") else None
    if top == "opencode" or "/opencode/" in rel:
        if name == "opencode.db":
            return "opencode.db"
        return "opencode.json" if "/storage" in rel else None
    return None
