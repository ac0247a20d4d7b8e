"""The parse API the projections call: dispatch on `SourceInfo.layout`.

Promises: pure functions of (source, state, bytes); they never raise, whatever the bytes (an
unexpected exception inside a parser is caught and counted as unknown "<layout>:error", so a
parser bug costs one line, never a rebuild). `PARSER_VERSION` (readers/version.py) changes
whenever the records a given input yields change; projections rebuild when it does.

Layouts (set by capture in `SourceSeen`) are listed in readers/registry.py; the prefix of a
layout names the agent whose reader module parses it (imported on first use). See
docs/parsers.md.
"""

from __future__ import annotations

from typing import Any

from readers import registry
from readers.parse_common import clean
from readers.records import (
    MAX_LINE,
    ParseResult,
    SourceInfo,
)
from readers.version import PARSER_VERSION as PARSER_VERSION  # its home (the search path)


def _debug(msg: str, *args: object) -> None:
    """A parser bug at debug level (logging loads only then: the hook path never needs it)."""
    import logging

    logging.getLogger(__name__).debug(msg, *args, exc_info=True)


_SHARED_STEM = {
    "claude.subagent": (".jsonl",),
    "claude.subagent_meta": (".meta.json",),
    "runs.log": (".log",),
    "runs.meta": (".json",),
}


_BUILTIN = ("claude", "codex", "opencode", "runs")


def _reader(layout: str, fn: str) -> Any:
    """The parse function `fn` of the agent owning `layout`, or None (memoized: the
    registry is fixed for the life of the process, and this runs once per line)."""
    key = (layout, fn)
    if key in _READERS:
        return _READERS[key]
    agent = registry.agent_of_layout(layout)
    found = None
    if agent is not None and layout in agent.layouts:
        found = getattr(registry.reader(agent.name), fn, None)
    if len(_READERS) < 4096:
        _READERS[key] = found
    return found


_READERS: dict[tuple[str, str], Any] = {}


def state_scope(source: SourceInfo) -> str:
    """Sources with the same scope share one state dict.

    A Claude subagent transcript shares with its `.meta.json`, a persisted tool output
    (`<session>/tool-results/*.txt`) with its session's transcript; a run log with its metadata;
    every opencode source of one root shares one scope (parts need their message's role).
    """
    prefix = source.source[: -len(source.path)] if source.source.endswith(source.path) else ""
    if not prefix:
        prefix = f"{source.agent}:{source.root}:"
    if source.layout in ("opencode.json", "opencode.db"):
        return prefix + "opencode"
    agent = registry.agent_of_layout(source.layout)
    if agent is not None and agent.name not in _BUILTIN:
        hook = getattr(registry.reader(agent.name), "state_scope", None)
        scope = hook(source, prefix) if hook is not None else None
        return scope if isinstance(scope, str) else source.source
    if source.layout == "claude.tool_result" and "/tool-results/" in source.path:
        # <session>/tool-results/<call id>.txt shares the state of <session>.jsonl: its
        # project (cwd) and the time of the result line that names it
        return prefix + source.path.rsplit("/tool-results/", 1)[0] + ".jsonl"
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
        fn = _LINE_FN[layout] if layout in _LINE_FN else _line_fn(layout)
        if fn is not None:
            result = fn(source, state, line, offset, generation)
            return _tidy(result) if result.unknown else result
    except Exception:  # a parser bug must cost one line, not a rebuild
        _debug("parser error in %s at %d:%d", source.source, generation, offset)
        return _error(layout)
    return _wrong_layout(layout, "line")


def parse_lines(
    source: SourceInfo, state: dict[str, Any], lines: list[tuple[int, bytes]], generation: int
) -> list[ParseResult]:
    """`[parse_line(source, state, line, start, generation) for (start, line) in lines if the
    line is not blank]`: the same results, the layout's parser looked up once per chunk
    instead of once per line (one Python call less a line)."""
    layout = source.layout
    try:
        fn = _LINE_FN[layout] if layout in _LINE_FN else _line_fn(layout)
    except Exception:  # parse_line counts each line the same way
        fn = None
    if fn is None:  # no parser for the layout: each line counted by parse_line
        return [parse_line(source, state, line, start, generation)
                for start, line in lines if line and not line.isspace()]
    results: list[ParseResult] = []
    add = results.append
    for start, line in lines:
        if not line or line.isspace():  # blank: the caller's test, without a copy
            continue
        try:
            if len(line) > MAX_LINE:
                add(parse_line(source, state, line, start, generation))
                continue
            result = fn(source, state, line, start, generation)
            add(_tidy(result) if result.unknown else result)
        except Exception:  # as parse_line: a parser bug costs one line
            _debug("parser error in %s at %d:%d", source.source, generation, start)
            add(_error(layout))
    return results


def _line_fn(layout: str) -> Any:
    """`parse_line` of the reader owning append-mode `layout`, or None (memoized)."""
    fn = _reader(layout, "parse_line") if registry.mode_of(layout) == registry.APPEND else None
    if len(_LINE_FN) < 4096:
        _LINE_FN[layout] = fn
    return fn


_LINE_FN: dict[str, Any] = {}


def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    layout = source.layout
    try:
        fn = _reader(layout, "parse_snapshot")
        if fn is not None and registry.mode_of(layout) == registry.SNAPSHOT:
            return _tidy(fn(source, state, data))
    except Exception:
        _debug("parser error in snapshot of %s", source.source)
        return _error(layout)
    return _wrong_layout(layout, "snapshot")


def parse_row(
    source: SourceInfo, state: dict[str, Any], table: str, row_id: str, data: bytes
) -> ParseResult:
    layout = source.layout
    try:
        fn = _reader(layout, "parse_row") if registry.mode_of(layout) == registry.ROWS else None
        if fn is not None:
            return _tidy(fn(source, state, table, row_id, data))
    except Exception:
        _debug("parser error in row %s/%s of %s", table, row_id, source.source)
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
