"""history.db: schema, engine probe, connections and the checkpoint.

Promises:
- every table here is derived from the event log; `checkpoint` (last applied seq and hash,
  schema version, parser version, engine) is written in the same transaction as the rows
  it covers, so a crash never leaves rows without their checkpoint or the reverse;
- the engine is probed once, when the file is created: "fts5" when this SQLite can create an
  FTS5 table, else "plain" (ordinary tables only; the plain engine answers queries);
- the live file is a generation (`history.db.g<token>`, a name never used twice) in WAL mode,
  and `history.db` a symbolic link to it (`rebuild` publishes a new generation by replacing
  the link, projections/rebuild.py); every connection opens the generation the link names
  when it opens (`live_file`), so its `-wal` and `-shm` are that generation's alone and a
  reader never waits for a writer's commit. A file from before generations (a plain
  `history.db`, rollback journal) is read and written as it is until the next rebuild;
- documents are written to the `document_rows` table (only through `projections.rows`,
  plus in-place updates of metadata columns) and read through the `documents` view, whose
  `text` is the stored body decoded (`doc_text`, projections/body.py); the text is stored
  once: both FTS5 indexes are contentless, fed by triggers from the body.
Columns other modules depend on (documents.*, aliases.*) are only ever added to.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from projections import fileid, heap
from projections.body import unpack
from projections.errors import ProjectionBusy, ProjectionDamaged, busy, disk_full
from projections.fts_bulk import BulkFeed, beside, cjk_grams, has_cjk
from projections.indexes import INDEX_SQL as _INDEX_SQL
from projections.indexes import LOAD_INDEXES as _LOAD_INDEXES
from projections.indexes import SCRIPT as _QUERY_INDEXES
from projections.rank import schema as rank_tables
from projections.results import Checkpoint
from projections.text import fold

if TYPE_CHECKING:
    from projections.cancel import Cancel

# 4: run log chunks dated by the run start (file name, late metadata)
# 5: a session imported into a second project is its own conversation
# 8: recipients side table; contentless CJK side index; partial run/job indexes
# 9: text stored once, compressed (document_rows.body, the `documents` view); contentless FTS
# 10: full-text triggers guarded by fts_live(rowid), so catch-up indexes a batch in one go
# 11: transcript rows of records without a time of their own marked (extra = UNDATED)
# 12: a row's conversation and session kept once per pair, in `threads` (`document_rows.thread`)
SCHEMA_VERSION = 12
BULK_HASHSIZE = 16 * 1024 * 1024  # FTS5 term hash in a rebuild: bounds its peak RSS (a cold
# capture runs it beside the capture and the parse process: their summed RSS is the goal)
DEFAULT_HASHSIZE = 1024 * 1024
BULK_CACHE_KIB = 8 * 1024  # page cache of the rebuild's full-text scratch file
# The page cache of a connection that writes the live file (catch-up, the champion lists'
# steps, archive writers): larger than any transaction of theirs changes (catch-up commits
# every ~1 MiB, projections/catchup.py), so no changed page spills into the file before the
# commit. A spill takes the exclusive lock, and every search then waits until the commit
# (seconds: a 23 MB burst held it 8.7 s with SQLite's default 2 MiB). Only pages read or
# changed take memory; the connection is closed after its work.
WRITER_CACHE_KIB = 32 * 1024
# What a WAL file keeps of its `-wal` after a checkpoint that reset it (SQLite keeps its
# high-water mark otherwise: a burst's tens of MB for as long as a server has it open; the
# last connection to close removes the file in any case)
WAL_KEEP_BYTES = 4 << 20

# sqlite3 binds int/float/str/bytearray directly; any other parameter (None, bytes: ~10 of a
# row's 24) goes through its adapter registry, which formats and drops an AttributeError for
# an unregistered type. Identity adapters bind the same (NULL, BLOB) for a dict lookup: 5.7 %
# of a rebuild's building-process instructions (docs/history/performance-journal.md, session 20).
_NONE: dict[None, None] = {}
sqlite3.register_adapter(type(None), _NONE.get)
sqlite3.register_adapter(bytes, bytes)

# The columns of the `documents` view (what every reader sees): the stored row, with `source`
# and `text` decoded. `documents_indexed_by` gives the same rows through a forced index.
# `session` and `conversation` are the row's thread's (`threads`: a row keeps the thread's
# number, ~2 bytes, where the two strings took ~80 and their indexes as much again); a query
# by either goes through `threads`' own indexes, then `documents_conv` (thread, at, ord).
_VIEW_COLUMNS = (
    "r.rowid AS rowid, id, kind, agent, at, project, t.session AS session, job, run, message,"
    " cursor, t.conversation AS conversation, role, tool, subagent, subagent_name, title,"
    " archived, seq, ord,"
    " (SELECT s.source FROM doc_sources s WHERE s.id = r.source_id) AS source, sender, extra,"
    " CASE WHEN typeof(body) = 'text' THEN body ELSE doc_text(body) END AS text"
)
_VIEW_ROWS = "document_rows r{by} JOIN threads t ON t.thread = r.thread"
ROWS_AND_THREADS = _VIEW_ROWS.format(by="")  # `r` the stored rows, `t` their threads

_DOCUMENTS = """
CREATE TABLE document_rows(
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  agent TEXT NOT NULL,
  at INTEGER NOT NULL,
  project TEXT,
  thread INTEGER NOT NULL DEFAULT 0,  -- threads.thread: the row's conversation and session
  job TEXT, run TEXT, message TEXT, cursor TEXT,
  role TEXT, tool TEXT, subagent TEXT, subagent_name TEXT, title TEXT,
  archived INTEGER NOT NULL DEFAULT 0,
  seq INTEGER,
  ord INTEGER,
  source_id INTEGER,  -- doc_sources.id: a source id is ~100 bytes, shared by many rows
  sender TEXT,
  extra TEXT,
  body NOT NULL  -- the text, stored once (projections/body.py); last: other columns never
                 -- walk a long body's pages
);
CREATE VIEW documents AS SELECT {view} FROM {rows};
CREATE TABLE doc_sources(id INTEGER PRIMARY KEY, source TEXT NOT NULL UNIQUE);
-- (conversation, session) pairs, each once (`projections.rows.thread_id`); thread 0 is
-- (NULL, NULL), the default of a row written without either
CREATE TABLE threads(thread INTEGER PRIMARY KEY, conversation TEXT, session TEXT);
CREATE INDEX threads_conv ON threads(conversation, session);
CREATE INDEX threads_session ON threads(session);
INSERT INTO threads(thread) VALUES (0);
CREATE TABLE aliases(
  alias TEXT NOT NULL, session TEXT NOT NULL, agent TEXT NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY(alias, session)
);
CREATE INDEX aliases_session ON aliases(session);
CREATE TABLE recipients(  -- who a message was addressed to (`--session bob` finds them)
  alias TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(alias, doc)
) WITHOUT ROWID;
CREATE INDEX recipients_doc ON recipients(doc);
CREATE TRIGGER documents_recipients_ad AFTER DELETE ON document_rows BEGIN
  DELETE FROM recipients WHERE doc = old.rowid;
