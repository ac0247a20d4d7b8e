"""A rebuild's load keeps no full secondary index of `document_rows` up until an applier
looks rows up by its columns (`rows.need_index`); then that one is made and kept up, and the
rest are made after the load. The rows are those of a catch-up, which has every index all along.

The log below makes every applier that looks documents up by a column do so mid-load (a
run, an alias, a subagent's name, an archived session, imported turns twice), with rewritten
and repeated records (the same uid again from its own source and from another one).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from eventlog import EventLog
from eventlog.events import Event, FileSnapshotted, SessionArchived, TurnsImported
from projections import db, rebuild
from projections.catchup import catch_up
from projections.drift import digests
from tests.archive_fixtures import turn
from tests.test_projections_support import (
    CLAUDE_SRC,
    append,
    chunks_of,
    claude_line,
    codex_lines,
    mixed_events,
    seen,
)

SECONDARY = {"documents_run", "documents_subagent", "documents_sender",
             "documents_at", "documents_conv", "documents_project", "documents_job"}


def _transcripts() -> list[Event]:
    src = "codex:r2:sessions/2026/11/02/rollout-cs2.jsonl"
    data = b"".join(codex_lines("cs2", [f"line {i} about the zebra" for i in range(30)]))
    claude = b"".join(claude_line(f"t{i}", "user", f"giraffe {i}", session="s5")
                      for i in range(20))
    return [seen(src, "codex", "codex.rollout"), *chunks_of(src, data, [700, 1400, 2100]),
            seen(CLAUDE_SRC, "claude", "claude.session"), *chunks_of(CLAUDE_SRC, claude, [900])]


def _lookups() -> list[Event]:
    """Transcripts first (rows to index mid-load), then every lookup, then more rows."""
    sid = "0b6e1c52-7a51-4c1e-9d43-2f1e8f0c5a11"  # a subagent's session: named by its path
    meta = f"claude:r1:projects/-proj/{sid}/subagents/agent-x1.meta.json"
    body = b'{"agentType": "Explore", "description": "reads the code"}'
    sub = f"claude:r1:projects/-proj/{sid}/subagents/agent-x1.jsonl"
    other = "claude:r1:projects/-proj/s7.jsonl"
    turns = [turn("s1", 0, 1_000, "user", "imported okapi"),
             turn("s1", 1, 2_000, "assistant", "imported reply", subagent="agent-1")]
    return [
        *_transcripts(),
        seen(sub, "claude", "claude.subagent"),
        *chunks_of(sub, claude_line("x1", "user", "subagent zebra", session=sid), [30]),
        seen(meta, "claude", "claude.subagent_meta"),
        FileSnapshotted(source=meta, blake3="m1", size=len(body), data=body, at=9),
        # the same uid again: from its own source (replaces) and from another (kept first)
        *chunks_of(CLAUDE_SRC, claude_line("t3", "user", "giraffe three, rewritten",
                                           session="s5"), [], start=10_000),
        seen(other, "claude", "claude.session"),
        *chunks_of(other, claude_line("t4", "user", "a copy of giraffe 4", session="s5"), []),
        # several rows of one event (one statement in a load) with ids written before it
        # and ids twice within it, from the same source (put over) and another one (kept)
        *chunks_of(CLAUDE_SRC, b"".join(claude_line(u, "user", t, session="s5") for u, t in [
            ("t5", "giraffe five, rewritten"), ("n1", "new one"), ("n1", "new one, again"),
            ("n2", "new two")]), [], start=20_000),
        *chunks_of(other, b"".join(claude_line(u, "user", t, session="s5") for u, t in [
            ("n3", "new three"), ("t6", "a copy of giraffe 6"), ("n2", "a copy of new two"),
            ("n3", "new three, again")]), [], start=1_000),
        *mixed_events(),  # an alias, a run with a session, a run log, a rewind
        SessionArchived(project="/proj", session="s1", path="a", sha256="0" * 64, turns=3,
                        newest_at=1_793_527_200_000, at=11),
        TurnsImported(project="/proj", session="s1", turns=turns, file_sha256="1" * 64, at=12),
        TurnsImported(project="/other", session="s1", turns=turns, file_sha256="2" * 64, at=13),
        *_transcripts()[4:],  # the Claude chunks again: all old (no rows)
    ]


def _indexes(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'document_rows'"
        " AND name NOT LIKE 'sqlite_autoindex%'")}


def _watch_load(monkeypatch: pytest.MonkeyPatch) -> list[tuple[set[str], list[str]]]:
    """Per bulk load: the indexes that exist when it ends, and the plans of its statements
    that read `document_rows` (asked when the load ends: the indexes then are those made
    during it, and none is ever dropped)."""
    seen_loads: list[tuple[set[str], list[str]]] = []
    statements: list[str] = []
    connect, finish = db.connect, db.finish_bulk

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        con = connect(*args, **kwargs)  # type: ignore[arg-type]
        con.set_trace_callback(statements.append)
        return con

    def finish_bulk(con: sqlite3.Connection, engine: str, **kwargs: object) -> object:
        con.set_trace_callback(None)
        plans = []
        for sql in statements:
            if ("document_rows" in sql or "FROM documents" in sql) and "WHERE" in sql \
                    and not sql.lstrip().startswith(("INSERT", "CREATE")):
                plan = " / ".join(r[3] for r in con.execute(f"EXPLAIN QUERY PLAN {sql}"))
                plans.append(f"{sql[:70]}: {plan}")
        seen_loads.append((_indexes(con), plans))
        statements.clear()
        return finish(con, engine, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(db, "connect", traced)
    monkeypatch.setattr(db, "finish_bulk", finish_bulk)
    return seen_loads


@pytest.mark.parametrize("parallel", [False, True])
def test_a_load_of_transcripts_alone_keeps_no_full_secondary_index_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> None:
    log = EventLog(tmp_path / "log")
    append(log, _transcripts())
    loads = _watch_load(monkeypatch)
    out = tmp_path / "h.db"
    rebuild.build(out, log, parallel=parallel)
    # none but the partial indexes of columns transcripts leave NULL (nothing to keep up)
    assert loads and loads[0][0] == {"documents_run", "documents_subagent", "documents_sender"}
    con = db.connect(out, readonly=True)
    try:
        assert _indexes(con) == SECONDARY  # all made after the load
        assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == 50
    finally:
        con.close()


def test_every_lookup_of_a_load_uses_an_index_and_the_rows_equal_catch_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = EventLog(tmp_path / "log")
    events = _lookups()
    append(log, events[:1])
    live = tmp_path / "live.db"
    catch_up(live, log)  # a new file: built (a bulk load of one event) ...
    append(log, events[1:], prefix="rest")
    catch_up(live, log, batch=4)  # ... then the rest row by row, every index up
    loads = _watch_load(monkeypatch)
    outs = [tmp_path / "seq.db", tmp_path / "par.db"]
    monkeypatch.setattr(rebuild, "BATCH", 5)
    rebuild.build(outs[0], log, parallel=False)
    rebuild.build(outs[1], log, parallel=True)
    for made, plans in loads:
        assert plans
        scans = [p for p in plans if "SCAN" in p]
        assert not scans, scans
        # the lookups made these during the load; the rest waited for its end
        assert made == {"documents_run", "documents_subagent",
                        "documents_sender", "documents_conv"}
    want = _digests(live)
    for out in outs:
        assert _digests(out) == want
    con = db.connect(live, readonly=True)
    try:  # the log did what it says: a named subagent, a replaced and a kept duplicate
        assert con.execute("SELECT subagent_name FROM documents WHERE id = ?",
                           ("transcript:claude:x1",)).fetchone()[0] == "Explore: reads the code"
        texts = dict(con.execute("SELECT substr(id, 19), text FROM documents"
                                 " WHERE id LIKE 'transcript:claude:%'"))
        assert {k: texts[k] for k in ("t3", "t4", "t5", "t6", "n1", "n2", "n3")} == {
            "t3": "giraffe three, rewritten", "t4": "giraffe 4", "t5": "giraffe five, rewritten",
            "t6": "giraffe 6", "n1": "new one, again", "n2": "new two",
            "n3": "new three, again"}
    finally:
        con.close()


def _digests(path: Path) -> dict[str, tuple[int, str]]:
    con = db.connect(path, readonly=True)
    try:
        return digests(con)
    finally:
        con.close()
