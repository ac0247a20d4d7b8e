"""The rows of transcript records: the SQL half's part per record (`projections.transcripts`).

Promises:
- `record` makes one record's row in `rows._COLUMNS` order: its own job, subagent name and
  title, else the ones its session and subagent have (`runs`, `subagents`, `sessions`),
  looked up once per batch (`context`, memoized on the connection until `forget_lookups`:
  whoever writes those tables calls it) -- the same row whether or not it was memoized;
- in a rebuild's load the rows of one event wait in a `Batch` and go in by one statement
  (`rows.put_rows`: the same rows, rowids and full-text feed as one `put_row` each); the
  caller `flush`es the batch before anything else it writes, so every statement sees the
  rows made before it;
- `record_bodies` packs what `record` would (the parallel rebuild's parse process may).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from eventlog.records import StoredEvent
from projections.rows import ORD_SPAN, agent_family, put_row, put_rows, stored_bodies
from readers.records import ParseResult, Record, SourceInfo

# Transcript rows waiting to be written together (`rows.put_rows`): their rows, their bodies
Batch = tuple[list[list[Any]], list[str | bytes | None]]


def batch_for(con: sqlite3.Connection) -> Batch | None:
    """A batch for the rows of one event in a rebuild's load (`rows.put_rows` writes them in
    one statement); None elsewhere (each row written as it is made)."""
    return ([], []) if getattr(con, "bulk_fts", None) is not None else None


def flush(con: sqlite3.Connection, batch: Batch | None) -> None:
    """Write the rows waiting in `batch`: before anything else the event writes (titles,
    subagents' names, run metadata), so every statement sees the rows made before it."""
    if batch is not None and batch[0]:
        put_rows(con, batch[0], batch[1], policy="same_source")
        batch[0].clear()
        batch[1].clear()


def conversation_of(agent: str, session: str | None, subagent: str | None, source: str) -> str:
    if not session:
        return f"source:{source}"
    conv = f"{agent}:{session}"
    return f"{conv}/{subagent}" if subagent else conv


def record(
    con: sqlite3.Connection, st: StoredEvent, info: SourceInfo, rec: Record, index: int,
    body: str | bytes | None = None, batch: Batch | None = None,
) -> None:
    """The row of a transcript record (not run metadata: `projections.runlogs`), written now
    or added to `batch`."""
    agent, job, subagent_name, title, conversation = context(con, rec, info.source)
    text = record_text(rec)
    at = rec.at if rec.at is not None else (getattr(st.event, "at", 0) or st.at)
    # the row in rows._COLUMNS order: id, kind, agent, at, project, session, job, run,
    # message, cursor, conversation, role, tool, subagent, subagent_name, title, archived,
    # seq, ord, source, sender, extra, text. `message` names broker messages only (an agent's
    # own message ids, e.g. opencode's msg_…, are not navigable as /?message=).
    row = [
        f"transcript:{rec.uid}", "transcript", agent, at, rec.project, rec.session,
        job if rec.job is None else rec.job, None, None, rec.cursor, conversation,
        rec.role, rec.tool, rec.subagent,
        subagent_name if rec.subagent_name is None else rec.subagent_name,
        title if rec.title is None else rec.title, 0, st.seq,
        st.seq * ORD_SPAN + (index if index < ORD_SPAN else ORD_SPAN - 1), info.source,
        None, None, text,
    ]
    if batch is None:
        put_row(con, row, policy="same_source", body=body)
    else:
        batch[0].append(row)
        batch[1].append(body)


def context(con: sqlite3.Connection, rec: Record, source: str) -> tuple[Any, ...]:
    """What a transcript row takes from its agent, session, subagent and source: (agent
    family, the session's job, the subagent's name, the session's title, conversation),
    looked up once per batch (memoized with the lookups, forgotten with them); a record's
    own job, subagent name or title wins over what is looked up."""
    memo = getattr(con, "doc_lookups", None)
    key = ("row", rec.agent, rec.session, rec.subagent, source)
    if isinstance(memo, dict):
        known = memo.get(key)
        if known is not None:
            return known  # type: ignore[no-any-return]
    agent = agent_family(rec.agent)
    job = subagent_name = title = None
    if rec.session:
        job = lookup(con, memo, ("job", rec.session),
                      "SELECT job FROM runs WHERE session = ? LIMIT 1", (rec.session,))
        if rec.subagent:
            subagent_name = lookup(
                con, memo, ("sub", agent, rec.session, rec.subagent),
                "SELECT name FROM subagents WHERE agent = ? AND session = ? AND subagent = ?",
                (agent, rec.session, rec.subagent))
        title = lookup(con, memo, ("title", agent, rec.session),
                        "SELECT title FROM sessions WHERE agent = ? AND session = ?",
                        (agent, rec.session))
    found = (agent, job, subagent_name, title,
             conversation_of(agent, rec.session, rec.subagent, source))
    if isinstance(memo, dict) and len(memo) < 100_000:
        memo[key] = found
    return found


def record_text(rec: Record) -> str:
    """The text of a transcript record's document (its tool input appended when new)."""
    text = rec.text
    if rec.tool_input and rec.tool_input not in text:
        text = f"{text}\n{rec.tool_input}"
    return text


def record_bodies(results: list[ParseResult]) -> list[list[str | bytes | None]]:
    """The stored bodies of every transcript record of `results` (None for run metadata,
    which `projections.runlogs` stores): what `_record` would pack, packed elsewhere."""
    packed = iter(stored_bodies([record_text(rec) for res in results for rec in res.records
                                 if not rec.run]))
    return [[None if rec.run else next(packed) for rec in res.records] for res in results]


def lookup(con: sqlite3.Connection, memo: object, key: tuple[str, ...], sql: str,
            args: tuple[str, ...]) -> Any:
    """One value of `sql`, memoized for the batch in `memo` when there is one (the memo is
    dropped whenever runs, sessions or subagents are written)."""
    if isinstance(memo, dict) and key in memo:
        return memo[key]
    row = con.execute(sql, args).fetchone()
    value = row[0] if row else None
    if isinstance(memo, dict) and len(memo) < 100_000:
        memo[key] = value
    return value


def forget_lookups(con: sqlite3.Connection) -> None:
    """Drop the batch memo of runs/sessions/subagents lookups (after writing any of them)."""
    memo = getattr(con, "doc_lookups", None)
    if isinstance(memo, dict):
        memo.clear()
