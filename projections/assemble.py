"""Lines of captured chunks, and their parse: the pure half of `projections.transcripts`.

Promises:
- nothing here touches SQLite: `step` takes a source's assembly cursor (generation,
  next offset, unfinished tail, skipping flag) and one chunk, and returns what the chunk
  adds (complete lines with their start offsets) and the new cursor; `parse_lines` runs the
  parser over those lines with the caller's state. The sequential applier
  (`transcripts._chunk`) and the parallel build's parse process (`projections.pipeline`)
  both call these, so the two produce the same records from the same events;
- a line longer than `readers.records.MAX_LINE` is never buffered whole nor parsed: it is
  counted (`Step.oversized`) and the rest of it skipped;
- a parser that raises or returns something else is counted as an unknown record type.

Real annotations, not `from __future__ import annotations`: its named tuples (and msgspec
structs) read their field types when the class is made, and a string costs a
`typing.ForwardRef` compile each (docs/history/performance-journal.md, "Annotations").
"""

import json
from itertools import accumulate, repeat
from operator import add
from types import ModuleType
from typing import Any, NamedTuple

import msgspec

from projections import redact
from readers.records import MAX_LINE, ParseResult, SourceInfo


class Cursor(NamedTuple):
    """The assembly state of one source (the `sources` columns of the same names)."""

    generation: int
    next_offset: int
    partial: bytes
    skipping: int


class Step(NamedTuple):
    """What one chunk does to its source. `old`: a chunk of an older generation (a gap,
    nothing else); otherwise `gap` says bytes were missing before it, `lines` are the
    complete lines, `cursor` is the new assembly state."""

    old: bool
    gap: bool
    lines: list[tuple[int, bytes]]
    cursor: Cursor
    oversized: int


def step(cur: Cursor, generation: int, offset: int, data: bytes,
         final: bool = False) -> Step | None:
    """Apply one chunk (`data` at `offset` of `generation`) to `cur`; None when the chunk
    adds nothing (already assembled: an overlapping or repeated chunk). A `final` chunk
    ends the file: the unfinished line after it is complete (`ChunkCaptured.final`)."""
    gen, next_offset, partial, skipping = cur
    if generation < gen:
        return Step(True, True, [], cur, 0)
    if generation > gen:
        gen, next_offset, partial, skipping = generation, 0, b"", 0
    if offset + len(data) <= next_offset and not (offset == next_offset and not data):
        if final and partial and offset + len(data) == next_offset:
            return step(cur, generation, next_offset, b"", True)  # the end, with a repeat
        return None
    gap = False
    if offset < next_offset:
        data = data[next_offset - offset :]
        offset = next_offset
    elif offset > next_offset:
        gap = True
        if partial or skipping:
            skipping = 1  # the rest of the interrupted line is unknown: drop it
        partial = b""
    lines, partial, skipping, oversized = assemble(partial, skipping, offset, data)
    end = offset + len(data)
    if final and partial:  # the agent writes no more: its last line needs no newline
        lines.append((end - len(partial), partial))
        partial = b""
    return Step(False, gap, lines, Cursor(gen, end, partial, skipping), oversized)


def assemble(
    partial: bytes, skipping: int, offset: int, data: bytes
) -> tuple[list[tuple[int, bytes]], bytes, int, int]:
    """Complete lines of `partial + data`: (lines with their start offsets, new partial,
    skipping flag, oversized lines counted here)."""
    lines: list[tuple[int, bytes]] = []
    oversized = 0
    pieces = data.split(b"\n")  # one C call; the last piece is the unfinished tail
    tail = pieces.pop()
    if pieces:
        first = pieces[0]  # ends the line `partial` began (or the one being skipped)
        if skipping:
            skipping = 0  # the oversized line ends here (already counted)
        elif len(partial) + len(first) > MAX_LINE:
            oversized += 1
        else:
            lines.append((offset - len(partial), partial + first))
        partial = b""
        start = offset + len(first) + 1
        rest = pieces[1:]
        if rest and max(map(len, rest)) <= MAX_LINE:  # the common case, in C: no line too long
            # each line starts one byte (its newline) after the end of the one before it
            # (the starts run one past the last line: zip stops at the lines)
            starts = accumulate(map(add, map(len, rest), repeat(1)), initial=start)
            lines.extend(zip(starts, rest, strict=False))
        else:
            for piece in rest:
                if len(piece) > MAX_LINE:
                    oversized += 1
                else:
                    lines.append((start, piece))
                start += len(piece) + 1
    if skipping:
        partial = b""
    elif len(partial) + len(tail) > MAX_LINE:
        oversized += 1
        skipping = 1
        partial = b""
    else:
        partial = partial + tail
    return lines, partial, skipping, oversized


