"""The export envelope: its model, its limits, and its validation.

    {"schemaVersion": 1, "projectId": P, "exportedAt": ISO, "turnCount": N,
     "turns": [{"sessionId", "turnIdx", "ts", "role", "content", ...}, ...]}

Promises:
- `read_envelope` accepts a file only if it is within every limit below and every turn is
  well formed; otherwise it raises `EnvelopeError` naming the first problem (the turn index
  and field), so an import refuses the whole file and writes nothing;
- turns are kept exactly as given (a dict each, unknown fields included): the event log
  stores what was imported, not our interpretation of it;
- `turn_of_row` and `document_of_turn` are inverse on the fields we write, so an
  export imported into a fresh home yields the same documents.

Limits (documented in docs/archive.md): a file of at most 256 MiB, at most 1,000,000 turns,
at most 1 MiB of UTF-8 content per turn, ids (project, session, turn id) of 1..256
characters, roles from `readers.records.ROLES`.

Real annotations, not `from __future__ import annotations`: its named tuples (and msgspec
structs) read their field types when the class is made, and a string costs a
`typing.ForwardRef` compile each (docs/history/performance-journal.md, "Annotations").
"""

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from projections.errors import ProjectionError
from readers.records import ROLES

SCHEMA_VERSION = 1
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_TURNS = 1_000_000
MAX_CONTENT_BYTES = 1024 * 1024
MAX_ID_CHARS = 256

# optional turn fields we write and read back: envelope name -> document column
OPTIONAL_FIELDS = {
    "id": "id",
    "agent": "agent",
    "tool": "tool",
    "subagent": "subagent",
    "subagentName": "subagent_name",
    "title": "title",
    "cursor": "cursor",
    "message": "message",
}


class EnvelopeError(ProjectionError):
    """An export envelope is malformed or over a limit; nothing was imported."""


class _Head(msgspec.Struct):
    schemaVersion: int  # wire names
    projectId: str
    turns: list[dict[str, Any]]
    exportedAt: str | None = None
    turnCount: int | None = None


class Envelope(NamedTuple):  # not a dataclass: start-up time of the catch-up path
    project: str
    exported_at: str | None
    turns: list[dict[str, Any]]
    sha256: str
    size: int

    def sessions(self) -> dict[str, list[dict[str, Any]]]:
        """Turns grouped by session id, each group ordered by turnIdx (order of first sight)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for t in self.turns:
            out.setdefault(t["sessionId"], []).append(t)
        for group in out.values():
            group.sort(key=lambda t: t["turnIdx"])
        return out


_dec = msgspec.json.Decoder(_Head)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def read_envelope(data: bytes, *, sha256: str) -> Envelope:
    """Validate an envelope's bytes (the caller has already checked the size and hashed it)."""
    if len(data) > MAX_FILE_BYTES:
        raise EnvelopeError(
            f"envelope is {len(data)} bytes, over the limit of {MAX_FILE_BYTES} (256 MiB)"
        )
    try:
        head = _dec.decode(data)
    except msgspec.ValidationError as exc:
        raise EnvelopeError(f"not an export envelope: {exc}") from None
    except msgspec.DecodeError as exc:
        raise EnvelopeError(f"not valid JSON: {exc}") from None
    if head.schemaVersion != SCHEMA_VERSION:
        raise EnvelopeError(
            f"schemaVersion {head.schemaVersion} is not supported (expected {SCHEMA_VERSION})"
        )
    check_id("projectId", head.projectId)
    if len(head.turns) > MAX_TURNS:
        raise EnvelopeError(f"{len(head.turns)} turns, over the limit of {MAX_TURNS}")
    if head.turnCount is not None and head.turnCount != len(head.turns):
        raise EnvelopeError(f"turnCount says {head.turnCount} but the file has {len(head.turns)}")
    seen: set[tuple[str, int]] = set()
    for i, turn in enumerate(head.turns):
        _check_turn(i, turn, seen)
    return Envelope(head.projectId, head.exportedAt, head.turns, sha256, len(data))


