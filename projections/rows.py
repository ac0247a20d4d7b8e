"""The rows of `documents`: the named row type, the one insert/update path, shared helpers.

Below every applier (`projections.apply` for broker events, `projections.transcripts`,
`projections.runlogs`, `projections.archive`): they all import from here and nothing here
imports them, so every import arrow runs one way. The query side imports only the
constants (`RUN_CHUNK_ORD`), so the search path never loads the apply machinery.
Promises: a row is a `Row` (a named tuple whose fields are the columns, in the table's
order; a column not given is NULL); `put_row` (a `Row`) and `put_document` (a mapping of
column names) write one row by `id` with the policies documented below (into
`document_rows`; readers use the `documents` view); `text` is bounded to `MAX_DOC_CHARS`
and stored as `body` by `projections.body.pack`, in this one place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from projections.body import pack, pack_many, unpack
from projections.row import NULL as NULL  # the row type and its NULL: projections/row.py
from projections.row import Row as Row
from readers import registry

if TYPE_CHECKING:
    from eventlog.records import StoredEvent

Applier = Callable[[sqlite3.Connection, "StoredEvent"], None]

MAX_DOC_CHARS = 100_000
ORD_SPAN = 65_536
RUN_CHUNK_ORD = 2  # run conversations: metadata event 0, metadata file 1, log chunks 2 + offset
MESSAGE_KINDS = ("message", "approval", "progress", "report")
AGENTS = registry.search_agents()  # readers/registry.py, then "other"

# `Row(v0, ..., v22)` without the named tuple's Python `__new__` (a call of 23 arguments:
# ~2,500 instructions of the ~97 k a rebuild spends on a transcript row): the values in
# `COLUMNS` order, for the one hot maker (`transcript_rows.make_row`, held to the keyword
# form by tests/test_rows_type.py)
new_row = tuple.__new__
COLUMNS: tuple[str, ...] = Row._fields
# The stored form of a row (`_stored_of`): the columns in order, `session` replaced by the
# number of the row's (conversation, session) pair in `threads` (`thread_id`) and
# `conversation` left out, `source` as its `doc_sources` id, `text` as its body
_SESSION, _CONV = COLUMNS.index("session"), COLUMNS.index("conversation")
_STORED_AT = tuple(i for i in range(len(COLUMNS)) if i != _CONV)  # (places in COLUMNS)
_STORED = tuple({"source": "source_id", "text": "body", "session": "thread"}.get(c, c)
                for c in (COLUMNS[i] for i in _STORED_AT))
_INSERT = (
    "INSERT OR IGNORE INTO "
    f"document_rows({', '.join(_STORED)}) VALUES ({', '.join('?' * len(_STORED))})"
)
# A rebuild's load inserts an event's rows by statements of this many rows each (one step of
# SQLite for all of them: CPython's executemany pays a reset, its bindings cleared and the GIL
# dropped and taken again for every row), the rest one by one (`_insert_all`). 32 rows: 736
# parameters, under the 999 of SQLite builds before 3.32
_MULTI = {k: _INSERT + "".join(f", ({', '.join('?' * len(_STORED))})" for _ in range(k - 1))
          for k in (32, 8)}
# The columns the rows of one run of an event's records share (one source, one event, one
# agent, session and subagent: `transcript_rows`): in a `_MULTI` statement whose rows the caller
# says share them (`put_rows`' `runs`), they are bound once for all of its rows (numbered
# parameters ?1..?15, each used in every row), then each row's own 8 (`_SHARED_SQL`). A bound
# value costs CPython and SQLite ~400 instructions (a text is copied, the connection's mutex
# taken); 15 of 23 a row are saved (docs/history/performance-journal.md, session 24).
_SHARED = tuple(i for i, c in enumerate(COLUMNS) if c in (
    "kind", "agent", "session", "job", "run", "message", "conversation", "subagent",
    "subagent_name", "title", "archived", "seq", "source", "sender", "extra"))
_OWN = tuple(i for i in range(len(COLUMNS)) if i not in _SHARED)
assert _OWN == (0, 3, 4, 9, 11, 12, 18, 22)  # `_insert_all` spells them out (no call a row)
_SHARED_STORED = tuple(i for i in _SHARED if i != _CONV)  # session's place: the thread
_shared_of = itemgetter(*_SHARED_STORED)


def _shared_values(k: int) -> str:
    """The VALUES of a `k`-row INSERT binding the shared columns once (?1..)."""
    own = len(_SHARED_STORED) + 1  # each row's own values follow, in `_OWN` order
    return ", ".join("(" + ", ".join(
        f"?{_SHARED_STORED.index(i) + 1}" if i in _SHARED_STORED
        else f"?{own + r * len(_OWN) + _OWN.index(i)}" for i in _STORED_AT) + ")"
        for r in range(k))


_SHARED_SQL = {k: _INSERT.split(" VALUES ")[0] + " VALUES " + _shared_values(k) for k in _MULTI}
_KEEP_ON_UPDATE = ("id", "ord", "archived")
_UPDATE_IDX = [i for i, c in enumerate(_STORED) if c not in _KEEP_ON_UPDATE]
_UPDATE = (
    "UPDATE document_rows SET "
    f"{', '.join(_STORED[i] + ' = ?' for i in _UPDATE_IDX)} WHERE rowid = ?"
)
_SOURCE = COLUMNS.index("source")
_SOURCE_STORED = _STORED.index("source_id")
_ARCHIVED_STORED = _STORED.index("archived")


def agent_family(name: object) -> str:
    """A registered agent name (readers/registry.py) or "other", from an agent or client
    name ("claude-code" -> "claude"); memoized (asked once per record of a rebuild)."""
    if isinstance(name, str):
        fam = _FAMILIES.get(name)
        if fam is None:
            fam = registry.family(name)
            if len(_FAMILIES) < 1024:
                _FAMILIES[name] = fam
        return fam
    return registry.family(name)


_FAMILIES: dict[str, str] = {}


def put_document(
    con: sqlite3.Connection, doc: Mapping[str, Any], *, policy: str = "replace"
) -> bool:
    """Insert or update one document from a mapping of column names (a key that is no
    column is left out, a column left out is NULL); returns True when a row was written.
    `policy` as `put_row`'s; `archived` is set only when `doc` gives it. Its text's and its
    title's secrets are redacted first (`projections.secrets.redact_document`): the door of
    every writer but the two that redact before (transcripts, messages: `put_row`).
    Other modules (archive, import) use this to write documents.
    """
    from projections.secrets import redact_document  # secrets out (docs/secrets.md)

    doc = redact_document(con, doc)
    values: dict[str, Any] = {c: doc.get(c) for c in COLUMNS}
    values["archived"] = int(values["archived"] or 0)
    return put_row(con, Row(**values), policy=policy, set_archived="archived" in doc) > 0


def bounded(text: object) -> str:
    """The text a row keeps: a str of at most MAX_DOC_CHARS characters."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    return text[:MAX_DOC_CHARS] if len(text) > MAX_DOC_CHARS else text


