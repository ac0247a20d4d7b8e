"""Auto-archive: dump old sessions to envelope files, then record them as archived.

One tick, for every (project, session) whose newest hot turn is older than `after_days`:
1. build the single-session envelope (every turn of the session, archived ones included, so
   the file is the whole session) and write it to
   `<archive dir>/<project>/session-<session>.json`: a temporary file in the same directory,
   fsync, rename over the final name, fsync the directory;
2. only then append `SessionArchived(project, session, path, sha256, turns, newest_at, at)`
   keyed by project + session + file SHA-256.

A crash between 1 and 2 is harmless: the next tick finds the file, rebuilds the envelope with
the file's own `exportedAt`, and if the SHA-256 matches it keeps the file and appends the
event; if the session changed since, the file is rewritten first. A restored session (its
archive file imported again) keeps hot: its envelope and hash are unchanged, so the event
key already exists and the append adds nothing. The log is never pruned: archived turns
keep their events, and `include_archived` brings them back into searches.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from eventlog.events import Event, SessionArchived
from eventlog.files import write_atomic
from eventlog.store import EventLog
from projections.archive import session_digest
from projections.envelope import format_ts
from projections.export import export_chunks

DAY_MS = 86_400_000
APPEND_BATCH = 32
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class _Stamp(msgspec.Struct):
    exportedAt: str | None = None  # wire name


@dataclass
class TickResult:
    now: int
    after_days: int
    cutoff: int
    candidates: int = 0
    archived: list[dict[str, Any]] = field(default_factory=list)
    files_written: int = 0
    files_reused: int = 0
    already_recorded: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": format_ts(self.now), "afterDays": self.after_days,
            "cutoff": format_ts(self.cutoff), "candidates": self.candidates,
            "archived": len(self.archived), "filesWritten": self.files_written,
            "filesReused": self.files_reused, "alreadyRecorded": self.already_recorded,
            "sessions": self.archived,
        }


def safe_name(value: str) -> str:
    """A file-name-safe form of an id; unsafe or long ids get a digest suffix (no clashes)."""
    clean = _SAFE.sub("_", value).strip("._")[:80]
    if clean == value and clean:
        return clean
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{clean or 'x'}-{digest}"


def archive_path(project: str, session: str) -> str:
    """The file's path relative to the archive directory."""
    return f"{safe_name(project)}/session-{safe_name(session)}.json"


def archive_key(project: str, session: str, sha256: str) -> bytes:
    return f"session.archived:{session_digest(project, session)}:{sha256}".encode()


def candidates(con: sqlite3.Connection, cutoff: int) -> list[tuple[str, str, int, int]]:
    """(project, session, newest at, hot turns) of sessions whose newest hot turn < cutoff."""
    rows = con.execute(
        "SELECT project, session, max(at), count(*) FROM documents"
        " WHERE kind = 'transcript' AND archived = 0 AND project IS NOT NULL"
        " AND session IS NOT NULL GROUP BY project, session HAVING max(at) < ?"
        " ORDER BY max(at), project, session",
        (cutoff,),
    ).fetchall()
    return [(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in rows]


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _existing_stamp(path: Path) -> str | None:
    try:
        return msgspec.json.decode(path.read_bytes(), type=_Stamp).exportedAt
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _envelope_sha(con: sqlite3.Connection, project: str, session: str, stamp: str) -> str:
    h = hashlib.sha256()
    for piece in export_chunks(con, project, session=session, include_archived=True,
                               exported_at=stamp):
        h.update(piece)
    return h.hexdigest()


def write_hashed(
    dest: Path, pieces: Callable[[], Iterable[bytes]], *, fsync: bool = True
) -> tuple[str, int]:
    """Write `pieces()` to `dest` atomically (`eventlog.files.write_atomic`); (sha256,
    size)."""
    h = hashlib.sha256()

    def hashed() -> Iterator[bytes]:
        for piece in pieces():
            h.update(piece)
            yield piece

    size = write_atomic(dest, hashed(), fsync=fsync)
    return h.hexdigest(), size


def archive_tick(
    con: sqlite3.Connection,
    log: EventLog,
    archive_dir: Path,
    *,
    now: int,
    after_days: int = 30,
    after_dump: Callable[[Path], None] | None = None,
) -> TickResult:
    """Archive every session older than `after_days` at time `now` (epoch ms).

    `after_dump` is called after each file is in place and before its event is appended
    (tests inject a crash there).
    """
    if after_days < 0:
        raise ValueError("after_days must be >= 0")
    cutoff = now - after_days * DAY_MS
    result = TickResult(now=now, after_days=after_days, cutoff=cutoff)
    pending: list[tuple[bytes, Event]] = []
    found = candidates(con, cutoff)
    result.candidates = len(found)
    stamp_now = format_ts(now) or ""
    for project, session, newest, hot in found:
        rel = archive_path(project, session)
        dest = archive_dir / rel
        sha = None
        if dest.exists():
            stamp = _existing_stamp(dest)
            if stamp is not None and _envelope_sha(con, project, session, stamp) == _file_sha(dest):
                sha = _file_sha(dest)
                result.files_reused += 1
        if sha is None:
            def pieces(p: str = project, s: str = session) -> Any:
                return export_chunks(con, p, session=s, include_archived=True,
                                     exported_at=stamp_now)
            sha, _ = write_hashed(dest, pieces)
            result.files_written += 1
        if after_dump is not None:
            after_dump(dest)
        (turns,) = con.execute(
            "SELECT count(*) FROM documents WHERE kind = 'transcript' AND project = ?"
            " AND session = ?", (project, session)).fetchone()
        key = archive_key(project, session, sha)
        if log.has_key(key):
            result.already_recorded += 1
            continue
        pending.append((key, SessionArchived(project=project, session=session, path=rel,
                                             sha256=sha, turns=int(turns), newest_at=newest,
                                             at=now)))
        result.archived.append({"project": project, "sessionId": session, "path": rel,
                                "sha256": sha, "turns": int(turns), "hotTurns": hot,
                                "newest": format_ts(newest)})
        if len(pending) >= APPEND_BATCH:
            log.append(pending)
            pending = []
    if pending:
        log.append(pending)
    return result
