"""Capture events -> transcript documents, run-log chunks and per-source coverage.

Promises:
- lines are assembled across chunks: a chunk normally ends on a newline; a line longer than
  one chunk continues in the next; the unfinished tail (`sources.partial`) is kept in
  history.db, so catch-up in any batch size gives the same rows as a rebuild;
- a line longer than `readers.records.MAX_LINE` is never buffered whole nor parsed: it is
  counted in `sources.oversized` (the log keeps its bytes);
- a new generation (`SourceRewound`, or a chunk of a higher generation) restarts assembly
  at offset 0; documents already indexed stay (records are keyed by uid and a rewritten
  source replaces the rows it produced before);
- parser state is one JSON object per `state_scope(source)`, stored in `parser_state`;
- the pure parsers of `readers.parse` are called when that module exists; until then the
  chunks are counted as `unparsed` (the source shows as pending) and `reindex` — triggered
  automatically when the parser version changes — indexes them;
- run logs (layouts starting with "run") are indexed by `projections.runlogs`;
- a parser that raises is counted as an unknown record type, never stops a rebuild;
- the pure half (assembly, parse calls) is `projections.assemble`; each capture applier is
  a head (`chunk_head`, `whole_head`), that pure half, then its rows (`chunk_rows`,
  `whole_rows`), so the parallel rebuild (`projections.pipeline`) runs the same SQL on
  records parsed in another process; a record's row is made by `projections.transcript_rows`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from types import ModuleType
from typing import Any

from eventlog import zstd
from eventlog.events import (
    ChunkCaptured,
    FileSnapshotted,
    RowSnapshotted,
    SourceRewound,
    SourceSeen,
)
from eventlog.records import StoredEvent
from projections import assemble, runlogs, secrets
from projections.db import parser_module
from projections.project_key import project_key
from projections.rows import Applier, agent_family, need_index, put_row, run_basename
from projections.transcript_rows import Batch, batch_for, context, flush, forget_lookups, make_row
from projections.transcript_rows import conversation_of as conversation_of  # archive's
from projections.transcript_rows import record_bodies as record_bodies  # pipeline's
from readers.records import ParseResult, SessionTitle, SourceInfo, SubagentNamed


def _source_row(con: sqlite3.Connection, source: str) -> tuple[SourceInfo, sqlite3.Row | Any]:
    row = con.execute(
        "SELECT agent, root, path, layout, generation, next_offset, partial, skipping"
        " FROM sources WHERE source = ?",
        (source,),
    ).fetchone()
    if row is None:
        # A chunk of a source never announced: infer what we can from its id.
        guess = assemble.unannounced(source)
        con.execute(
            "INSERT INTO sources(source, agent, root, path, layout, seen_at, files)"
            " VALUES (?,?,?,?,?,0,1)",
            (source, guess.agent, "", guess.path, ""),
        )
        row = (guess.agent, "", guess.path, "", 0, 0, b"", 0)
    info = SourceInfo(source=source, agent=row[0], root=row[1], path=row[2], layout=row[3])
    return info, row


def _seen(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, SourceSeen)
    con.execute(
        "INSERT INTO sources(source, agent, root, path, layout, seen_at) VALUES (?,?,?,?,?,?)"
        " ON CONFLICT(source) DO UPDATE SET agent = excluded.agent, root = excluded.root,"
        " path = excluded.path, layout = excluded.layout",
        (ev.source, ev.agent, ev.root, ev.path, ev.layout, ev.at),
    )


def _rewound(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, SourceRewound)
    _source_row(con, ev.source)
    con.execute(
        "UPDATE sources SET generation = ?, next_offset = 0, partial = x'', skipping = 0"
        " WHERE source = ?",
        (ev.generation, ev.source),
    )


def _touch(con: sqlite3.Connection, source: str, at: int, nbytes: int, counter: str) -> None:
    con.execute(
        f"UPDATE sources SET bytes_captured = bytes_captured + ?, {counter} = {counter} + 1,"
        " last_capture_at = max(coalesce(last_capture_at, 0), ?) WHERE source = ?",
        (nbytes, at, source),
    )


def _chunk(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, ChunkCaptured)
    info, row = chunk_head(con, st)
    try:
        data = zstd.payload(ev.codec, ev.data, ev.size)
    except Exception as exc:  # a bad chunk is counted, never fatal
        _count_unknown(con, ev.source, {f"chunk-undecodable:{type(exc).__name__}": 1})
        return
    if runlogs.is_run_log(info):
        forget_lookups(con)
        runlogs.index_chunk(con, st, info, ev, data)
        return
    parser = parser_module()
    cur = assemble.Cursor(int(row[4]), int(row[5]), bytes(row[6]), int(row[7]))
    s = assemble.step(cur, ev.generation, ev.offset, data, ev.final)
    if s is None or s.old:
        chunk_rows(con, st, info, s, 0, [])
        return
    scope, state = _load_state(con, parser, info)
    nlines, results = assemble.parse_lines(parser, info, state, s.lines, s.cursor.generation)
    _save_state(con, scope, state)
    chunk_rows(con, st, info, s, nlines, results)


def chunk_head(con: sqlite3.Connection, st: StoredEvent) -> tuple[SourceInfo, Any]:
    """What every chunk does first: its `ord`s restart, its source row (created when the
    source was never announced) and its capture counters."""
    ev = st.event
    assert isinstance(ev, ChunkCaptured)
    _ord_counter(con)[:] = [st.seq, 0]
    info, row = _source_row(con, ev.source)
    _touch(con, ev.source, ev.at or st.at, ev.size, "chunks")
    return info, row


def chunk_rows(
    con: sqlite3.Connection, st: StoredEvent, info: SourceInfo, s: assemble.Step | None,
    nlines: int, results: list[ParseResult],
    bodies: list[list[str | bytes | None]] | None = None,
) -> None:
    """The rows of one assembled chunk (`s`, from `assemble.step`) and its parsed lines."""
    if s is None:
        return  # already assembled
    if s.gap:
        con.execute("UPDATE sources SET gaps = gaps + 1 WHERE source = ?", (info.source,))
    if s.old:
        return
    if bodies is None:  # packed here, all of the chunk's at once (`rows.stored_bodies`)
        bodies = record_bodies(results)
    unknown: dict[str, int] = {}
    batch = batch_for(con)
    records = _apply_results(con, st, info, results, unknown, bodies, batch)
    flush(con, batch)
    cur = s.cursor
    con.execute(
        "UPDATE sources SET generation = ?, next_offset = ?, partial = ?, skipping = ?,"
        " lines = lines + ?, records = records + ?, oversized = oversized + ?,"
        " unknown = unknown + ? WHERE source = ?",
        (cur.generation, cur.next_offset, cur.partial, cur.skipping, nlines, records,
         s.oversized, sum(unknown.values()), info.source),
    )
    _count_unknown(con, info.source, unknown, add_total=False)


class _StateCache:
    """Parser states of one batch (one transaction): loaded once, written once at the end.

    States keep their key order through JSON (no sorting), so a state read back from
    `parser_state` equals the one kept in memory: batch boundaries change nothing."""

    __slots__ = ("dirty", "states")

    def __init__(self) -> None:
        self.states: dict[str, dict[str, Any]] = {}
        self.dirty: set[str] = set()


def begin_batch(con: sqlite3.Connection) -> None:
    """Cache parser states (and lookups of runs, sessions, subagents) on `con` until
    `end_batch` (call `flush_batch` before commit)."""
    setattr(con, "parser_states", _StateCache())  # noqa: B010 (memos on the connection)
    setattr(con, "doc_lookups", {})  # noqa: B010


def flush_batch(con: sqlite3.Connection) -> None:
    cache = getattr(con, "parser_states", None)
    if not isinstance(cache, _StateCache):
        return
    for scope in sorted(cache.dirty):
        _write_state(con, scope, cache.states[scope])
    cache.dirty.clear()


def end_batch(con: sqlite3.Connection) -> None:
    setattr(con, "parser_states", None)  # noqa: B010
    setattr(con, "doc_lookups", None)  # noqa: B010


def _load_state(
    con: sqlite3.Connection, parser: ModuleType, info: SourceInfo
) -> tuple[str, dict[str, Any]]:
    scope = assemble.state_scope(parser, info)
    cache = getattr(con, "parser_states", None)
    if isinstance(cache, _StateCache) and scope in cache.states:
        return scope, cache.states[scope]
    row = con.execute("SELECT state FROM parser_state WHERE scope = ?", (scope,)).fetchone()
    state: dict[str, Any] = json.loads(row[0]) if row else {}
    if isinstance(cache, _StateCache):
        cache.states[scope] = state
    return scope, state


def _save_state(con: sqlite3.Connection, scope: str, state: dict[str, Any]) -> None:
    cache = getattr(con, "parser_states", None)
    if isinstance(cache, _StateCache):
        cache.states[scope] = state
        cache.dirty.add(scope)
        return
    _write_state(con, scope, state)


def _write_state(con: sqlite3.Connection, scope: str, state: dict[str, Any]) -> None:
    write_state_text(con, scope, assemble.state_text(state))


def write_state_text(con: sqlite3.Connection, scope: str, text: str) -> None:
    con.execute(
        "INSERT INTO parser_state(scope, state) VALUES (?, ?)"
        " ON CONFLICT(scope) DO UPDATE SET state = excluded.state",
        (scope, text),
    )


def _count_unknown(
    con: sqlite3.Connection, source: str, unknown: dict[str, int], *, add_total: bool = True
) -> None:
    for kind, n in sorted(unknown.items()):
        con.execute(
            "INSERT INTO unknown_types(source, type, count) VALUES (?,?,?)"
            " ON CONFLICT(source, type) DO UPDATE SET count = count + excluded.count",
            (source, kind, n),
        )
    if add_total and unknown:
        con.execute("UPDATE sources SET unknown = unknown + ? WHERE source = ?",
                    (sum(unknown.values()), source))


def _apply_results(
    con: sqlite3.Connection, st: StoredEvent, info: SourceInfo, results: list[ParseResult],
    unknown: dict[str, int], bodies: list[list[str | bytes | None]] | None = None,
    batch: Batch | None = None,
) -> int:
    """The titles, subagents and records of `results` in order (`bodies[i]`: the packed
    bodies of `results[i]`'s records, when made elsewhere); returns how many records.
    A run of records with the same agent, session and subagent (and own job, subagent name
    and title) asks `context` once: it changes only when runs, sessions or subagents are
    written (below: then asked again). Such a run's rows are the same in every
    `rows._SHARED` column, so they are one run for `rows.put_rows` (the batch's `runs`)."""
    counter = _ord_counter(con)
    source, seq = info.source, st.seq
    at = getattr(st.event, "at", 0) or st.at
    key: tuple[Any, ...] | None = None
    ctx: tuple[Any, ...] = ()
    run = object()  # the rows made since `key` changed (transcript_rows.Batch): new with it
    n = 0
    for i, res in enumerate(results):
        for kind, c in res.unknown.items():
            unknown[kind] = unknown.get(kind, 0) + c
        if res.titles or res.subagents:
            flush(con, batch)
            key = None
            for t in res.titles:
                _title(con, t)
            for sub in res.subagents:
                _subagent(con, sub)
        packed = bodies[i] if bodies is not None else None
        for j, rec in enumerate(res.records):
            if rec.run:
                flush(con, batch)
                forget_lookups(con)
                key = None
                runlogs.index_metadata(con, st, info, rec, run_basename(rec.run))
            else:
                same = (rec.agent, rec.session, rec.subagent, rec.job, rec.subagent_name,
                        rec.title)  # (a record's own job, name and title win over ctx's)
                if same != key:
                    key = same
                    ctx = context(con, rec, source)
                    run = object()
                row = make_row(rec, ctx, seq, at, counter[1], source)
                body = packed[j] if packed is not None else None
                if batch is None:
                    put_row(con, row, policy="same_source", body=body)
                else:
                    batch[0].append(row)
                    batch[1].append(body)
                    batch[2].append(run)
            counter[1] += 1
        n += len(res.records)
        if res.redacted:
            _note_redacted(con, res, source, at)
    return n


def _note_redacted(con: sqlite3.Connection, res: ParseResult, source: str, at: int) -> None:
    """Note what `assemble.redact_results` redacted in `res` (`projections.secrets`)."""
    for i, kind, count in res.redacted:
        if i >= 0:
            rec = res.records[i]
            doc = (f"run:{run_basename(rec.run)}#meta" if rec.run
                   else f"transcript:{rec.uid}")
            secrets.note(con, doc, {kind: count}, agent_family(rec.agent), rec.session,
                         at if rec.at is None else rec.at)
        else:
            t = res.titles[-1 - i]
            family = agent_family(t.agent)
            secrets.note(con, f"title:{family}:{t.session}", {kind: count}, family,
                         t.session, at)


def _ord_counter(con: sqlite3.Connection) -> list[int]:
    """[seq, next index]: records of one event get consecutive `ord`s. Every event is applied
    in one call that starts by resetting it, so it is the same in rebuild and catch-up. It
    lives on the connection, so concurrent builds in one process do not share it."""
    counter = getattr(con, "ord_next", None)
    if not isinstance(counter, list):
        counter = _fallback_counter
    return counter


_fallback_counter = [0, 0]


def _title(con: sqlite3.Connection, t: SessionTitle) -> None:
    forget_lookups(con)
    con.execute(
        "INSERT INTO sessions(agent, session, title, project) VALUES (?,?,?,?)"
        " ON CONFLICT(agent, session) DO UPDATE SET title = excluded.title,"
        " project = coalesce(excluded.project, sessions.project)",
        (agent_family(t.agent), t.session, t.title,
         None if t.project is None else project_key(t.project)),
    )


def _subagent(con: sqlite3.Connection, sub: SubagentNamed) -> None:
    forget_lookups(con)
    agent = agent_family(sub.agent)
    session = sub.session or ""
    con.execute(
        "INSERT INTO subagents(agent, session, subagent, name) VALUES (?,?,?,?)"
        " ON CONFLICT(agent, session, subagent) DO UPDATE SET name = excluded.name",
        (agent, session, sub.subagent, sub.name),
    )
    need_index(con, "documents_subagent")
    con.execute(
        "UPDATE document_rows SET subagent_name = ? WHERE subagent = ? AND agent = ?"
        " AND (SELECT coalesce(t.session, '') FROM threads t"
        " WHERE t.thread = document_rows.thread) = ?",
        (sub.name, sub.subagent, agent, session),
    )


def _snapshot(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, FileSnapshotted)
    _apply_whole(
        con, st, ev.source, ev.at or st.at, ev.size, "snapshots", "snapshot",
        lambda: zstd.payload(ev.codec, ev.data, ev.size),
        lambda parser, info, state, data: assemble.call(parser.parse_snapshot, info, state, data),
    )


def _row(con: sqlite3.Connection, st: StoredEvent) -> None:
    ev = st.event
    assert isinstance(ev, RowSnapshotted)
    _apply_whole(
        con, st, ev.source, ev.at or st.at, len(ev.data), "rows", "row",
        lambda: zstd.payload(ev.codec, ev.data, None),
        lambda parser, info, state, data: assemble.call(
            parser.parse_row, info, state, ev.table, ev.row_id, data),
    )


def _apply_whole(
    con: sqlite3.Connection,
    st: StoredEvent,
    source: str,
    at: int,
    nbytes: int,
    counter: str,
    label: str,
    payload: Callable[[], bytes],
    parse: Callable[[ModuleType, SourceInfo, dict[str, Any], bytes], ParseResult],
) -> None:
    """A whole-content event (file snapshot, database row) -> records of its source."""
    info = whole_head(con, st, source, at, nbytes, counter)
    try:
        data = payload()
    except Exception as exc:
        _count_unknown(con, source, {f"{label}-undecodable:{type(exc).__name__}": 1})
        return
    parser = parser_module()
    scope, state = _load_state(con, parser, info)
    res = parse(parser, info, state, data)
    _save_state(con, scope, state)
    whole_rows(con, st, info, res)


def whole_head(
    con: sqlite3.Connection, st: StoredEvent, source: str, at: int, nbytes: int, counter: str
) -> SourceInfo:
    """What every whole-content event does first (see `chunk_head`)."""
    _ord_counter(con)[:] = [st.seq, 0]
    info, _ = _source_row(con, source)
    _touch(con, source, at, nbytes, counter)
    return info


def whole_rows(con: sqlite3.Connection, st: StoredEvent, info: SourceInfo,
               res: ParseResult, bodies: list[str | bytes | None] | None = None) -> None:
    """The rows of one parsed whole-content event."""
    unknown: dict[str, int] = {}
    batch = batch_for(con)
    n = _apply_results(con, st, info, [res], unknown, None if bodies is None else [bodies],
                       batch)
    flush(con, batch)
    con.execute("UPDATE sources SET records = records + ? WHERE source = ?", (n, info.source))
    _count_unknown(con, info.source, unknown)


APPLIERS: dict[str, Applier] = {
    "source.seen": _seen,
    "source.rewound": _rewound,
    "chunk.captured": _chunk,
    "file.snapshotted": _snapshot,
    "row.snapshotted": _row,
}