def stored(text: object) -> tuple[str, str | bytes]:
    """(the text a row keeps, its stored body)."""
    kept = bounded(text)
    return kept, pack(kept)


def stored_bodies(texts: list[str]) -> list[str | bytes]:
    """`[stored(t)[1] for t in texts]`, the bodies compressed in one call."""
    return pack_many([bounded(t) for t in texts])


# A row's stored form, the values `_INSERT` binds: the row with its thread's number for
# `session`, no `conversation`, its source's `doc_sources` id for `source` and its body for
# `text` (slices and small tuples: `_stored_of`)
Stored = tuple[Any, ...]
assert COLUMNS[_SOURCE:] == ("source", "sender", "extra", "text")
assert (_SESSION, _CONV) == (5, 10)  # `_stored_of` and `_insert_all` spell out the slices


def _stored_of(row: Row, tid: int, sid: int | None, body: str | bytes) -> Stored:
    return (row[:5] + (tid,) + row[6:10]  # noqa: RUF005 (fewer instructions)
            + row[11:_SOURCE] + (sid, row[-3], row[-2], body))


def put_row(
    con: sqlite3.Connection, row: Row, *, policy: str = "replace",
    set_archived: bool = False, body: str | bytes | None = None,
) -> int:
    """Insert or update one row by `id`; returns the rowid written, 0 when nothing was (the
    caller's side rows need no lookup).

    `policy`: "replace" overwrites an existing row (its rowid and `ord` are kept, so its
    place in its conversation is stable, and so is its `archived` flag unless
    `set_archived`); "keep" leaves an existing row alone; "same_source" replaces only a row
    that came from the same source. `text` is bounded to MAX_DOC_CHARS. `body`:
    `stored(row.text)[1]`, when the caller has it already (the parallel rebuild's parse
    process packs the bodies)."""
    if body is None:
        text, body = stored(row[-1])
    else:
        text = bounded(row[-1])
    memo = getattr(con, "text_memo", None)
    if memo is not None and isinstance(body, bytes):
        memo[0], memo[1] = body, text  # the triggers' doc_text(new.body): no decompression
    values = _stored_of(row, thread_id(con, row[_CONV], row[_SESSION]),
                        source_id(con, row[_SOURCE]), body)
    feed = getattr(con, "bulk_fts", None)  # a rebuild's load: projections/fts_bulk.py
    cur = con.execute(_INSERT, values)
    if cur.rowcount == 1:  # a new id (the common case: one statement)
        rowid: int = cur.lastrowid or 0
        if feed is not None:
            feed.put(rowid, text)
        return rowid
    return _over(con, values, text, policy, set_archived, feed)