END;
CREATE TABLE sessions(
  agent TEXT NOT NULL, session TEXT NOT NULL, title TEXT, project TEXT,
  PRIMARY KEY(agent, session)
);
CREATE TABLE sources(
  source TEXT PRIMARY KEY, agent TEXT NOT NULL, root TEXT NOT NULL, path TEXT NOT NULL,
  layout TEXT NOT NULL, seen_at INTEGER NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0,
  next_offset INTEGER NOT NULL DEFAULT 0,
  partial BLOB NOT NULL DEFAULT x'',
  skipping INTEGER NOT NULL DEFAULT 0,
  files INTEGER NOT NULL DEFAULT 1,
  bytes_captured INTEGER NOT NULL DEFAULT 0,
  chunks INTEGER NOT NULL DEFAULT 0,
  snapshots INTEGER NOT NULL DEFAULT 0,
  rows INTEGER NOT NULL DEFAULT 0,
  lines INTEGER NOT NULL DEFAULT 0,
  records INTEGER NOT NULL DEFAULT 0,
  unknown INTEGER NOT NULL DEFAULT 0,
  oversized INTEGER NOT NULL DEFAULT 0,
  gaps INTEGER NOT NULL DEFAULT 0,
  unparsed INTEGER NOT NULL DEFAULT 0,
  last_capture_at INTEGER
);
CREATE TABLE unknown_types(
  source TEXT NOT NULL, type TEXT NOT NULL, count INTEGER NOT NULL,
  PRIMARY KEY(source, type)
);
CREATE TABLE runs(
  run TEXT PRIMARY KEY, job TEXT NOT NULL, session TEXT, agent TEXT, started_at INTEGER NOT NULL
);
CREATE INDEX runs_session ON runs(session);
CREATE TABLE subagents(
  agent TEXT NOT NULL, session TEXT NOT NULL, subagent TEXT NOT NULL, name TEXT NOT NULL,
  PRIMARY KEY(agent, session, subagent)
);
CREATE TABLE parser_state(scope TEXT PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE opaque_events(tag TEXT PRIMARY KEY, count INTEGER NOT NULL);
CREATE TABLE secrets(  -- what redaction found (projections/secrets.py; never a value)
  doc TEXT NOT NULL, kind TEXT NOT NULL, agent TEXT, session TEXT, at INTEGER,
  count INTEGER NOT NULL, PRIMARY KEY(doc, kind)
) WITHOUT ROWID;
CREATE TABLE checkpoint(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_seq INTEGER NOT NULL, last_hash TEXT NOT NULL,
  schema_version INTEGER NOT NULL, parser_version TEXT NOT NULL, engine TEXT NOT NULL
);
""".replace("{view}", _VIEW_COLUMNS).replace("{rows}", ROWS_AND_THREADS)


def documents_indexed_by(index: str) -> str:
    """A FROM-clause term with the `documents` view's rows, read through `index` (a view
    takes no INDEXED BY; SQLite flattens this subquery and keeps the forced index)."""
    if not index.isidentifier():
        raise ValueError(f"not an index name: {index!r}")
    return f"(SELECT {_VIEW_COLUMNS} FROM {_VIEW_ROWS.format(by=' INDEXED BY ' + index)})"


# Both full-text indexes are contentless: the text is stored once, in `document_rows.body`.
# The triggers keep them in step with every later write; a row is removed with FTS5's
# 'delete' command and the values it was indexed with (the function of its old body).
# `*_terms` (fts5vocab, no storage): per term, documents and occurrences — what the drift
# check compares, since 'integrity-check' cannot compare a contentless index with its text.
_FTS_INDEXES = """
CREATE VIRTUAL TABLE documents_fts USING fts5(
  text, content='', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE documents_cjk USING fts5(grams, content='', tokenize='unicode61');
"""
_FTS_TABLES = _FTS_INDEXES + """
CREATE VIRTUAL TABLE documents_fts_terms USING fts5vocab(documents_fts, row);
CREATE VIRTUAL TABLE documents_cjk_terms USING fts5vocab(documents_cjk, row);
"""

# `fts_live(rowid)` is 1 except for rows a catch-up batch is deferring (`defer_fts`): those
# are indexed by one INSERT … SELECT before the batch commits (`index_deferred`). Why: in an
# explicit transaction every statement that fires a trigger opens a statement savepoint, and
# FTS5 (SQLite 3.40) flushes its pending terms to a new segment at each savepoint, so
# indexing row by row wrote one segment per document and merged them constantly.
_FTS_TRIGGERS = """
CREATE TRIGGER documents_ai AFTER INSERT ON document_rows WHEN fts_live(new.rowid) BEGIN
  INSERT INTO documents_fts(rowid, text) VALUES (new.rowid, doc_text(new.body));
END;
CREATE TRIGGER documents_ad AFTER DELETE ON document_rows WHEN fts_live(old.rowid) BEGIN
  INSERT INTO documents_fts(documents_fts, rowid, text)
    VALUES ('delete', old.rowid, doc_text(old.body));
END;
CREATE TRIGGER documents_au AFTER UPDATE OF body ON document_rows WHEN fts_live(old.rowid) BEGIN
  INSERT INTO documents_fts(documents_fts, rowid, text)
    VALUES ('delete', old.rowid, doc_text(old.body));
  INSERT INTO documents_fts(rowid, text) VALUES (new.rowid, doc_text(new.body));
END;
CREATE TRIGGER documents_cjk_ai AFTER INSERT ON document_rows
    WHEN fts_live(new.rowid) AND has_cjk(new.body) BEGIN
  INSERT INTO documents_cjk(rowid, grams) VALUES (new.rowid, cjk_grams(new.body));
END;
CREATE TRIGGER documents_cjk_ad AFTER DELETE ON document_rows
    WHEN fts_live(old.rowid) AND has_cjk(old.body) BEGIN
  INSERT INTO documents_cjk(documents_cjk, rowid, grams)
    VALUES ('delete', old.rowid, cjk_grams(old.body));
END;
CREATE TRIGGER documents_cjk_au AFTER UPDATE OF body ON document_rows
    WHEN fts_live(old.rowid) BEGIN
  INSERT INTO documents_cjk(documents_cjk, rowid, grams)
    SELECT 'delete', old.rowid, cjk_grams(old.body) WHERE has_cjk(old.body);
  INSERT INTO documents_cjk(rowid, grams)
    SELECT new.rowid, cjk_grams(new.body) WHERE has_cjk(new.body);
END;
"""

# The full-text rows of documents with rowids in a range (a deferred catch-up batch)
FTS_FILL = (
    "INSERT INTO documents_fts(rowid, text) SELECT rowid, doc_text(body) FROM document_rows"
    " WHERE rowid > ? AND rowid <= ?",
    "INSERT INTO documents_cjk(rowid, grams) SELECT rowid, cjk_grams(body) FROM document_rows"
    " WHERE rowid > ? AND rowid <= ? AND has_cjk(body)",
)


_parser: list[ModuleType] = []


def parser_module() -> ModuleType:
    """`readers.parse`, imported on first use (the search path never needs it)."""
    if not _parser:
        _parser.append(importlib.import_module("readers.parse"))
    return _parser[0]


def parser_version() -> str:
    """The version of what turns events into rows: `readers.version.PARSER_VERSION` and the
    redaction's (`projections.redact.version()`: its detectors and config.json's rules), so
    a change of either makes the file stale (catch-up rebuilds it, the team projector
    replays)."""
    from projections import redact
    from readers.version import PARSER_VERSION

    return f"{PARSER_VERSION}+redact.{redact.version()}"


def fts5_available() -> bool:
    try:
        con = sqlite3.connect(":memory:")
        try:
            con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')")
        finally:
            con.close()
        return True
    except sqlite3.Error:
        return False


class Connection(sqlite3.Connection):
    """A connection that can carry per-connection memos for the appliers."""

    alias_cache: dict[str, str]
    ord_next: list[int]
    source_ids: dict[str, int]
    thread_ids: dict[tuple[Any, Any], int]
    text_memo: list[Any]
    fts_after: list[int]  # [-1]: index every write now; [n]: rows above n wait (defer_fts)
    bulk_fts: BulkFeed | None  # a bulk load's full-text feed (projections/fts_bulk.py)
    deferred_indexes: dict[str, str]  # a bulk load's indexes not made yet: name -> SQL
    ident: fileid.FileId | None  # the file `connect` opened (projections/fileid.py)
    cancel: Cancel | None  # the read's stop button while one watches it (projections/cancel.py)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.alias_cache = {}
        self.ord_next = [0, 0]
        self.source_ids = {}
        self.thread_ids = {}
        self.text_memo = [None, None]
        self.fts_after = [-1]
        self.bulk_fts = None
        self.deferred_indexes = {}
        self.ident = None
        self.cancel = None

    def open_reader(self, path: Path) -> sqlite3.Connection:
        """Another read-only connection, to `path`, that fails at once rather than wait for
        a lock (a ranking thread's own: projections.rank.split); stopped with this one's read
        when a `Cancel` watches it."""
        con = connect(path, readonly=True, timeout=0.0)
        if self.cancel is not None:
            self.cancel.adopt(con)
        return con


def live_file(path: Path) -> Path:
    """The file `path` names now: the generation its link points to (or `path` itself: a
    plain file from before generations, a rebuild's private file, or none yet)."""
    return Path(os.path.realpath(path))


def connect(path: Path, *, readonly: bool = False, timeout: float = 10.0) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) to the file `path` names
    now (`live_file`); its journal mode is the file's (WAL for a published generation).

    `readonly` connections refuse writes (`query_only`) but are opened read-write without
    creating the file: a writer killed mid-transaction leaves a hot journal (or WAL) that only
    a read-write connection can recover, and SQLite does that on the first read. A writer
    creates the file only when `path` names nothing at all (a rebuild's private file): a
    generation a rebuild removed between the link's reading and the open is never made
    again empty; the link is read again instead.
    """
    for _attempt in range(3):
        before = fileid.file_id(path)
        real = live_file(path)
        try:
            con = _open(real, create=not readonly and not os.path.lexists(path),
                        timeout=timeout)
        except sqlite3.OperationalError:
            if live_file(path) == real:  # not a generation swapped out meanwhile
                raise
            continue
        break
    else:
        raise ProjectionBusy(f"{path} was swapped three times while opening it")
    try:
        _first_read(con, path, readonly=readonly, timeout=timeout)
    except sqlite3.OperationalError as exc:
        if not (readonly and disk_full(exc) and not _wal_frames(real)):
            raise
        # a full disk: no room for the WAL's shared-memory file, and no writer alive (no
        # WAL frames): the file as it stands, read without locks (a writer could not write)
        con = _open(real, create=False, timeout=timeout, immutable=True)
        _first_read(con, path, readonly=True, timeout=timeout)
    if isinstance(con, Connection):  # None unless it named the same file before and after
        con.ident = before if before == fileid.file_id(path) else None
    return con


def _first_read(con: sqlite3.Connection, path: Path, *, readonly: bool,
                timeout: float) -> None:
    """The connection's settings and functions, and the first statement that reads the
    file's header (a damaged file raises `ProjectionDamaged`; the connection is closed on
    any error)."""
    try:
        if readonly:
            con.execute("PRAGMA query_only = 1")
        con.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        register_functions(con)
        con.execute("PRAGMA schema_version" if readonly else "PRAGMA synchronous = NORMAL")
        if not readonly:
            con.execute(f"PRAGMA cache_size = {-WRITER_CACHE_KIB}")
            con.execute(f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}")
    except sqlite3.DatabaseError as exc:
        con.close()
        if getattr(exc, "sqlite_errorcode", None) not in _DAMAGED:
            raise
        raise ProjectionDamaged(f"{path} is damaged ({exc})") from exc


def _wal_frames(real: Path) -> bool:
    try:
        return os.stat(f"{real}-wal").st_size > 0
    except OSError:
        return False


def _open(real: Path, *, create: bool, timeout: float,
          immutable: bool = False) -> sqlite3.Connection:
    """`real` opened read-write, created when missing if `create`; else never created (and
    read-only when this user may not write it, or `immutable`: read as it stands)."""
    if create:
        return sqlite3.connect(str(real), timeout=timeout, isolation_level=None,
                               check_same_thread=False, factory=Connection)
    uri = "file:" + str(real).replace("?", "%3f").replace("#", "%23")
    if immutable:
        return sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, timeout=timeout,
                               isolation_level=None, check_same_thread=False,
                               factory=Connection)
    uri += "?mode=rw"
    try:
        return sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None,
                               check_same_thread=False, factory=Connection)
    except sqlite3.OperationalError:  # no write permission (or gone): a plain read-only open
        return sqlite3.connect(uri[: -len("rw")] + "ro", uri=True, timeout=timeout,
                               isolation_level=None, check_same_thread=False,
                               factory=Connection)


_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)

# How often a reader (`until_readable`) or a committing writer (`commit`) looks at the lock
# again while the other holds it. SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25,
# 25, 25, 50, 50, 100 ms between tries: a search that met a 35 ms commit woke after 53 ms.
POLL_S = 0.0005


def until_readable(con: sqlite3.Connection, timeout: float = 10.0) -> None:
    """Wait while a writer commits to a plain file from before generations (holds its
    PENDING or EXCLUSIVE lock; a WAL file never makes a reader wait), looking
    every `POLL_S`, so a read starts within a fraction of a millisecond of the commit's end.
    Returns at once when the file is readable, and after `timeout` in any case (the read
    itself then waits with the connection's busy timeout, or fails as busy)."""
    (ms,) = con.execute("PRAGMA busy_timeout").fetchone()
    con.execute("PRAGMA busy_timeout = 0")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:  # a read takes and drops the SHARED lock (autocommit)
                con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                return
            except sqlite3.OperationalError as exc:
                if not busy(exc) or time.monotonic() >= deadline:
                    return
            time.sleep(POLL_S)
    finally:
        con.execute(f"PRAGMA busy_timeout = {int(ms)}")


def commit(con: sqlite3.Connection, timeout: float = 10.0) -> None:
    """COMMIT, retried every `POLL_S` while readers hold the SHARED lock (the PENDING lock
    the first try took keeps new readers out meanwhile, and SQLite keeps the transaction
    open after a busy COMMIT), so the commit starts as soon as the last reader is done
    rather than on SQLite's busy-handler schedule, while every new search waits."""
    (ms,) = con.execute("PRAGMA busy_timeout").fetchone()
    con.execute("PRAGMA busy_timeout = 0")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                con.execute("COMMIT")
                return
            except sqlite3.OperationalError as exc:
                if not busy(exc) or time.monotonic() >= deadline or not con.in_transaction:
                    raise
            time.sleep(POLL_S)
    finally:
        con.execute(f"PRAGMA busy_timeout = {int(ms)}")


def swapped(con: sqlite3.Connection, path: Path) -> bool:
    """Whether `path` no longer names the file `con` opened (a rebuild swapped a new one in).

    A writer on such a connection must reopen: its writes would go to a removed file (a WAL
    file takes them), and on a plain file from before generations it must not even take a
    lock again: SQLite finds a rollback journal by path but locks by inode, so a journal of
    a writer of the new file looked hot to it (issue 31: it played that journal into the
    old file and deleted it, and the new file's writer failed its commit with
    SQLITE_IOERR_DELETE_NOENT, "disk I/O error"). Generations never share a name, so that
    can no longer happen to a file a rebuild published.
    A connection whose file was not known (`ident` None) counts as swapped.
    """
    ident = getattr(con, "ident", None)
    return ident is None or fileid.file_id(path) != ident


def register_functions(con: sqlite3.Connection) -> None:
    """SQL functions the `documents` view, the triggers and the plain engine call.

    `doc_text(body)` is the only decoder of a stored body (projections/body.py); `has_cjk`
    and `cjk_grams` take a body too (the CJK side index's triggers). Each connection gets
    its own functions, each remembering its last argument: one row's body is decoded and
    folded once however many tokens, triggers or columns ask for it. `fts_live(rowid)` says
    whether the full-text triggers index that row now (see `defer_fts`).
    """
    text_of = _last(unpack, getattr(con, "text_memo", None))
    con.create_function("doc_text", 1, text_of, deterministic=True)
    con.create_function("has_cjk", 1, lambda body: _has_cjk(text_of(body)), deterministic=True)
    con.create_function("cjk_grams", 1, lambda body: _cjk_grams(text_of(body)),
                        deterministic=True)
    con.create_function("fold", 1, _last(_fold), deterministic=True)
    after = getattr(con, "fts_after", None)
    if after is None:  # a plain sqlite3 connection: always live
        after = [-1]
    con.create_function("fts_live", 1, lambda rowid: 1 if after[0] < 0 or rowid <= after[0]
                        else 0)


def _last(fn: Callable[[object], Any], memo: list[Any] | None = None) -> Callable[[object], Any]:
    """`fn` remembering its last call (SQLite runs one statement step at a time per
    connection, and a row's value is asked for again and again within a step). `memo` is
    [argument, result]; `projections.rows.put_row` seeds a `Connection`'s `text_memo` with
    the body it writes, so the triggers that index it do not decompress it again."""
    if memo is None:
        memo = [None, None]

    def call(arg: object) -> Any:
        if arg is not None and type(arg) is type(memo[0]) and arg == memo[0]:
            return memo[1]
        out = fn(arg)
        memo[0], memo[1] = arg, out
        return out

    return call


_has_cjk, _cjk_grams = has_cjk, cjk_grams  # projections/fts_bulk.py: one definition


def _fold(text: object) -> str:
    return fold(text) if isinstance(text, str) else ""


def create_schema(
    con: sqlite3.Connection, *, engine: str | None = None, bulk: bool = False,
    fts_mode: str = "inline",
) -> str:
    """Create every table in an empty database; returns the engine chosen.

    With `bulk`, the query-only indexes and the FTS triggers are left for `finish_bulk`
    (a rebuild loads the rows first, then indexes them in one pass); `fts_mode` says where
    the full-text indexes are built meanwhile ("inline" or "process": fts_bulk.BulkFeed).
    """
    if engine is None:
        engine = "fts5" if fts5_available() else "plain"
    con.executescript(_DOCUMENTS)
    if bulk and isinstance(con, Connection):
        for name in _LOAD_INDEXES:
            con.execute(_INDEX_SQL[name])
        con.deferred_indexes = {name: sql for name, sql in _INDEX_SQL.items()
                                if name not in _LOAD_INDEXES}  # rows.need_index: on demand
    else:
        con.executescript(_QUERY_INDEXES)
    if engine == "fts5":
        con.executescript(_FTS_TABLES)
        con.executescript(rank_tables.SCHEMA)
        if not bulk:
            con.executescript(_FTS_TRIGGERS)
            con.executescript(rank_tables.TRIGGERS)
            con.execute("INSERT INTO rank_meta(id, wm, avgdl) VALUES (1, 0, 1.0)")
        else:
            if not isinstance(con, Connection):
                raise TypeError("a bulk load needs a projections.db connection")
            # A larger in-memory term hash while loading: far fewer segments to write and
            # merge than the default 1 MiB. 32 MiB, not 256: at 256 the hash alone took
            # ~160 MiB of a 1 GB home's rebuild (bench/memory.py).
            path = Path(con.execute("PRAGMA database_list").fetchone()[2])
            pragmas = [f"PRAGMA {name} = {con.execute(f'PRAGMA {name}').fetchone()[0]}"
                       for name in ("page_size", "auto_vacuum")]
            con.bulk_fts = BulkFeed(path, _FTS_INDEXES, [
                *pragmas, "PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF",
                f"PRAGMA cache_size = {-BULK_CACHE_KIB}", "PRAGMA temp_store = FILE"],
                BULK_HASHSIZE, DEFAULT_HASHSIZE, fts_mode)
    con.execute(
        "INSERT INTO checkpoint(id, last_seq, last_hash, schema_version, parser_version, engine)"
        " VALUES (1, 0, '', ?, ?, ?)",
        (SCHEMA_VERSION, parser_version(), engine),
    )
    return engine


def abandon_bulk(con: sqlite3.Connection) -> None:
    """A bulk load that will not finish: stop its full-text thread, drop its scratch file."""
    feed = None
    if isinstance(con, Connection):
        feed, con.bulk_fts = con.bulk_fts, None
    if feed is not None:
        feed.close()


def finish_bulk(con: sqlite3.Connection, engine: str, lists: int = 0) -> bool:
    """After a bulk load (committed): the full-text indexes (built beside the load from the
    text in hand, projections/fts_bulk.py), query indexes, then triggers; with `lists` > 0,
    also the champion lists (ranked on that many threads) when they can be made beside the
    sort (projections/bulk_tail.py). Returns whether the lists were made.

    The load's page cache is handed back to the OS before the sort starts
    (`projections.heap`); the full-text indexer's closing merge runs beside the sort, so
    their working sets stay small together. When the indexer runs in this thread
    (fts_bulk "inline"), the sort runs on a thread of its own meanwhile: each side is one
    long SQLite statement at a time, which holds no GIL, so the two share the two cores
    instead of taking turns on one."""
    feed = None
    if isinstance(con, Connection):
        feed, con.bulk_fts = con.bulk_fts, None
        con.deferred_indexes = {}  # the script below makes every one still missing
    made = False
    try:
        heap.trim()  # the load's page cache
        if feed is not None and feed.inline and engine == "fts5" and lists > 0:
            from projections import bulk_tail  # a rebuild's, not every writer's

            bulk_tail.finish(con, feed, _QUERY_INDEXES, lists)
            made = True
        elif feed is not None and feed.inline:
            beside(lambda: con.executescript(_QUERY_INDEXES), feed.end, "query-indexes")
        else:
            if feed is not None:
                feed.end()  # its last rows; the indexer merges them while the indexes sort
            con.executescript(_QUERY_INDEXES)
        if feed is not None:
            feed.finish()  # both full-text indexes copied in (if not yet), the scratch gone
    except BaseException:
        if feed is not None:
            feed.close()
        raise
    heap.trim()  # the sorter's buffers, the term hash
    if engine == "fts5":
        con.executescript(_FTS_TRIGGERS)
        con.executescript(rank_tables.TRIGGERS)
    return made


def read_checkpoint(con: sqlite3.Connection) -> Checkpoint | None:
    try:
        row = con.execute(
            "SELECT last_seq, last_hash, schema_version, parser_version, engine"
            " FROM checkpoint WHERE id = 1"
        ).fetchone()
    except sqlite3.DatabaseError:
        return None
    if row is None:
        return None
    return Checkpoint(int(row[0]), str(row[1]), int(row[2]), str(row[3]), str(row[4]))


def write_checkpoint(con: sqlite3.Connection, seq: int, hash_hex: str) -> None:
    con.execute("UPDATE checkpoint SET last_seq = ?, last_hash = ? WHERE id = 1", (seq, hash_hex))


def is_current(cp: Checkpoint | None) -> bool:
    """True when the file's schema and parser version match this code."""
    return (
        cp is not None
        and cp.schema_version == SCHEMA_VERSION
        and cp.parser_version == parser_version()
    )


def has_fts(con: sqlite3.Connection) -> bool:
    row = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'documents_fts'"
    ).fetchone()
    return row is not None
