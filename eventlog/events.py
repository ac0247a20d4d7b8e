"""Event types: the wire contract of the log.

Every event is a frozen msgspec Struct in one tagged union, encoded as MessagePack.
Tag strings are pinned and never renamed. New fields get defaults; a breaking change
gets a new tag. An event whose tag this version does not know decodes as
`UnknownEvent` (its bytes kept) rather than stopping a replay.

Events hold facts as captured, not interpretations: parsing belongs to projections.
Times are UTC epoch milliseconds.

No `from __future__ import annotations` here (docs/history/performance-journal.md,
"Annotations"): msgspec reads every field's type when `eventlog.codec` builds its decoder,
and a string annotation costs a `typing.ForwardRef` compile each time (~100 of them, ~4 % of
a +1 capture process); real annotations are evaluated once, as the class is made.
"""

from typing import Any

import msgspec


class _Event(msgspec.Struct, frozen=True, tag_field="type", kw_only=True, omit_defaults=True):
    """Base of every event type."""


# --- bookkeeping -------------------------------------------------------------------


class WriterStarted(_Event, tag="writer.started", frozen=True):
    """A process began writing to the log (one per writing process, for `audit`)."""

    host: str
    pid: int
    version: str
    command: str
    at: int


# --- broker facts ------------------------------------------------------------------


class MessageSent(_Event, tag="message.sent", frozen=True):
    """A broker message. `kind` is one of message, approval, progress, report."""

    id: str
    sender: str
    to: list[str]
    kind: str
    body: str
    at: int
    project: str | None = None
    session: str | None = None
    job: str | None = None
    thread: str | None = None
    extra: dict[str, Any] = {}


class QuestionAsked(_Event, tag="question.asked", frozen=True):
    """An owner question."""

    id: str
    sender: str
    body: str
    at: int
    project: str | None = None
    extra: dict[str, Any] = {}


class AnswerGiven(_Event, tag="answer.given", frozen=True):
    """The exact answer to an owner question."""

    question: str
    body: str
    by: str
    at: int
    extra: dict[str, Any] = {}


class DecisionRevised(_Event, tag="decision.revised", frozen=True):
    """One revision of a recorded decision (every revision is kept)."""

    topic: str
    revision: int
    body: str
    author: str
    at: int
    extra: dict[str, Any] = {}


class RunStarted(_Event, tag="run.started", frozen=True):
    """A delegated run began; `metadata` is the broker's snapshot of it."""

    job: str
    run: str
    started_at: int
    agent: str | None = None
    session: str | None = None
    metadata: dict[str, Any] = {}
    extra: dict[str, Any] = {}


class AliasBound(_Event, tag="alias.bound", frozen=True):
    """A peer identity was bound to a CLI session."""

    alias: str
    session: str
    agent: str
    at: int
    extra: dict[str, Any] = {}


# --- capture of agent files ----------------------------------------------------------


class SourceSeen(_Event, tag="source.seen", frozen=True):
    """A source file or database was discovered.

    `source` is a stable id: "<agent>:<root-id>:<relative path>". `root` is the absolute
    root directory as configured; `path` is relative to it (POSIX separators).
    `layout` names the reader's classification (e.g. "claude.session", "codex.rollout").
    """

    source: str
    agent: str
    root: str
    path: str
    layout: str
    at: int


class SourceRewound(_Event, tag="source.rewound", frozen=True):
    """An append-only source shrank or its captured prefix changed: a new generation."""

    source: str
    generation: int
    reason: str
    old_size: int
    new_size: int
    at: int


class ChunkCaptured(_Event, tag="chunk.captured", frozen=True):
    """Exact bytes [offset, offset+size) of generation `generation` of an append-only file.

    `data` holds the bytes, compressed when `codec` is "zstd" (raw when ""). `size` is the
    uncompressed length. Chunks end on a line boundary except when a single line is longer
    than one read (then consecutive chunks continue it).

    `final`: the file ends here and its agent will write no more (a Claude Code
    `SessionEnd`): an unterminated last line is complete. A final chunk may be empty (size
    0, at the end of bytes already captured) when only the news of the end is new.
    """

    source: str
    generation: int
    offset: int
    size: int
    data: bytes
    codec: str = ""
    at: int = 0
    final: bool = False