_EXISTING = "SELECT rowid, source_id, body FROM document_rows WHERE id = ?"


def _over(con: sqlite3.Connection, values: Stored, text: str, policy: str,
          set_archived: bool, feed: Any) -> int:
    """`put_row` of a row (stored form) whose id is already written: by `policy`."""
    existing = con.execute(_EXISTING, (values[0],)).fetchone()
    if policy == "keep" or (policy == "same_source" and existing[1] != values[_SOURCE_STORED]):
        return 0
    con.execute(_UPDATE, [*(values[i] for i in _UPDATE_IDX), existing[0]])
    if feed is not None:
        feed.put(int(existing[0]), text, unpack(existing[2]))
    if set_archived:
        con.execute("UPDATE document_rows SET archived = ? WHERE rowid = ?",
                    (values[_ARCHIVED_STORED], existing[0]))
    return int(existing[0])


def put_rows(con: sqlite3.Connection, rows: list[Row],
             bodies: list[str | bytes | None], *, policy: str,
             runs: list[object] | None = None) -> None:
    """`put_row(con, row, policy=policy, body=body)` for each row in order: the same rows,
    rowids and full-text feed. In a rebuild's load (a full-text feed, no triggers) the rows
    go in together (`_insert_all`); a row whose id was already written (by an earlier row, in
    this call or before) is then put over it in its turn, as `put_row` would have.
    `runs[i]`: a token of row i's run, the same object for consecutive rows that have the
    same values in every `_SHARED` column (their source the same source name), a new
    object for every other run; a token appears in one run only (rows k apart holding
    the same token share those values with every row between)."""
    feed = getattr(con, "bulk_fts", None)
    if feed is None or len(rows) < 2:
        for row, body in zip(rows, bodies, strict=True):
            put_row(con, row, policy=policy, body=body)
        return
    texts: list[str] = []
    packed: list[str | bytes] = []
    sids: list[int | None] = []
    tids: list[int] = []
    source: object = None
    sid: int | None = None
    pair: tuple[object, object] = (None, None)
    tid = 0
    for row, body in zip(rows, bodies, strict=True):
        text = row[-1]
        if body is None:
            text, body = stored(text)
        elif type(text) is not str or len(text) > MAX_DOC_CHARS:
            text = bounded(text)
        texts.append(text)
        packed.append(body)
        if row[_SOURCE] != source:
            source = row[_SOURCE]
            sid = source_id(con, source)
        sids.append(sid)
        conv, session = row[_CONV], row[_SESSION]
        if (conv is not pair[0] and conv != pair[0]) or (
                session is not pair[1] and session != pair[1]):  # `is`: NULL, a NaN
            pair = (conv, session)
            tid = thread_id(con, conv, session)
        tids.append(tid)
    n = _insert_all(con, rows, packed, sids, tids, runs)
    # the n new rows took consecutive rowids (each max + 1), the last one last_insert_rowid
    first = int(con.execute("SELECT last_insert_rowid()").fetchone()[0]) - n + 1
    if n == len(rows):  # every id new (the common case)
        feed.put_new(first, texts)
        return
    if n == 0:
        first = 1 << 63  # none is new: every row is put over the one written before
    new: set[str] = set()
    for row, text, body, sid, tid in zip(rows, texts, packed, sids, tids, strict=True):
        found = con.execute(_EXISTING, (row[0],)).fetchone()
        if found[0] >= first and row[0] not in new:
            new.add(row[0])  # written by this call (a later row of the id is put over it)
            feed.put(int(found[0]), text)
        else:
            _over(con, _stored_of(row, tid, sid, body), text, policy, False, feed)


_SHARED_SOURCE = _SHARED_STORED.index(_SOURCE)
_SHARED_THREAD = _SHARED_STORED.index(_SESSION)


