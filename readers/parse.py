"""The parse API the projections call: dispatch on `SourceInfo.layout`.

Promises: pure functions of (source, state, bytes); they never raise, whatever the bytes (an
unexpected exception inside a parser is caught and counted as unknown "<layout>:error", so a
parser bug costs one line, never a rebuild). `PARSER_VERSION` changes whenever the records a
given input yields change; projections rebuild when it does.

Layouts (set by capture in `SourceSeen`): claude.session, claude.subagent,
claude.subagent_meta, claude.tool_result, claude.history, codex.rollout, codex.history,
opencode.json, opencode.db, runs.log, runs.meta. See docs/parsers.md.
"""

from __future__ import annotations

import logging
from typing import Any

from readers import parse_claude, parse_codex, parse_opencode, parse_runs
from readers.parse_common import clean
from readers.records import (
    MAX_LINE,
    ParseResult,
    SourceInfo,
)

PARSER_VERSION = 1

log = logging.getLogger(__name__)


_SHARED_STEM = {
    "claude.subagent": (".jsonl",),
    "claude.subagent_meta": (".meta.json",),
    "runs.log": (".log",),
    "runs.meta": (".json",),
}


def state_scope(source: SourceInfo) -> str:
    """Sources with the same scope share one state dict.

    A Claude subagent transcript shares with its `.meta.json`; a run log with its metadata;
    every opencode source of one root shares one scope (parts need their message's role).
    """
    prefix = source.source[: -len(source.path)] if source.source.endswith(source.path) else ""
    if not prefix:
        prefix = f"{source.agent}:{source.root}:"
    if source.layout in ("opencode.json", "opencode.db"):
        return prefix + "opencode"
    suffixes = _SHARED_STEM.get(source.layout)
    path = source.path
    if suffixes:
        for suffix in suffixes:
            if path.endswith(suffix):
                path = path[: -len(suffix)]
                break
        return f"{prefix}{path}"
    return source.source


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    layout = source.layout
    try:
        if len(line) > MAX_LINE:
            result = ParseResult()
            result.count_unknown(f"{layout}:oversized")
            return result
        if layout.startswith("claude."):
            return _tidy(parse_claude.parse_line(source, state, line, offset, generation))
        if layout.startswith("codex."):
            return _tidy(parse_codex.parse_line(source, state, line, offset, generation))
        if layout == "runs.log":
            return _tidy(parse_runs.parse_line(source, state, line, offset, generation))
    except Exception:  # a parser bug must cost one line, not a rebuild
        log.debug("parser error in %s at %d:%d", source.source, generation, offset, exc_info=True)
        return _error(layout)
    return _wrong_layout(layout, "line")


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    layout = source.layout
    try:
        if layout.startswith("claude."):
            return _tidy(parse_claude.parse_snapshot(source, state, data))
        if layout == "opencode.json":
            return _tidy(parse_opencode.parse_snapshot(source, state, data))
        if layout == "runs.meta":
            return _tidy(parse_runs.parse_snapshot(source, state, data))
    except Exception:
        log.debug("parser error in snapshot of %s", source.source, exc_info=True)
        return _error(layout)
    return _wrong_layout(layout, "snapshot")


def parse_row(
    source: SourceInfo, state: dict[str, Any], table: str, row_id: str, data: bytes
) -> ParseResult:
    layout = source.layout
    try:
        if layout == "opencode.db":
            return _tidy(parse_opencode.parse_row(source, state, table, row_id, data))
    except Exception:
        log.debug("parser error in row %s/%s of %s", table, row_id, source.source, exc_info=True)
        return _error(layout)
    return _wrong_layout(layout, "row")


def _tidy(result: ParseResult) -> ParseResult:
    """Unknown type names come from the input: make them valid UTF-8 too."""
    if result.unknown and not all(kind.isascii() for kind in result.unknown):
        tidy: dict[str, int] = {}
        for kind, count in result.unknown.items():
            tidy[clean(kind)] = tidy.get(clean(kind), 0) + count
        result.unknown = tidy
    return result


def _error(layout: str) -> ParseResult:
    result = ParseResult()
    result.count_unknown(f"{layout}:error")
    return result


def _wrong_layout(layout: str, kind: str) -> ParseResult:
    result = ParseResult()
    result.count_unknown(f"{layout}:{kind}")
    return result