def parse_lines(
    parser: ModuleType, info: SourceInfo, state: dict[str, Any],
    lines: list[tuple[int, bytes]], generation: int,
) -> tuple[int, list[ParseResult]]:
    """(non-blank lines, one result per non-blank line) of `lines`, in order, their secrets
    redacted (`redact_results`)."""
    n, results = _parse_lines(parser, info, state, lines, generation)
    return n, redact_results(results)


def _parse_lines(
    parser: ModuleType, info: SourceInfo, state: dict[str, Any],
    lines: list[tuple[int, bytes]], generation: int,
) -> tuple[int, list[ParseResult]]:
    many = getattr(parser, "parse_lines", None)
    if many is not None:  # readers.parse: a chunk's lines in one call (it never raises)
        results: list[ParseResult] = many(info, state, lines, generation)
        if results and set(map(type, results)) != _ONLY_RESULTS:  # one C pass
            results = [res if res.__class__ is ParseResult else _checked(res)
                       for res in results]
        return len(results), results
    results = []
    parse, add = parser.parse_line, results.append
    for start, line in lines:
        if not line or line.isspace():  # blank: the same test as `not line.strip()`, no copy
            continue
        try:  # `call`, inlined: one Python call less per line
            res = parse(info, state, line, start, generation)
        except Exception as exc:
            res = _failed(f"parser-error:{type(exc).__name__}")
        add(res if res.__class__ is ParseResult else _checked(res))
    return len(results), results


_ONLY_RESULTS = {ParseResult}


def state_text(state: dict[str, Any]) -> str:
    """A parser state as `parser_state` stores it (and as the parallel build hands it on)."""
    return json.dumps(state, ensure_ascii=False, default=str)


def unannounced(source: str) -> SourceInfo:
    """What a source id tells of a source never announced by `SourceSeen`."""
    parts = source.split(":", 2)
    agent = parts[0] if len(parts) == 3 else "other"
    path = parts[2] if len(parts) == 3 else source
    return SourceInfo(source=source, agent=agent, root="", path=path, layout="")


def state_scope(parser: ModuleType, info: SourceInfo) -> str:
    try:
        return str(parser.state_scope(info))
    except Exception:
        return info.source


def call(fn: Any, *args: Any) -> ParseResult:
    """A parse call's result (its secrets redacted); a parser that raises is counted."""
    try:
        res = fn(*args)
    except Exception as exc:  # the contract says parsers never raise; count if one does
        return _failed(f"parser-error:{type(exc).__name__}")
    return redact_results([_checked(res)])[0]


def redact_results(results: list[ParseResult]) -> list[ParseResult]:
    """`results` with the secrets of their records' texts, tool inputs and titles and of
    their session titles replaced by markers (`projections.redact`), each result noting
    what it redacted in `redacted`: the one place parsed text is redacted, before the
    sequential applier or the parallel build's parse process hands it on."""
    scrub = redact.redactor().redact
    for res in results:
        recs = res.records
        for i, rec in enumerate(recs):
            text, found = scrub(rec.text)
            tool_input = rec.tool_input
            if tool_input is not None:
                tool_input, more = scrub(tool_input)
                found = _merge(found, more)
            title = rec.title
            if title is not None:
                title, more = scrub(title)
                found = _merge(found, more)
            if found is not None:
                recs[i] = msgspec.structs.replace(rec, text=text, tool_input=tool_input,
                                                  title=title)
                res.redacted.extend((i, kind, n) for kind, n in sorted(found.items()))
        for j, t in enumerate(res.titles):
            title, found = scrub(t.title)
            if found is not None:
                res.titles[j] = msgspec.structs.replace(t, title=title)
                res.redacted.extend((-1 - j, kind, n) for kind, n in sorted(found.items()))
    return results


def _merge(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    if b is None:
        return a
    if a is None:
        return b
    return {k: a.get(k, 0) + b.get(k, 0) for k in a.keys() | b.keys()}


def _checked(res: Any) -> ParseResult:
    return res if isinstance(res, ParseResult) else _failed("parser-error:bad-result")


def _failed(kind: str) -> ParseResult:
    bad = ParseResult()
    bad.count_unknown(kind)
    return bad