def check_id(name: str, value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID_CHARS:
        raise EnvelopeError(f"{name} must be a string of 1..{MAX_ID_CHARS} characters")
    if any(ord(c) < 32 for c in value):
        raise EnvelopeError(f"{name} must not contain control characters")
    return value


def _check_turn(i: int, turn: dict[str, Any], seen: set[tuple[str, int]]) -> None:
    where = f"turns[{i}]"
    try:
        sid = check_id("sessionId", turn.get("sessionId"))
        idx = turn.get("turnIdx")
        if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
            raise EnvelopeError("turnIdx must be a non-negative integer")
        if (sid, idx) in seen:
            raise EnvelopeError(f"turnIdx {idx} repeats within session {sid!r}")
        seen.add((sid, idx))
        role = turn.get("role")
        if role not in ROLES:
            raise EnvelopeError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        content = turn.get("content")
        if not isinstance(content, str):
            raise EnvelopeError("content must be a string")
        if len(content) * 4 > MAX_CONTENT_BYTES and len(content.encode()) > MAX_CONTENT_BYTES:
            raise EnvelopeError(f"content is over the limit of {MAX_CONTENT_BYTES} bytes (1 MiB)")
        parse_ts(turn.get("ts"))
        for name in OPTIONAL_FIELDS:
            v = turn.get(name)
            if v is not None and not isinstance(v, str):
                raise EnvelopeError(f"{name} must be a string or null")
            if isinstance(v, str) and len(v) > 4096:
                raise EnvelopeError(f"{name} is over 4096 characters")
    except EnvelopeError as exc:
        raise EnvelopeError(f"{where}: {exc}") from None


def parse_ts(value: object) -> int | None:
    """Epoch ms of a turn's `ts`: ISO-8601 with a timezone, epoch ms, or null."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        s = value.strip()
        try:
            parsed = dt.datetime.fromisoformat(s)
        except ValueError:
            raise EnvelopeError(f"ts is not ISO-8601: {value[:40]!r}") from None
        if parsed.tzinfo is None:
            raise EnvelopeError(f"ts needs a timezone: {value[:40]!r}")
        return (parsed - _EPOCH) // dt.timedelta(milliseconds=1)
    raise EnvelopeError("ts must be ISO-8601 with a timezone, epoch milliseconds, or null")


def format_ts(ms: int | None) -> str | None:
    """ISO-8601 UTC with milliseconds (`parse_ts(format_ts(x)) == x`)."""
    if ms is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


# --- turn <-> document -------------------------------------------------------------------


# columns of a transcript document, in the order `turn_of_row` reads them
TURN_COLUMNS = ("session", "at", "role", "text", "id", "agent", "tool", "subagent",
                "subagent_name", "title", "cursor", "message")
_OPTIONAL_AT = tuple(
    (name, TURN_COLUMNS.index(col)) for name, col in OPTIONAL_FIELDS.items()
)


def turn_of_row(row: tuple[Any, ...], turn_idx: int) -> dict[str, Any]:
    """The envelope turn of a document row in `TURN_COLUMNS` order (nulls omitted)."""
    turn: dict[str, Any] = {
        "sessionId": row[0],
        "turnIdx": turn_idx,
        "ts": format_ts(row[1]),
        "role": row[2],
        "content": row[3],
    }
    for name, i in _OPTIONAL_AT:
        v = row[i]
        if v is not None:
            turn[name] = v
    return turn


def document_of_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """Document columns taken from an imported turn (the applier adds project, seq, …)."""
    doc: dict[str, Any] = {
        "session": turn["sessionId"],
        "at": parse_ts(turn.get("ts")),
        "role": turn["role"],
        "text": turn["content"],
        "ord": turn["turnIdx"],
    }
    for name, col in OPTIONAL_FIELDS.items():
        v = turn.get(name)
        doc[col] = v if isinstance(v, str) else None
    return doc


def iter_json_chunks(
    header: dict[str, Any], turns: Iterator[dict[str, Any]], *, flush_bytes: int = 256 * 1024
) -> Iterator[bytes]:
    """The envelope as bytes, written incrementally: header fields, then turns one by one.

    `header` must hold schemaVersion, projectId, exportedAt and turnCount in that order;
    memory stays bounded by `flush_bytes` plus one turn.
    """
    enc = msgspec.json.Encoder()
    head = enc.encode(header)
    buf = bytearray(head[:-1])
    buf += b',"turns":['
    first = True
    for turn in turns:
        if not first:
            buf += b","
        first = False
        enc.encode_into(turn, buf, -1)
        if len(buf) >= flush_bytes:
            yield bytes(buf)
            buf.clear()
    buf += b"]}\n"
    yield bytes(buf)
