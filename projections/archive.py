"""Appliers of the archive events: imported turns become documents, archived sessions cool.

- `turns.imported`: every turn of the event becomes a transcript document of the event's
  project and session. A turn that carries the `id` of a document already in the same
  project and session (a restore of an archived session, or an export re-imported into its
  own home) updates that document and makes it hot again; an id that belongs to another
  project or session is suffixed with "@<project>" (then "@<project>/<session>") so two
  projects never share a document. A turn without an id gets
  "transcript:import:<project+session digest>:<turnIdx>", one without a cursor
  "import:<turnIdx>". A missing `ts` falls back to the event's own time.
- `session.archived`: the session's transcript documents up to the archived newest turn get
  `archived = 1` (they leave searches and history pages unless archived ones are asked for);
  turns captured later stay hot.

Both are deterministic functions of the event and of earlier rows, as `projections.apply`
requires.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from eventlog.digest import sha256
from eventlog.events import SessionArchived, TurnsImported
from eventlog.records import StoredEvent
from projections.rows import (
    ORD_SPAN,
    SESSION_THREADS,
    Applier,
    agent_family,
    need_index,
    put_document,
)
from projections.transcripts import conversation_of


def session_digest(project: str, session: str) -> str:
    """A short stable digest of (project, session), used in ids and idempotency keys."""
    return sha256(f"{project}\x00{session}".encode("utf-8", "surrogatepass")).hexdigest()[
        :24
    ]


def _free_id(con: sqlite3.Connection, wanted: str, project: str, session: str) -> str | None:
    """An id for this (project, session) turn: `wanted`, or a suffixed variant.

    Returns None when a document of the same id is already this project's and session's
    (then the caller updates it in place).
    """
    for candidate in (wanted, f"{wanted}@{project}", f"{wanted}@{project}/{session}"):
        row = con.execute(
            "SELECT project, session FROM documents WHERE id = ?", (candidate,)
        ).fetchone()
        if row is None or (row[0] == project and row[1] == session):
            return candidate
    return f"{wanted}@{session_digest(project, session)}"


def _conversation(
    con: sqlite3.Connection, conv: str, project: str, memo: dict[str, str]
) -> str:
    """`conv`, or `conv@<project>` when another project already holds that conversation (a
    session imported into a second project): get_conversation of one copy must not
    interleave the turns of every copy."""
    if conv not in memo:
        need_index(con, "documents_conv")
        other = con.execute(
            "SELECT 1 FROM documents WHERE conversation = ? AND project IS NOT ? LIMIT 1",
            (conv, project)).fetchone()
        memo[conv] = f"{conv}@{project}" if other else conv
    return memo[conv]


def _turns_imported(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, TurnsImported)
    from projections.envelope import document_of_turn  # imports only: not on the +1 path

    digest = session_digest(ev.project, ev.session)
    mine: dict[str, str] = {}
    for turn in ev.turns:
        doc: dict[str, Any] = document_of_turn(turn)
        idx = int(doc.pop("ord"))
        wanted = doc["id"] or f"transcript:import:{digest}:{idx}"
        doc_id = _free_id(con, wanted, ev.project, ev.session) or wanted
        agent = agent_family(doc["agent"]) if doc["agent"] else "other"
        conversation = _conversation(con, conversation_of(agent, ev.session, doc["subagent"],
                                                          "import"), ev.project, mine)
        doc.update(
            id=doc_id,
            kind="transcript",
            agent=agent,
            at=doc["at"] if doc["at"] is not None else ev.at,
            project=ev.project,
            session=ev.session,
            cursor=doc["cursor"] or f"import:{idx}",
            conversation=conversation,
            archived=0,
            seq=st.seq,
            ord=st.seq * ORD_SPAN + idx,
            source=f"import:{digest}",
        )
        put_document(con, doc, policy="replace")


def _session_archived(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, SessionArchived)
    need_index(con, "documents_conv")
    con.execute(
        "UPDATE document_rows SET archived = 1 WHERE project = ?"
        f" AND thread IN ({SESSION_THREADS})"
        " AND kind = 'transcript' AND at <= ? AND archived = 0",
        (ev.project, ev.session, ev.newest_at),
    )


APPLIERS: dict[str, Applier] = {
    "turns.imported": _turns_imported,
    "session.archived": _session_archived,
}
