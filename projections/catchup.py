"""Incremental catch-up of history.db from its checkpoint to the log head.

Promises:
- each batch of events is applied in one IMMEDIATE transaction together with the new
  checkpoint (last seq and its chain hash), so a crash between batches resumes exactly
  after `last_seq`, and two processes catching up at once never apply an event twice;
- catch-up in any batch sizes gives the same rows as a rebuild (tests hold them equal);
- a search never waits for a batch (issue 29): the live file is in WAL mode
  (projections/db.py), so readers read the last commit while a batch writes. Batches
  stay bounded for a plain file from before generations (rollback journal, where a reader
  waits for a commit) and for the capturing process itself: a batch ends once it changed
  about `TXN_JOURNAL_BYTES` of such a file's existing pages (their original content, in
  its rollback journal) or applied `TXN_BYTES` of stored events, looked at after every
  piece of at most `PIECE` events and `PIECE_BYTES`; the writer's page cache
  (`db.WRITER_CACHE_KIB`) holds every page a batch changes, so none spills before the
  commit; the commit waits for a rollback file's readers with `db.commit` (every 0.5 ms,
  not SQLite's busy schedule); between two pieces it lets this process's searches in
  flight go first (`inflight.give_way`: a capturing server's tool calls share its
  interpreter lock);
- a batch's statement journals stay in memory (`STATEMENT_JOURNAL`): every row goes
  through triggers, so SQLite keeps the original of each page a statement changes until
  the statement ends (about 100 KiB a row here), and past its 64 KiB spill a file in
  /var/tmp took it: a 200 KB session wrote 35 MB there (issue 32). The WAL (or a plain
  file's rollback journal), the one the crash-safety promise rests on, is unchanged;
- a batch's new documents are full-text indexed by one statement before its commit
  (`fts_defer.defer_fts`/`index_deferred`): one new FTS5 segment per batch, not one per row;
- the documents are folded into the champion lists (`projections.rank`, a cache of the
  full-text index) inside a batch's transaction: the catch-up's last batch (so a +1
  session costs one commit, its journal and directory syncs, not two) and one every
  `FOLD_BYTES` before it; the fold runs under a savepoint: if it fails, it alone is rolled
  back, the batch commits and the error is raised after the commit (the next fold takes
  those documents too, the lists are behind the watermark, never wrong);
- a batch is at most `BATCH` events and `BATCH_BYTES` of stored event bytes, decoded
  one event at a time, and the log's mapped pages are released as the reads go on, also
  across many small catch-ups of one process (`EventLog.read_raw`), so memory stays
  bounded whatever the size of the log;
- a missing file, a schema or parser version change, or a log that no longer holds the
  checkpoint's hash (replaced or truncated), or a forget event after the checkpoint (the
  file holds what was forgotten: `EventLog.forget_head`) leads to a full `rebuild`; so does a
  backlog that is most of the log and at least `FAST_PATH_BYTES` (a bulk load with the
  indexes built afterwards is ~2.5x faster per document than batches through triggers);
- when nothing is new, the cost is one SQLite read and one LMDB read (a fast no-op);
- every record is checked against its chain hash before it is applied: a damaged record
  stops the catch-up with `CorruptRecord` (the batch holding it is not applied);
- a batch, and each step of `make_lists`, begins only on the file the path names now
  (`db.swapped`): after a rebuild's swap the connection is reopened before it takes a lock
  (on a plain file from before generations, a lock on the swapped-out file would take the
  new file's journal for a hot one: issue 31), and a batch that took the write lock just
  as a swap finished rolls back and reopens (a removed WAL file still takes writes).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from projections import db, fts_defer, inflight
from projections.errors import ProjectionBusy, busy, disk_full
from projections.results import BuildResult, Checkpoint

if TYPE_CHECKING:  # the search path calls `status` only: the rest loads when there is work
    from eventlog import EventLog
    from projections.rebuild import Progress

BATCH = 1000
BATCH_BYTES = 16 << 20  # stored event bytes per transaction at most (large chunks)
# A batch holds the file's exclusive lock only while it commits, and the commit syncs the
# journal, writes the changed pages and syncs them while every search waits, for a time
# that grows with the pages changed: a new document's id lands on a random leaf of the id
# index (a 16 KiB page each), the full-text merges rewrite segments. On the bench home
# (bench/burst.py --base-mb 100) 512 KiB of journal (~30 pages; ~60 new documents) made
# commits of 10-30 ms; 1 MiB 15-40 ms; the whole burst (4.9 MB) in one, no spill, 114 ms.
TXN_BYTES = 1 << 20
TXN_JOURNAL_BYTES = 512 << 10
PIECE = 8
PIECE_BYTES = 64 << 10
# The fold costs 30-50 ms however few documents it takes (bench/burst.py), so it rides in
# the last batch and in one every FOLD_BYTES, not in each; meanwhile the lists score what is
# not folded yet from its text (champions' `wm`), so every answer is the same.
FOLD_BYTES = 4 << 20
FAST_PATH_BYTES = 64 << 20  # a backlog this large (and larger than the rest) is rebuilt
# temp_store of a catch-up's connection: a statement journal (and the fold's savepoint) in
# memory, decided when each write transaction begins; it is truncated at each statement's
# end, so it holds at most the pages one statement (or the fold) changes, fewer than the
# writer's page cache (`db.WRITER_CACHE_KIB`) holds for the batch anyway
STATEMENT_JOURNAL = "MEMORY"


def status(db_path: Path, head_seq: int) -> str:
    """"current", "behind", "stale" (needs a rebuild) or "missing"."""
    if not db_path.exists():
        return "missing"
    try:
        con = db.connect(db_path, readonly=True)
    except sqlite3.Error:
        return "stale"
    try:
        cp = db.read_checkpoint(con)
    finally:
        con.close()
    if not db.is_current(cp):
        return "stale"
    assert cp is not None
    if cp.last_seq == head_seq:
        return "current"
    return "behind" if cp.last_seq < head_seq else "stale"


def applied_seq(db_path: Path) -> int:
    """The last seq history.db holds (0 when missing or unreadable)."""
    try:
        con = db.connect(db_path, readonly=True)
    except (sqlite3.Error, OSError):
        return 0
    try:
        cp = db.read_checkpoint(con)
    except sqlite3.Error:
        return 0
    finally:
        con.close()
    return cp.last_seq if cp is not None else 0


def catch_up(
    db_path: Path,
    log: EventLog,
    *,
    batch: int = BATCH,
    max_events: int | None = None,
    progress: Progress | None = None,
    count: bool = True,
) -> BuildResult:
    """Bring `db_path` up to the log head (or `max_events` further); rebuild when needed.

    Without `count` a catch-up does not count the documents (a scan of an index, which
    grows with the history; the +1 path does not report it): `documents` is then -1."""
    started = time.monotonic()
    head = log.head()
    for _attempt in range(4):
        if not db_path.exists():
            built = _rebuild_if_needed(db_path, log, progress)
            if built is not None:
                return built
            continue
        con = db.connect(db_path)
        try:
            cp = db.read_checkpoint(con)
            if not db.is_current(cp) or not _log_matches(log, cp, head.seq):
                con.close()
                built = _rebuild_if_needed(db_path, log, progress)
                if built is not None:
                    return built
                continue
            assert cp is not None
            if max_events is None and _backlog_is_most(log, cp.last_seq, head.seq):
                con.close()  # a rebuild loads in bulk: far faster than batches via triggers
                from projections.rebuild import rebuild

                return rebuild(db_path, log, progress=progress)
            try:
                done = _apply_batches(con, log, batch, max_events, progress, head.seq,
                                      fold=cp.engine == "fts5", path=db_path)
            except _Swapped:
                continue  # a rebuild swapped the file in between batches: reopen
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorcode", None) == db_moved_code():
                    continue  # the file was swapped under us by a rebuild: reopen
                if busy(exc):
                    raise ProjectionBusy(f"{db_path} is locked by another writer: {exc}") from exc
                raise
            last = db.read_checkpoint(con)
            docs = (int(con.execute("SELECT count(*) FROM documents").fetchone()[0])
                    if count else -1)
            return BuildResult(db_path, last.last_seq if last else 0, done, docs,
                               time.monotonic() - started, cp.engine, rebuilt=False)
        finally:
            con.close()
    from projections.rebuild import rebuild

    return rebuild(db_path, log, progress=progress)


def _fold(con: sqlite3.Connection) -> Exception | None:
    """Fold the batch's documents into the champion lists (projections.rank, a cache of
    documents_fts) inside the batch's transaction, under a savepoint: a few each time
    (~10 ms for a session), never a thousand at once, and no list is made here
    (`make_lists`). A failed fold is rolled back alone and returned (the caller commits
    the batch, then raises it)."""
    from projections import rank

    con.execute("SAVEPOINT rank_fold")
    try:
        rank.fold(con)
    except Exception as exc:
        con.execute("ROLLBACK TO rank_fold")
        con.execute("RELEASE rank_fold")
        return exc
    con.execute("RELEASE rank_fold")
    return None


def make_lists(db_path: Path, *, steps: int | None = None) -> int:
    """Make the champion lists still wanted (a rebuild makes only the most common words'
    lists; catch-up adopts words that became common), one short write transaction per
    step (`rank.step`: the wanted lists, then the cross columns of the hottest words' deep
    lists, then the deep lists' useless stale marks dropped, so capture keeps going): all of
    them (`agentlog reindex` after its swap), or at most `steps` steps (the capture loop,
    while idle). Returns the number of lists, cross columns and compactions made."""
    from projections import rank

    made = 0
    con = db.connect(db_path)
    try:
        while steps is None or steps > 0:
            if db.swapped(con, db_path):  # another rebuild swapped a new file in: go on there
                con.close()  # (a lock on the old one would take the new one's journal)
                con = db.connect(db_path)
            got = rank.step(con)
            if got is None:
                break
            made += got
            if steps is not None:
                steps -= 1
    finally:
        con.close()
    return made


def make_some_lists(db_path: Path) -> bool:
    """One step of `make_lists` for an idle capture loop; whether lists may still be
    wanted. A busy or locked file (another writer) is tried again later; a full disk or a
    missing file waits for the next catch-up (the lists are a cache)."""
    if not db_path.exists():
        return False
    try:
        return make_lists(db_path, steps=1) > 0
    except sqlite3.OperationalError as exc:
        if disk_full(exc):
            return False
        if busy(exc):
            return True
        raise


def _backlog_is_most(log: EventLog, last_seq: int, head_seq: int) -> bool:
    """More new events than applied ones, and (estimated from the log's size) at least
    `FAST_PATH_BYTES` of them: a rebuild (bulk load, indexes after) then beats catching up,
    and gives the same rows."""
    behind = head_seq - last_seq
    if behind <= last_seq or head_seq <= 0:
        return False
    return log.size_bytes() * behind // head_seq >= FAST_PATH_BYTES


def _rebuild_if_needed(
    db_path: Path, log: EventLog, progress: Progress | None
) -> BuildResult | None:
    """Rebuild unless another process made the file usable while we waited for the lock."""
    from projections.rebuild import build_lock, rebuild

    with build_lock(db_path):
        head = log.head()
        if status(db_path, head.seq) in ("current", "behind") and _matches(db_path, log, head.seq):
            return None
    return rebuild(db_path, log, progress=progress)


def _matches(db_path: Path, log: EventLog, head_seq: int) -> bool:
    con = db.connect(db_path, readonly=True)
    try:
        return _log_matches(log, db.read_checkpoint(con), head_seq)
    finally:
        con.close()


def db_moved_code() -> int:
    return int(getattr(sqlite3, "SQLITE_READONLY_DBMOVED", 1032))


def _log_matches(log: EventLog, cp: Checkpoint | None, head_seq: int) -> bool:
    if cp is None or cp.last_seq > head_seq:
        return False
    if cp.last_seq == 0:
        return True
    if log.forget_head() > cp.last_seq:
        return False  # built before a forget: it still holds what was forgotten
    got = log.read_raw(cp.last_seq, 1)
    if not got or got[0].seq != cp.last_seq:
        return False
    from eventlog import codec

    _, h, _ = codec.unpack_value(got[0].value)
    return h.hex() == cp.last_hash


class _Swapped(Exception):
    """The path names another file than the connection's: a rebuild swapped it."""


def _apply_batches(
    con: sqlite3.Connection,
    log: EventLog,
    batch: int,
    max_events: int | None,
    progress: Progress | None,
    head_seq: int,
    *,
    fold: bool = False,
    path: Path | None = None,
) -> int:
    from eventlog import chain
    from eventlog.records import ChainCheck
    from projections.apply import appliers, apply_records

    table = appliers()
    con.execute(f"PRAGMA temp_store = {STATEMENT_JOURNAL}")
    done = 0
    failure: Exception | None = None  # of a fold: raised once every batch is in
    journal = Path(f"{path}-journal") if path is not None else None
    unfolded = 0  # stored bytes applied since the last fold
    while max_events is None or done < max_events:
        size = batch if max_events is None else min(batch, max_events - done)
        if path is not None and db.swapped(con, path):
            raise _Swapped(path)
        con.execute("BEGIN IMMEDIATE")
        if path is not None and db.swapped(con, path):  # swapped while we took the lock
            con.execute("ROLLBACK")  # (a WAL file takes writes after its removal)
            raise _Swapped(path)
        try:
            cp = db.read_checkpoint(con)  # re-read: another process may have advanced it
            assert cp is not None
            check = ChainCheck(bytes.fromhex(cp.last_hash) if cp.last_seq else chain.GENESIS,
                               cp.last_seq + 1)
            fts_defer.defer_fts(con)  # the batch's new rows: one full-text segment, not one per row
            n = stored = 0
            last_seq, last_hash = cp.last_seq, cp.last_hash
            while n < size:  # a piece at a time, until the transaction's bound (see TXN_*)
                records = log.read_raw(last_seq + 1, min(PIECE, size - n),
                                       max_bytes=PIECE_BYTES)
                if not records:
                    break
                check.all(records)  # CorruptRecord: nothing of this transaction applied
                n += len(records)
                stored += sum(len(r.value) for r in records)
                last_seq, last_hash = apply_records(con, records, table)
                inflight.give_way()  # this process's searches first (a capturing server)
                if (stored >= min(TXN_BYTES, BATCH_BYTES)
                        or _journaled(journal) >= TXN_JOURNAL_BYTES):
                    break
            if not n:
                fts_defer.undefer_fts(con)
                con.execute("ROLLBACK")
                break
            fts_defer.index_deferred(con)
            db.write_checkpoint(con, last_seq, last_hash)
            unfolded += stored
            last = last_seq >= head_seq or (max_events is not None and done + n >= max_events)
            failed = None
            if fold and (last or unfolded >= FOLD_BYTES):
                failed, unfolded = _fold(con), 0
            db.commit(con)
        except BaseException:
            fts_defer.undefer_fts(con)
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        if failed is not None:  # the batch is in; the lists catch up at the next catch-up
            fold, failure = False, failure or failed
        done += n
        if progress is not None:
            progress(last_seq, head_seq)
        if last_seq >= head_seq and max_events is None:
            break  # at the head this catch-up was asked for: no empty transaction to find it
    if failure is not None:
        raise failure
    return done


def _journaled(journal: Path | None) -> int:
    """Bytes in the rollback journal: the original content of every page of the file the
    open transaction changed so far (SQLite writes a page there when it first changes it)."""
    if journal is None:
        return 0
    try:
        return journal.stat().st_size
    except OSError:
        return 0
