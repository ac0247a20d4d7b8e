"""The rows of transcript records: the SQL half's part per record (`projections.transcripts`).

Promises:
- `make_row` makes one record's `rows.Row`: its own job, subagent name and
  title, else the ones its session and subagent have (`runs`, `subagents`, `sessions`),
  looked up once per batch (`context`, memoized on the connection until `forget_lookups`:
  whoever writes those tables calls it) -- the same row whether or not it was memoized;
- in a rebuild's load the rows of one event wait in a `Batch` and go in together
  (`rows.put_rows`, multi-row INSERTs, the columns a run of rows shares bound once: the same
  rows, rowids and full-text feed as one `put_row` each); the caller `flush`es the batch
  before anything else it writes, so every statement sees the rows made before it;
- `record_bodies` packs what `rows.put_row` would (the parallel rebuild's parse process
  may);
- a record that carries no time of its own is dated by its capture event, and its row's
  `extra` is `UNDATED` (`{"undated":true}`), so the session lists can tell a real time from
  the capture's (every other transcript row's `extra` is NULL);
- a row's project is `project_key`'s form (Windows paths folded: one project whatever their
  case).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from projections.project_key import project_key
from projections.row import UNDATED
from projections.rows import NULL, ORD_SPAN, Row, agent_family, new_row, put_rows, stored_bodies
from readers.records import ParseResult, Record

# Transcript rows waiting to be written together (`rows.put_rows`): their rows, their bodies,
# their runs (`rows.put_rows`' `runs`: one new object for each run of an event's records with
# the same agent, session, subagent and own job, subagent name and title, whose rows are the
# same in every `rows._SHARED` column: `transcripts._apply_results`)
Batch = tuple[list[Row], list[str | bytes | None], list[object]]


def batch_for(con: sqlite3.Connection) -> Batch | None:
    """A batch for the rows of one event in a rebuild's load (`rows.put_rows` writes them
    together); None elsewhere (each row written as it is made)."""
    return ([], [], []) if getattr(con, "bulk_fts", None) is not None else None


def flush(con: sqlite3.Connection, batch: Batch | None) -> None:
    """Write the rows waiting in `batch`: before anything else the event writes (titles,
    subagents' names, run metadata), so every statement sees the rows made before it."""
    if batch is not None and batch[0]:
        put_rows(con, batch[0], batch[1], policy="same_source", runs=batch[2])
        batch[0].clear()
        batch[1].clear()
        batch[2].clear()


def conversation_of(agent: str, session: str | None, subagent: str | None, source: str) -> str:
    if not session:
        return f"source:{source}"
    conv = f"{agent}:{session}"
    return f"{conv}/{subagent}" if subagent else conv


def make_row(rec: Record, ctx: tuple[Any, ...], seq: int, at: int, index: int,
             source: str) -> Row:
    """The row of transcript record `rec` of event `seq` (dated `at` unless the record is),
    its `index`-th record, with its `context`, each NULL as `rows.NULL`. `message` names
    broker messages only (an agent's own message ids, e.g. opencode's msg_…, are not
    navigable as /?message=)."""
    agent, job, subagent_name, title, conversation = ctx
    if rec.job is not None:
        job = rec.job
    if rec.subagent_name is not None:
        subagent_name = rec.subagent_name
    if rec.title is not None:
        title = rec.title
    project, session, tool, subagent = rec.project, rec.session, rec.tool, rec.subagent
    if project is not None:
        project = project_key(project)  # Windows paths: one project whatever their case
    # Row(id=, kind=, agent=, at=, project=, session=, job=, run=, message=, cursor=,
    # conversation=, role=, tool=, subagent=, subagent_name=, title=, archived=, seq=, ord=,
    # source=, sender=, extra=, text=), made by `rows.new_row` (see there)
    return new_row(Row, (
        f"transcript:{rec.uid}", "transcript", agent, at if rec.at is None else rec.at,
        NULL if project is None else project, NULL if session is None else session,
        NULL if job is None else job, NULL, NULL, rec.cursor, conversation, rec.role,
        NULL if tool is None else tool, NULL if subagent is None else subagent,
        NULL if subagent_name is None else subagent_name, NULL if title is None else title,
        0, seq, seq * ORD_SPAN + (index if index < ORD_SPAN else ORD_SPAN - 1), source,
        NULL, UNDATED if rec.at is None else NULL, record_text(rec),
    ))


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
    which `projections.runlogs` stores): what `rows.put_row` would pack, packed elsewhere."""
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