def _insert_all(con: sqlite3.Connection, rows: list[Row], bodies: list[str | bytes],
                sids: list[int | None], tids: list[int],
                runs: list[object] | None = None) -> int:
    """`executemany(_INSERT, stored forms of rows)` (in order; the same rows and rowids): by
    `_MULTI` statements of k rows, then the rest one by one; returns how many rows were new.
    `runs` (see `put_rows`): k rows from one run go in by `_SHARED_SQL[k]`, binding the
    rows' own values only (no stored form made)."""
    n = i = 0
    total = len(rows)
    for k, sql in _MULTI.items():
        while total - i >= k:
            if runs is not None and runs[i] is runs[i + k - 1]:  # one run: the same _SHARED
                params = list(_shared_of(rows[i]))
                params[_SHARED_SOURCE] = sids[i]
                params[_SHARED_THREAD] = tids[i]
                for j in range(i, i + k):
                    r = rows[j]
                    params += (r[0], r[3], r[4], r[9], r[11], r[12], r[18], bodies[j])
                n += con.execute(_SHARED_SQL[k], params).rowcount
            else:
                params = []
                for j in range(i, i + k):
                    r = rows[j]
                    params += r[:5]
                    params.append(tids[j])
                    params += r[6:10]
                    params += r[11:_SOURCE]
                    params += (sids[j], r[-3], r[-2], bodies[j])
                n += con.execute(sql, params).rowcount
            i += k
    if i < total:
        n += con.executemany(_INSERT, [_stored_of(rows[j], tids[j], sids[j], bodies[j])
                                       for j in range(i, total)]).rowcount
    return n


def need_index(con: sqlite3.Connection, name: str) -> None:
    """Make sure index `name` of `document_rows` exists before a lookup by its columns: a
    rebuild's bulk load makes its indexes after the load, or here on the first lookup that
    needs one (`projections.indexes.INDEX_SQL`); every other file has them all."""
    deferred: dict[str, str] | None = getattr(con, "deferred_indexes", None)
    if deferred:
        sql = deferred.pop(name, None)
        if sql is not None:
            con.execute(sql)


def source_id(con: sqlite3.Connection, source: object) -> int | None:
    """The `doc_sources` id of a source id string (added on first use; None for NULL).

    Memoised on a `projections.db.Connection`: an id is only ever added inside a write
    transaction, and every writer closes its connection when a transaction rolls back.
    """
    if source is None or source != source:  # NULL: None or `NULL` (a NaN)
        return None
    name = str(source)
    memo: dict[str, int] | None = getattr(con, "source_ids", None)
    if memo is not None:
        known = memo.get(name)
        if known is not None:
            return known
    con.execute("INSERT OR IGNORE INTO doc_sources(source) VALUES (?)", (name,))
    sid = int(con.execute("SELECT id FROM doc_sources WHERE source = ?", (name,)).fetchone()[0])
    if memo is not None:
        memo[name] = sid
    return sid


def thread_id(con: sqlite3.Connection, conversation: object, session: object) -> int:
    """The `threads` number of a (conversation, session) pair (added on first use; 0 for
    (NULL, NULL)). Memoised on a `projections.db.Connection`, as `source_id`."""
    if conversation != conversation:  # `NULL` (a NaN)
        conversation = None
    if session != session:
        session = None
    if conversation is None and session is None:
        return 0
    key = (conversation, session)
    memo: dict[tuple[object, object], int] | None = getattr(con, "thread_ids", None)
    if memo is not None:
        known = memo.get(key)
        if known is not None:
            return known
    row = con.execute("SELECT thread FROM threads WHERE conversation IS ? AND session IS ?",
                      key).fetchone()
    if row is None:
        tid = int(con.execute("INSERT INTO threads(conversation, session) VALUES (?, ?)",
                              key).lastrowid or 0)
    else:
        tid = int(row[0])
    if memo is not None:
        memo[key] = tid
    return tid


# The threads of a session (`?`: its id), for a condition on `document_rows.thread`
SESSION_THREADS = "SELECT thread FROM threads WHERE session = ?"


def run_log_session(con: sqlite3.Connection, run: str, session: object) -> None:
    """The log chunks of run `run` (a basename; conversation "run:<run>") that have no
    session take `session` (None: nothing changes)."""
    if session is None or session != session:
        return
    old = thread_id(con, f"run:{run}", None)
    new = thread_id(con, f"run:{run}", session)
    con.execute("UPDATE document_rows SET thread = ? WHERE thread = ? AND run = ?"
                " AND kind = 'run' AND role = 'log'", (new, old, run))


def run_basename(run: str) -> str:
    base = run.rstrip("/").rsplit("/", 1)[-1]
    return base if base.endswith(".log") else base + ".log"
