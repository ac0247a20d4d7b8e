"""Event -> rows: the dispatch table of history.db.

`appliers()` maps an event tag to a function `(conn, stored_event) -> None` that writes the
event's rows inside the caller's transaction. The table is the union of the broker
appliers below, the capture appliers of `projections.transcripts`, and — when that module
exists — `projections.archive.APPLIERS` (turns.imported, session.archived). Appliers are
deterministic functions of the event and of rows written by earlier events, so applying
the log in seq order gives the same rows whether it happens in one rebuild or in many
catch-up batches. Events with no applier change nothing (unknown tags are counted).
"""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Mapping
from typing import Any

import msgspec

from eventlog.digest import sha256
from eventlog.events import (
    AliasBound,
    AnswerGiven,
    DecisionRevised,
    MessageSent,
    QuestionAsked,
    RunStarted,
    UnknownEvent,
    tag_of,
)
from eventlog.records import RawRecord, StoredEvent, decode_record
from projections import redact, secrets
from projections.rows import (
    MESSAGE_KINDS,
    ORD_SPAN,
    SESSION_THREADS,
    Applier,
    Row,
    agent_family,
    need_index,
    put_document,
    put_row,
    run_basename,
    run_log_session,
)


def _extra(obj: Mapping[str, Any]) -> str | None:
    clean = {k: v for k, v in obj.items() if v not in (None, [], {}, "")}
    if not clean:
        return None
    try:
        return msgspec.json.encode(clean, order="sorted").decode()
    except (TypeError, msgspec.EncodeError):
        return json.dumps(clean, sort_keys=True, ensure_ascii=False, default=str)


def _sender_agent(con: sqlite3.Connection, sender: str, extra: Mapping[str, Any]) -> str:
    if isinstance(extra.get("agent"), str):
        return agent_family(extra["agent"])
    cache = _alias_cache(con)
    if sender in cache:
        return cache[sender]
    row = con.execute(
        "SELECT agent FROM aliases WHERE alias = ? ORDER BY at DESC, session LIMIT 1", (sender,)
    ).fetchone()
    fam = agent_family(row[0]) if row else "other"
    if len(cache) < 10_000:
        cache[sender] = fam
    return fam


def _alias_cache(con: sqlite3.Connection) -> dict[str, str]:
    """Per-connection memo of alias -> agent family (cleared whenever an alias is bound)."""
    cache = getattr(con, "alias_cache", None)
    return cache if isinstance(cache, dict) else {}


def _message(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, MessageSent)
    kind = ev.kind if ev.kind in MESSAGE_KINDS else "message"
    run = ev.extra.get("run")
    conv = f"thread:{ev.thread}" if ev.thread else f"message:{ev.id}"
    body, found = redact.redact(ev.body)
    agent = _sender_agent(con, ev.sender, ev.extra)
    if found is not None:
        secrets.note(con, f"message:{ev.id}", found, agent, ev.session, ev.at)
    rowid = put_row(con, Row(
        id=f"message:{ev.id}", kind=kind, agent=agent, at=ev.at, project=ev.project,
        session=ev.session, job=ev.job,
        run=run_basename(run) if isinstance(run, str) and run else None, message=ev.id,
        conversation=conv, role=kind, seq=st.seq, ord=st.seq * ORD_SPAN, sender=ev.sender,
        extra=_extra({"to": ev.to, **ev.extra}) if ev.to or ev.extra else None, text=body,
    ), policy="keep")
    if rowid and ev.to:  # the addressees, so a peer's session filter finds what it was sent
        to = [(alias, rowid) for alias in dict.fromkeys(ev.to) if isinstance(alias, str) and alias]
        if len(to) == 1:  # the common case: one statement, no iterator
            con.execute(_RECIPIENT, to[0])
        else:
            con.executemany(_RECIPIENT, to)


_RECIPIENT = "INSERT OR IGNORE INTO recipients(alias, doc) VALUES (?, ?)"


def _question(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, QuestionAsked)
    put_document(con, {
        "id": f"question:{ev.id}", "kind": "message",
        "agent": _sender_agent(con, ev.sender, ev.extra), "at": ev.at, "project": ev.project,
        "message": ev.id, "conversation": f"question:{ev.id}", "role": "question",
        "text": ev.body, "seq": st.seq, "ord": st.seq * ORD_SPAN, "sender": ev.sender,
        "extra": _extra(dict(ev.extra)),
    }, policy="keep")