class FileSnapshotted(_Event, tag="file.snapshotted", frozen=True):
    """The whole content of a rewritten file (opencode JSON, meta.json, run metadata)."""

    source: str
    blake3: str
    size: int
    data: bytes
    codec: str = ""
    mtime_ms: int = 0
    at: int = 0


class RowSnapshotted(_Event, tag="row.snapshotted", frozen=True):
    """One row of an agent's SQLite table (opencode.db), captured by `time_updated`."""

    source: str
    table: str
    row_id: str
    time_updated: int
    data: bytes
    codec: str = ""
    at: int = 0


# --- archive, import, export -------------------------------------------------------------


class TurnsImported(_Event, tag="turns.imported", frozen=True):
    """Turns of one session imported from an export envelope (one event per session, or
    one per part of at most 2,000 turns / 4 MiB of content for a large session).

    `turns` are the envelope's turn objects, kept as given.
    """

    project: str
    session: str
    turns: list[dict[str, Any]]
    file_sha256: str
    at: int


class SessionArchived(_Event, tag="session.archived", frozen=True):
    """A session's envelope was written to the archive; it leaves the hot projections."""

    project: str
    session: str
    path: str
    sha256: str
    turns: int
    newest_at: int
    at: int


class OperationRecorded(_Event, tag="operation.recorded", frozen=True):
    """An operation that changed the log and is worth auditing: "import.applied" and
    "archive.tick". Read-only operations (dry runs, exports) go to the home's
    operations.jsonl journal instead, so they never move the log head."""

    op: str
    at: int
    details: dict[str, Any] = {}


class RecordsForgotten(_Event, tag="records.forgotten", frozen=True):
    """`agentlog forget` replaced records in place (docs/events.md, "Forgotten records").

    Never the content: `kind` (session, project or text), how many records were dropped
    (`forgotten`) or rewritten without the string (`amended`), their seqs as inclusive
    `ranges`, `attest` (SHA-256 over each one's seq, chain hash and new form, in seq order,
    so `verify` proves what replaced them), `sources` (how many sources capture now skips),
    and who asked.
    """

    kind: str
    by: str
    forgotten: int
    amended: int
    ranges: list[list[int]]
    attest: bytes
    at: int
    sources: int = 0


class Forgotten(msgspec.Struct, frozen=True):
    """What a reader gets for a forgotten record: its place in the log, nothing else. Not
    an event (never encoded); `tag_of` names it "forgotten"."""

    forget_seq: int


Event = (
    WriterStarted
    | MessageSent
    | QuestionAsked
    | AnswerGiven
    | DecisionRevised
    | RunStarted
    | AliasBound
    | SourceSeen
    | SourceRewound
    | ChunkCaptured
    | FileSnapshotted
    | RowSnapshotted
    | TurnsImported
    | SessionArchived
    | OperationRecorded
    | RecordsForgotten
)


class UnknownEvent(msgspec.Struct, frozen=True):
    """An event whose tag this version does not know; `raw` is its exact MessagePack."""

    tag: str
    raw: bytes


ALL_EVENT_TYPES: tuple[type[_Event], ...] = (
    WriterStarted,
    MessageSent,
    QuestionAsked,
    AnswerGiven,
    DecisionRevised,
    RunStarted,
    AliasBound,
    SourceSeen,
    SourceRewound,
    ChunkCaptured,
    FileSnapshotted,
    RowSnapshotted,
    TurnsImported,
    SessionArchived,
    OperationRecorded,
    RecordsForgotten,
)


def tag_of(event: Event | UnknownEvent | Forgotten) -> str:
    """The pinned tag string of an event."""
    if isinstance(event, UnknownEvent):
        return event.tag
    if isinstance(event, Forgotten):
        return "forgotten"
    tag = type(event).__struct_config__.tag
    assert isinstance(tag, str)
    return tag
