"""A rebuild's load binds the columns an event's rows share once per multi-row statement
(`rows._SHARED_SQL`, for k rows of one run: `put_rows`' `runs`): the same rows, rowids and
full-text feed as one `put_row` each, and as the statements binding every column, wherever
runs start and end and ids repeat; and `transcripts._apply_results` makes one run only of
records whose rows are the same in every shared column (a record's own job, subagent name
or title starts a run of its own), checked against a catch-up that writes row by row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog.events import FileSnapshotted
from eventlog.records import StoredEvent
from projections import db, fts_bulk, transcripts
from projections.rows import (
    _MULTI,
    _SHARED,
    _SHARED_SQL,
    _SHARED_STORED,
    _STORED,
    _STORED_AT,
    NULL,
    Row,
)
from readers.records import ParseResult, Record, SourceInfo
from tests.conftest import examples
from tests.test_rows_multi import load_rows

COLUMNS = ("id", "kind", "agent", "at", "project", "session", "job", "run", "message",
           "cursor", "conversation", "role", "tool", "subagent", "subagent_name", "title",
           "archived", "seq", "ord", "source", "sender", "extra", "text")
SHARED = [COLUMNS[i] for i in _SHARED]
_POOLS = {"agent": ["claude", "codex"], "session": [NULL, "s1", "s2"],
          "job": [NULL, "j"], "subagent": [NULL, "a1"], "subagent_name": [NULL, "helper"],
          "title": [NULL, "a title", "another"], "conversation": ["claude:s1", "source:x"],
          "source": ["claude:/a.jsonl", "codex:/b.jsonl"], "seq": [3, 4]}

# a run: (its shared values as indexes into _POOLS, its rows as (id key, words))
_runs = st.lists(st.tuples(
    st.fixed_dictionaries({c: st.integers(0, len(p) - 1) for c, p in _POOLS.items()}),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 30)), min_size=1, max_size=40)),
    min_size=1, max_size=6)


def _rows(runs: list[tuple[dict[str, int], list[tuple[int, int]]]]
          ) -> tuple[list[Row], list[object]]:
    """Rows and their run tokens, one object per run."""
    rows: list[Row] = []
    tokens: list[object] = []
    for shared, members in runs:
        token = object()
        for key, words in members:
            n = len(rows)
            values = {c: _POOLS[c][i] for c, i in shared.items()}
            values.update({"id": f"transcript:x-{key}", "kind": "transcript", "at": 1000 + n,
                           "cursor": f"0:{n}", "role": "user", "archived": 0,
                           "ord": (n << 16) + words, "project": NULL if n % 3 else "p",
                           "text": f"text {key} row {n} " + "word " * words})
            rows.append(Row(*(values.get(c, NULL) for c in COLUMNS)))
            tokens.append(token)
    return rows, tokens


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(calls=st.lists(_runs, min_size=1, max_size=3))
def test_shared_statements_write_what_one_put_row_each_writes(
        tmp_path_factory: pytest.TempPathFactory, calls: list[list[tuple[dict[str, int],
                                                                        list[tuple[int, int]]]]]
) -> None:
    fts_bulk.FLUSH_CHARS, flush = 1 << 30, fts_bulk.FLUSH_CHARS  # every text stays pending
    try:
        tmp = tmp_path_factory.mktemp("shared")
        got = load_rows(tmp / "shared.db", [_rows(c) for c in calls], "shared")
        assert got == load_rows(tmp / "one.db", [_rows(c) for c in calls], "one")
        assert got == load_rows(tmp / "every.db", [_rows(c) for c in calls], "every")
    finally:
        fts_bulk.FLUSH_CHARS = flush


def test_the_shared_statements_bind_each_shared_column_once() -> None:
    for k, sql in _SHARED_SQL.items():
        head, values = sql.split(" VALUES ")
        assert head == _MULTI[k].split(" VALUES ")[0]
        used = [int(p) for p in re.findall(r"\?(\d+)", values)]
        n = len(_STORED)  # the stored columns: `session` is the thread's, no `conversation`
        assert len(used) == n * k
        own = n - len(_SHARED_STORED)
        assert sorted(set(used)) == list(range(1, len(_SHARED_STORED) + own * k + 1))
        assert max(used) <= 999  # the SQLite builds before 3.32
        rows = [used[r * n:(r + 1) * n] for r in range(k)]
        places = [_STORED_AT.index(i) for i in _SHARED_STORED]
        assert all([row[j] for j in places] == list(range(1, len(_SHARED_STORED) + 1))
                   for row in rows)
    assert SHARED == ["kind", "agent", "session", "job", "run", "message", "conversation",
                      "subagent", "subagent_name", "title", "archived", "seq", "source",
                      "sender", "extra"]
    assert [_STORED[_STORED_AT.index(i)] for i in _SHARED_STORED] == [
        "kind", "agent", "thread", "job", "run", "message", "subagent", "subagent_name",
        "title", "archived", "seq", "source_id", "sender", "extra"]


# -- runs as transcripts._apply_results makes them ---------------------------------------
_record = st.tuples(st.sampled_from(["claude", "codex"]), st.sampled_from([None, "s1", "s2"]),
                    st.sampled_from([None, "a1"]), st.sampled_from([None, "own job"]),
                    st.sampled_from([None, "own name"]), st.sampled_from([None, "own title"]),
                    st.integers(0, 80))


def _applied(path: Path, bulk: bool, records: list[Record]) -> list[tuple[object, ...]]:
    con = db.connect(path)
    db.create_schema(con, bulk=bulk)
    con.execute("BEGIN")
    con.execute("INSERT INTO sessions(agent, session, title) VALUES ('claude', 's1', 'known')")
    con.execute("INSERT INTO runs(run, job, session, started_at) VALUES ('r', 'known job',"
                " 's2', 1)")
    con.execute("INSERT INTO subagents(agent, session, subagent, name) VALUES"
                " ('claude', 's1', 'a1', 'known name')")
    transcripts.begin_batch(con)
    info = SourceInfo(source="claude:/a.jsonl", agent="claude", root="/", path="/a.jsonl",
                      layout="")
    st_ = StoredEvent(seq=7, at=5000, key=b"", hash=b"", size=1,
                      event=FileSnapshotted(source=info.source, blake3="", size=1, data=b""))
    transcripts.whole_head(con, st_, info.source, 5000, 1, "snapshots")
    transcripts.whole_rows(con, st_, info, ParseResult(records=records))
    transcripts.end_batch(con)
    stored = [tuple(r) for r in con.execute("SELECT rowid, * FROM document_rows ORDER BY rowid")]
    con.execute("COMMIT")
    if bulk:
        db.abandon_bulk(con)
    con.close()
    return stored


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(specs=st.lists(st.tuples(_record, st.integers(1, 20)), min_size=1, max_size=8))
def test_an_events_runs_give_the_rows_a_catch_up_writes(
        tmp_path_factory: pytest.TempPathFactory,
        specs: list[tuple[tuple[str, str | None, str | None, str | None, str | None,
                                str | None, int], int]]) -> None:
    records = []
    for (agent, session, subagent, job, name, title, words), count in specs:
        for _ in range(count):
            n = len(records)
            records.append(Record(uid=f"u{n % 50}", agent=agent, session=session, role="user",
                                  text=f"record {n} " + "word " * words, cursor=f"0:{n}",
                                  subagent=subagent, job=job, subagent_name=name,
                                  title=title))
    tmp = tmp_path_factory.mktemp("runs")
    assert _applied(tmp / "bulk.db", True, records) == _applied(tmp / "catchup.db", False,
                                                                records)
