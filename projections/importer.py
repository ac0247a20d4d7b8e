"""Import planning: what an envelope would add to a project, and the events that add it.

Promises:
- idempotent per session: a session that already has hot turns in the target project is
  skipped whole (no partial merge), and so is a session already imported from a file with
  the same SHA-256 (its event key exists); the plan's `warning` says how many were skipped
  and why;
- a session whose turns are all archived is not "present": importing its archive file
  restores it (the applier makes the same documents hot again);
- planning writes nothing; `events` gives one `TurnsImported` per session to insert, keyed
  by project + session + file SHA-256, so appending them twice adds nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from eventlog.events import Event, TurnsImported
from eventlog.store import EventLog
from projections.envelope import Envelope, check_id
from projections.history import session_present

PART_TURNS = 2000
PART_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SessionPlan:
    session: str
    turns: int
    action: str  # "insert" | "skip"
    reason: str | None = None


@dataclass
class ImportPlan:
    project: str
    sha256: str
    sessions: list[SessionPlan] = field(default_factory=list)

    @property
    def to_insert(self) -> list[SessionPlan]:
        return [s for s in self.sessions if s.action == "insert"]

    @property
    def skipped(self) -> list[SessionPlan]:
        return [s for s in self.sessions if s.action == "skip"]

    @property
    def warning(self) -> str | None:
        present = sum(1 for s in self.skipped if s.reason == "present")
        again = sum(1 for s in self.skipped if s.reason == "imported")
        parts = []
        if present:
            parts.append(
                f"{present} session(s) skipped: already present in project {self.project!r} "
                "(imports are idempotent per session; no partial merge)"
            )
        if again:
            parts.append(f"{again} session(s) skipped: already imported from this same file")
        return "; ".join(parts) or None

    def to_dict(self) -> dict[str, Any]:
        ins = self.to_insert
        return {
            "project": self.project,
            "fileSha256": self.sha256,
            "sessions": len(self.sessions),
            "sessionsToInsert": len(ins),
            "turnsToInsert": sum(s.turns for s in ins),
            "sessionsSkipped": len(self.sessions) - len(ins),
            "turnsSkipped": sum(s.turns for s in self.skipped),
            "warning": self.warning,
            "detail": [
                {"sessionId": s.session, "turns": s.turns, "action": s.action,
                 **({"reason": s.reason} if s.reason else {})}
                for s in self.sessions
            ],
        }


def import_key(project: str, session: str, file_sha256: str, part: int = 0) -> bytes:
    ps = hashlib.sha256(f"{project}\x00{session}".encode("utf-8", "surrogatepass")).hexdigest()
    suffix = f":{part}" if part else ""
    return f"turns.imported:{ps[:32]}:{file_sha256}{suffix}".encode()


def plan_import(
    con: sqlite3.Connection | None,
    log: EventLog | None,
    envelope: Envelope,
    project: str | None = None,
) -> ImportPlan:
    """Decide, per session, insert or skip. `con` None means no history.db yet."""
    target = check_id("project", project) if project is not None else envelope.project
    plan = ImportPlan(target, envelope.sha256)
    for session, turns in envelope.sessions().items():
        if con is not None and session_present(con, target, session):
            plan.sessions.append(SessionPlan(session, len(turns), "skip", "present"))
        elif log is not None and log.has_key(import_key(target, session, envelope.sha256)):
            plan.sessions.append(SessionPlan(session, len(turns), "skip", "imported"))
        else:
            plan.sessions.append(SessionPlan(session, len(turns), "insert"))
    return plan


def events(plan: ImportPlan, envelope: Envelope, at: int) -> list[tuple[bytes, Event]]:
    """TurnsImported events of the sessions to insert (turns kept as given, by turnIdx).

    A session is one event, or several consecutive parts when it has more than
    `PART_TURNS` turns or `PART_BYTES` of content, so no event (and no catch-up batch) grows
    without bound; part n > 0 has ":n" appended to its key.
    """
    groups = envelope.sessions()
    out: list[tuple[bytes, Event]] = []
    for s in plan.to_insert:
        for part, turns in enumerate(_parts(groups[s.session])):
            out.append((
                import_key(plan.project, s.session, plan.sha256, part),
                TurnsImported(project=plan.project, session=s.session, turns=turns,
                              file_sha256=plan.sha256, at=at),
            ))
    return out


def _parts(turns: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    part: list[dict[str, Any]] = []
    size = 0
    for t in turns:
        n = len(t["content"])
        if part and (len(part) >= PART_TURNS or size + n > PART_BYTES):
            yield part
            part, size = [], 0
        part.append(t)
        size += n
    if part:
        yield part
