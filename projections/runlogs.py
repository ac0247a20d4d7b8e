"""Delegated run logs and run metadata as documents of kind "run".

Promises:
- a run log (a source whose layout starts with "run", e.g. "runs.log") is indexed chunk by
  captured chunk: each `ChunkCaptured` becomes one bounded document
  "run:<basename>.log@[<generation>:]<offset>" whose `ord` encodes generation and byte
  offset, so `projections.query.run_log` can serve the text from any byte offset;
- run metadata (`RunStarted`, or a parsed `runs.meta` file) names the run's job, session
  and agent; chunks seen before it get them when it arrives, chunks after it at once;
- a run's time is its start: `at` of every chunk is the run's `started_at` when known (also
  for chunks indexed before the metadata), else the UTC time in the log's file name, else
  the capture time.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import PurePosixPath

from eventlog.events import ChunkCaptured
from eventlog.records import StoredEvent
from projections.rows import (
    RUN_CHUNK_ORD,
    agent_family,
    need_index,
    put_document,
    run_basename,
    run_log_session,
)
from readers.parse_runs import filename_time
from readers.records import Record, SourceInfo


def is_run_log(info: SourceInfo) -> bool:
    """A delegated run's log (capture layout "runs.log"; any layout starting with "run")."""
    head = info.layout.split(".", 1)[0].split(":", 1)[0]
    return head in ("run", "runs")


def index_metadata(
    con: sqlite3.Connection, st: StoredEvent, info: SourceInfo, rec: Record, run: str
) -> None:
    """A run metadata record (runs.meta): the run's searchable snapshot."""
    agent = agent_family(rec.agent)
    at = rec.at if rec.at is not None else (getattr(st.event, "at", 0) or st.at)
    if rec.job:
        con.execute(
            "INSERT INTO runs(run, job, session, agent, started_at) VALUES (?,?,?,?,?)"
            " ON CONFLICT(run) DO NOTHING",
            (run, rec.job, rec.session, agent, at),
        )
        started, run_agent = con.execute(
            "SELECT started_at, agent FROM runs WHERE run = ?", (run,)).fetchone()
        need_index(con, "documents_run")
        con.execute(
            "UPDATE document_rows SET job = coalesce(job, ?),"
            " at = ?, agent = CASE WHEN agent = 'other' THEN coalesce(?, agent) ELSE agent END"
            " WHERE run = ? AND kind = 'run' AND role = 'log'",
            (rec.job, started, run_agent or None, run),
        )
        run_log_session(con, run, rec.session)
    put_document(con, {
        "id": f"run:{run}#meta", "kind": "run", "agent": agent, "at": at,
        "project": rec.project, "session": rec.session, "job": rec.job, "run": run,
        "cursor": "0", "conversation": f"run:{run}", "role": "metadata", "title": rec.job,
        "text": rec.text, "seq": st.seq, "ord": 1, "source": info.source,
    })


def index_chunk(
    con: sqlite3.Connection, st: StoredEvent, info: SourceInfo, ev: ChunkCaptured, data: bytes
) -> None:
    """One captured chunk of a run log as one bounded document."""
    base = run_basename(PurePosixPath(info.path).name)
    run = con.execute("SELECT job, session, agent, started_at FROM runs WHERE run = ?",
                      (base,)).fetchone()
    gen = f"{ev.generation}:" if ev.generation else ""
    put_document(con, {
        "id": f"run:{base}@{gen}{ev.offset}", "kind": "run",
        "agent": run[2] if run and run[2] else agent_family(info.agent),
        "at": run[3] if run else (filename_time(base) or ev.at or st.at),
        "session": run[1] if run else None,
        "job": run[0] if run else None, "run": base, "cursor": str(ev.offset),
        "conversation": f"run:{base}", "role": "log",
        "text": data.decode("utf-8", "replace"), "seq": st.seq,
        "ord": ev.generation * (1 << 40) + ev.offset + RUN_CHUNK_ORD, "source": info.source,
        "extra": json.dumps({"generation": ev.generation, "offset": ev.offset,
                             "size": ev.size}),
    })
    con.execute("UPDATE sources SET records = records + 1 WHERE source = ?", (ev.source,))