def answer_id(question: str, by: str, body: str) -> str:
    digest = sha256(f"{by}\x1f{body}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"answer:{question}:{digest[:16]}"


def _answer(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, AnswerGiven)
    q = con.execute("SELECT project FROM documents WHERE id = ?", (f"question:{ev.question}",))
    row = q.fetchone()
    put_document(con, {
        "id": answer_id(ev.question, ev.by, ev.body), "kind": "message",
        "agent": _sender_agent(con, ev.by, ev.extra), "at": ev.at,
        "project": row[0] if row else None, "message": ev.question,
        "conversation": f"question:{ev.question}", "role": "answer", "text": ev.body,
        "seq": st.seq, "ord": st.seq * ORD_SPAN, "sender": ev.by, "extra": _extra(dict(ev.extra)),
    }, policy="keep")


def _decision(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, DecisionRevised)
    put_document(con, {
        "id": f"decision:{ev.topic}#{ev.revision}", "kind": "decision",
        "agent": _sender_agent(con, ev.author, ev.extra), "at": ev.at,
        "project": ev.extra.get("project") if isinstance(ev.extra.get("project"), str) else None,
        "conversation": f"decision:{ev.topic}", "role": "decision", "title": ev.topic,
        "text": ev.body, "seq": st.seq, "ord": ev.revision, "sender": ev.author,
        "extra": _extra({"revision": ev.revision, **ev.extra}),
    }, policy="keep")


def _run(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, RunStarted)
    base = run_basename(ev.run)
    agent = agent_family(ev.agent)
    con.execute(
        "INSERT OR REPLACE INTO runs(run, job, session, agent, started_at) VALUES (?,?,?,?,?)",
        (base, ev.job, ev.session, agent, ev.started_at),
    )
    meta = json.dumps(ev.metadata, sort_keys=True, ensure_ascii=False, default=str)
    project = ev.metadata.get("project") or ev.metadata.get("cwd")
    put_document(con, {
        "id": f"run:{base}", "kind": "run", "agent": agent, "at": ev.started_at,
        "project": project if isinstance(project, str) else None, "session": ev.session,
        "job": ev.job, "run": base, "cursor": "0", "conversation": f"run:{base}",
        "role": "metadata", "title": ev.job, "text": f"{ev.job} {base}\n{meta}",
        "seq": st.seq, "ord": 0, "extra": _extra(dict(ev.extra)),
    })
    # Run metadata connects CLI transcripts and run log chunks to their job.
    if ev.session:
        need_index(con, "documents_conv")
        con.execute(
            "UPDATE document_rows SET job = ?"
            f" WHERE thread IN ({SESSION_THREADS}) AND job IS NULL AND kind = 'transcript'",
            (ev.job, ev.session),
        )
    need_index(con, "documents_run")
    con.execute(
        "UPDATE document_rows SET job = ?, at = ? WHERE run = ? AND kind = 'run' AND role = 'log'",
        (ev.job, ev.started_at, base),
    )
    run_log_session(con, base, ev.session)


def _alias(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, AliasBound)
    con.execute(
        "INSERT OR REPLACE INTO aliases(alias, session, agent, at) VALUES (?,?,?,?)",
        (ev.alias, ev.session, ev.agent, ev.at),
    )
    _alias_cache(con).clear()
    # What this peer sent before the binding takes the agent it is now known by, so the
    # rows do not depend on whether the alias or the message was recorded first.
    family = _sender_agent(con, ev.alias, {})
    need_index(con, "documents_sender")
    con.execute(
        "UPDATE document_rows SET agent = ? WHERE sender = ? AND agent != ?"
        " AND (extra IS NULL OR json_type(extra, '$.agent') IS NOT 'text')",
        (family, ev.alias, family),
    )


BROKER_APPLIERS: dict[str, Applier] = {
    "message.sent": _message,
    "question.asked": _question,
    "answer.given": _answer,
    "decision.revised": _decision,
    "run.started": _run,
    "alias.bound": _alias,
}


def appliers() -> dict[str, Applier]:
    """The full dispatch table (broker + capture + archive)."""
    from projections import archive, transcripts

    table: dict[str, Applier] = dict(BROKER_APPLIERS)
    table.update(transcripts.APPLIERS)
    table.update(archive.APPLIERS)
    return table


def apply_records(
    con: sqlite3.Connection, records: list[RawRecord], table: Mapping[str, Applier]
) -> tuple[int, str]:
    """Decode and apply `records` in order inside the caller's transaction; returns the last
    (seq, chain hash hex) for the checkpoint.

    Each record is decoded only when it is applied and released from `records` right after
    (the list is emptied), so a batch holds at most one decoded payload at a time. Parser
    state is cached for the batch and written once at the end (before the caller's
    checkpoint, in the same transaction); on an error the cache is dropped with the
    transaction.
    """
    from projections import transcripts

    last_seq, last_hash = 0, ""
    transcripts.begin_batch(con)
    # Objects that exist before the batch (a capture's file table, say) are left out of the
    # cyclic collector's passes while the batch allocates its many short-lived records.
    gc.freeze()
    try:
        records.reverse()
        while records:
            st = decode_record(records.pop())
            apply_event(con, st, table)
            last_seq, last_hash = st.seq, st.hash.hex()
            del st
        transcripts.flush_batch(con)
    finally:
        gc.unfreeze()
        transcripts.end_batch(con)
    return last_seq, last_hash


def apply_event(con: sqlite3.Connection, st: StoredEvent, table: Mapping[str, Applier]) -> None:
    tag = tag_of(st.event)
    if isinstance(st.event, UnknownEvent):
        con.execute(
            "INSERT INTO opaque_events(tag, count) VALUES (?, 1)"
            " ON CONFLICT(tag) DO UPDATE SET count = count + 1",
            (tag,),
        )
        return
    fn = table.get(tag)
    if fn is not None:
        if tag not in _CAPTURE_TAGS:  # broker/archive appliers may write runs or sessions
            forget = getattr(con, "doc_lookups", None)
            if isinstance(forget, dict):
                forget.clear()
        fn(con, st)


_CAPTURE_TAGS = frozenset(
    ("source.seen", "source.rewound", "chunk.captured", "file.snapshotted", "row.snapshotted")
)
