"""What the pure parsers produce, and the parse API the projections call.

Parsers are pure functions of captured bytes plus a small JSON-serialisable `state` dict
that the caller persists between calls (so a Codex rollout's `session_meta`, read in the
first chunk, still names the session of lines read days later). The caller keeps one state
dict per `state_scope(source)`; sources that share a scope share knowledge (opencode's
parts need their message's role).

Contract (implemented in `readers.parse`):

    state_scope(source: SourceInfo) -> str
    parse_line(source, state, line: bytes, offset: int, generation: int) -> ParseResult
        one complete JSONL/log line (without its trailing newline) that starts at byte
        `offset` of generation `generation`; lines longer than MAX_LINE are never passed
        (the caller counts them as oversized; the raw log keeps them)
    parse_lines(source, state, lines: list[tuple[int, bytes]], generation) -> list[ParseResult]
        `parse_line` of each non-blank (offset, line) of a chunk, in order (readers.parse only:
        the agent modules implement `parse_line`)
    parse_snapshot(source, state, data: bytes) -> ParseResult
        the whole content of a rewritten file (opencode JSON, meta.json, run metadata)
    parse_row(source, state, table: str, row_id: str, data: bytes) -> ParseResult
        one opencode.db row, as captured (JSON object of its columns)

No parser raises on bad input: undecodable or unknown content is counted in
`ParseResult.unknown` (record type -> count) and otherwise skipped.
"""

from __future__ import annotations

import msgspec

from readers import registry as _registry  # cheap: no reader module is imported

MAX_LINE = 8 * 1024 * 1024

AGENTS = _registry.search_agents()

# The layout vocabulary shared by capture (which assigns it in SourceSeen) and the parsers
# (which dispatch on it), from the registry: append-only files are captured as chunks and
# parsed line by line, rewritten files as whole snapshots, database tables as row snapshots.
LINE_LAYOUTS = _registry.layouts(_registry.APPEND)
SNAPSHOT_LAYOUTS = _registry.layouts(_registry.SNAPSHOT)
ROW_LAYOUTS = _registry.layouts(_registry.ROWS)
LAYOUTS = LINE_LAYOUTS | SNAPSHOT_LAYOUTS | ROW_LAYOUTS
ROLES = ("user", "assistant", "tool_use", "tool_result", "thinking", "system")


class SourceInfo(msgspec.Struct, frozen=True):
    """A captured source as announced by its `SourceSeen` event."""

    source: str
    agent: str
    root: str
    path: str
    layout: str


class Record(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One searchable turn of a transcript.

    `uid` is stable across copies of the same record (Claude's uuid; a content hash where
    the format has no id), so records repeated by resume/fork are indexed once. When a
    rewritten source yields a record with a known uid, it replaces the older one.
    `cursor` locates the record in its source: "<generation>:<byte offset>" for JSONL,
    the part/message id for opencode.
    Not tracked by the garbage collector (`gc=False`: its fields are strings, ints and None,
    so it can be in no reference cycle): the parse process and the builder make one per
    record, and untracked they neither trigger nor lengthen collections.
    """

    uid: str
    agent: str
    session: str | None
    role: str
    text: str
    cursor: str
    at: int | None = None
    project: str | None = None
    subagent: str | None = None
    subagent_name: str | None = None
    tool: str | None = None
    tool_input: str | None = None
    title: str | None = None
    message: str | None = None
    job: str | None = None
    run: str | None = None


class SessionTitle(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A title (summary, opencode session title) learned for a session."""

    agent: str
    session: str
    title: str
    project: str | None = None
    kind: str | None = None
    # Claude `summary` lines title the branch ending at `leaf` (a record uid), which usually
    # lives in ANOTHER session file; `session` is then only the file that held the line.
    leaf: str | None = None


class SubagentNamed(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A subagent's display name, learned from Claude's `agent-*.meta.json`."""

    agent: str
    session: str | None
    subagent: str
    name: str


class ParseResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What one parse call yields. Encoded (msgpack) only to cross from the parallel
    rebuild's parse process to its builder: empty fields are left out (most results are
    one record and nothing else)."""

    records: list[Record] = msgspec.field(default_factory=list)
    titles: list[SessionTitle] = msgspec.field(default_factory=list)
    unknown: dict[str, int] = msgspec.field(default_factory=dict)
    skipped: int = 0
    subagents: list[SubagentNamed] = msgspec.field(default_factory=list)
    # secrets the projection redacted (`projections.redact`; parsers leave it empty):
    # (record index, or -1 - title index, kind, count)
    redacted: list[tuple[int, str, int]] = msgspec.field(default_factory=list)

    def count_unknown(self, kind: str) -> None:
        self.unknown[kind] = self.unknown.get(kind, 0) + 1
