"""Rebuild history.db from the log into a new file, then swap it in atomically.

Promises:
- the new file is built beside the live one (`history.db.reindex-<pid>`) from seq 1 with
  journal_mode=OFF, synchronous=OFF, in one transaction (its full-text indexes built during the
  load, from the text in hand, in `history.db.reindex-<pid>.fts` and copied in after it:
  projections/fts_bulk.py; its champion lists made from that index and the rows' weights in
  `.weights` beside the query-index sort: projections/bulk_tail.py; both side files removed
  on success and failure alike), then optimized (the pages the
  merge freed handed back: auto_vacuum=INCREMENTAL, incremental_vacuum), turned to WAL,
  fsynced and published as a new generation: renamed to `history.db.g<token>` (a name never
  used twice) and `history.db`, a symbolic link, replaced by one to it (`publish`); until
  then every reader (in any process) keeps answering from the old file, and a crash at any
  point leaves the old file serving (a generation the link does not name is removed by the
  next publish);
- the swap happens while holding the old file's write lock, so no writer is in the middle
  of a transaction on it; the old generation's files (and those of a plain `history.db`
  from before generations) are removed under that lock. Readers that opened the old file
  keep reading it (its inode, its own `-wal` and `-shm`, which no later file shares); a
  writer that opened it sees `db.swapped` once it holds the write lock, and reopens;
- one rebuild at a time per file (an advisory lock on `history.db.lock`);
- nothing but the log is read: agent files are never touched;
- every record is checked against its chain hash as it is read: a damaged log stops the
  build with `CorruptRecord` and the old file keeps serving (nothing is swapped in).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from eventlog import EventLog
from eventlog.files import fsync_file, replace_durably
from eventlog.records import ChainCheck
from projections import db, pages, stale
from projections.cpus import usable as _cpus
from projections.errors import ProjectionBusy, ProjectionDamaged
from projections.results import BuildResult

Progress = Callable[[int, int], None]
BATCH = 2000
BATCH_BYTES = 4 << 20  # stored event bytes per read (decoded one event at a time)
RELEASE_BYTES = 8 << 20  # after reading this much of the log, drop its mapped pages
# Memory (peak RSS <= 200 MB on a 1 GB home, bench/memory.py): the phases run one after the
# other and each returns its working set (projections.heap) before the next one starts.
LOAD_CACHE_KIB = 16 * 1024  # SQLite page cache while loading rows (32 MiB: same load CPU)
INDEX_CACHE_KIB = 16 * 1024  # ... while indexing after the load; also the sorter's buffers
TEMP_STORE = "FILE"  # the index sorter spills to temporary files beyond its buffers
THREADS = 2  # CREATE INDEX after the load sorts on 2 cores
LIST_THREADS = 2  # ... and the champion lists are ranked on 2 threads (rank.scan)
PAGE_SIZE = 16384
SMALL_PAGE_SIZE = 4096  # below LARGE_PAGES_BYTES of log: every table and index is at least a
LARGE_PAGES_BYTES = 32 << 20  # page, ~36 of them: 16 KiB pages add ~0.5 MB to a small file
PARALLEL_BYTES = 32 << 20  # from this size of log on, a build may parse in a second process
FTS_PROCESS_BYTES = 8 << 20  # ... a sequential build indexes full text in a child process
SAMPLE = 128  # records read at each end of the log to see what it holds ...
SAMPLE_BYTES = 1 << 20  # ... at most about this many stored bytes each


@contextlib.contextmanager
def build_lock(db_path: Path, timeout: float = 600.0) -> Iterator[None]:
    """The per-file rebuild lock (waits up to `timeout` seconds)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(db_path.parent / (db_path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ProjectionBusy(
                        f"another process is rebuilding {db_path} (waited {timeout:.0f} s)"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _clean_stale(db_path: Path) -> None:
    for tmp in [*db_path.parent.glob(db_path.name + ".reindex-*"),
                *db_path.parent.glob(db_path.name + ".link-*")]:
        pid = tmp.name.rsplit("-", 1)[-1].split(".")[0]
        if pid.isdigit() and _alive(int(pid)) and int(pid) != os.getpid():
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build(
    path: Path,
    log: EventLog,
    *,
    upto: int | None = None,
    progress: Progress | None = None,
    engine: str | None = None,
    parallel: bool | None = None,
    follow: bool = False,
    source: IO[bytes] | None = None,
) -> BuildResult:
    """Build a complete history.db at `path` (which must not exist) from the log.

    `parallel` reads and parses the log in a second process (`projections.pipeline`; same
    rows); None decides by the log's size and the number of CPUs (`use_parallel`).
    `follow` (parallel): the log is being written; read on until this process's stdin
    ends, then to the head of that moment (`projections.follow`). `source`: the frames of
    a parse process started beside this one (`pipeline.load`)."""
    started = time.monotonic()
    head = log.head().seq
    stop = head if upto is None else min(upto, head)
    con = db.connect(path)
    try:
        # 16 KiB pages (before anything is written): measured on a 445k-document load,
        # 21 % less insert CPU than 4 KiB and an 11 % smaller file (fewer overflow pages);
        # a small history keeps 4 KiB (bench/size.py: 56.8 % vs 64.6 % of a 5 MB corpus)
        large = follow or log.size_bytes() >= LARGE_PAGES_BYTES  # follow: the log grows
        con.execute(f"PRAGMA page_size = {PAGE_SIZE if large else SMALL_PAGE_SIZE}")
        # the closing 'optimize' frees the pages of the segments it merged (about the size
        # of the full-text index); incremental_vacuum below gives them back to the disk
        con.execute("PRAGMA auto_vacuum = INCREMENTAL")
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        con.execute(f"PRAGMA cache_size = {-LOAD_CACHE_KIB}")
        con.execute(f"PRAGMA temp_store = {TEMP_STORE}")
        con.execute(f"PRAGMA threads = {THREADS}")
        from projections.apply import appliers, apply_records

        if parallel is None:
            parallel = use_parallel(log, stop)
        chosen = db.create_schema(con, engine=engine, bulk=True,
                                  fts_mode=fts_mode(log, parallel or follow))
        table = appliers()
        con.execute("BEGIN")
        last_seq, last_hash, events, unreleased = 0, "", 0, 0
        seq = 1
        check = ChainCheck()  # a damaged record stops the build (CorruptRecord): no swap
        if parallel or follow:  # the same loop, with reading and parsing in a second process
            from projections import pipeline

            last_seq, last_hash, events = pipeline.load(
                con, log, stop, table, batch=BATCH, batch_bytes=BATCH_BYTES,
                progress=progress, follow=follow, source=source)
            seq = stop + 1
        while seq <= stop:
            batch = log.read_raw(seq, min(BATCH, stop - seq + 1), max_bytes=BATCH_BYTES)
            if not batch:
                break
            check.all(batch)
            events += len(batch)
            unreleased += sum(len(r.value) for r in batch)
            last_seq, last_hash = apply_records(con, batch, table)
            seq = last_seq + 1
            if unreleased >= RELEASE_BYTES:
                pages.release(log.path)
                unreleased = 0
            if progress is not None:
                progress(last_seq, stop)
        con.execute("COMMIT")
        # The file is private until the swap, so indexing after the load needs no atomicity.
        # The page cache is shrunk first and the freed heap trimmed (in finish_bulk): the
        # sorter's buffers and the full-text build's term hash then replace it in memory
        # instead of adding to it (peak RSS ~ the largest phase, not the sum).
        con.execute(f"PRAGMA cache_size = {-INDEX_CACHE_KIB}")
        # the champion lists are made beside the query-index sort when the full-text index
        # was built inline (projections/bulk_tail.py), else after it, ranked on both cores
        lists = min(LIST_THREADS, _cpus())
        made = db.finish_bulk(con, chosen, lists=lists)
        db.write_checkpoint(con, last_seq, last_hash)
        if chosen == "fts5":
            from projections import fts_levels

            for fts in ("documents_fts", "documents_cjk"):  # one segment, out of the
                con.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
                fts_levels.lift(con, fts)  # catch-ups' merges (issue 32)
            if not made:
                from projections import rank

                # champion lists of the most common words (the rest: `rank.step`)
                rank.build(con, workers=lists)
        con.executescript("PRAGMA incremental_vacuum;")  # execute() would free one page
        docs = int(con.execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        db.abandon_bulk(con)  # a load that failed: its full-text thread and scratch file
        con.close()
    fsync_file(path)
    return BuildResult(path, last_seq, events, docs, time.monotonic() - started, chosen)


def fts_mode(log: EventLog, parallel: bool) -> str:
    """Where the full-text indexes are built during the load (projections/fts_bulk.py):
    "process" for a sequential load of at least `FTS_PROCESS_BYTES` of log on two CPUs or
    more (the core it leaves idle indexes, with no GIL shared); else "inline" (a parallel
    build's parse process has the other core; a small log does not pay for a process)."""
    if parallel or _cpus() < 2 or log.size_bytes() < FTS_PROCESS_BYTES:
        return "inline"
    return "process"


def use_parallel(log: EventLog, stop: int) -> bool:
    """A second process pays for itself: at least `PARALLEL_BYTES` of log, two CPUs, and
    mostly captured content to parse (by stored bytes, sampled at both ends of the log):
    broker events are applied in the building process either way, so a log of them would
    only pay for the pipe."""
    if stop <= 0 or _cpus() < 2 or log.size_bytes() < PARALLEL_BYTES:
        return False
    from eventlog.events import tag_of
    from eventlog.records import decode_record
    from projections.pipeline import PARSED_TAGS

    sample = (log.read_raw(1, SAMPLE, max_bytes=SAMPLE_BYTES)
              + log.read_raw(max(1, stop - SAMPLE + 1), SAMPLE, max_bytes=SAMPLE_BYTES))
    parsed = total = 0
    for raw in sample:  # weighed by stored bytes: the parse work follows the bytes
        total += len(raw.value)
        try:
            if tag_of(decode_record(raw).event) in PARSED_TAGS:
                parsed += len(raw.value)
        except Exception:  # a damaged record: the build itself reports it
            continue
    return parsed * 2 >= total > 0


def rebuild(
    db_path: Path,
    log: EventLog,
    *,
    progress: Progress | None = None,
    engine: str | None = None,
    lock_timeout: float = 600.0,
    parallel: bool | None = None,
    follow: bool = False,
    source: IO[bytes] | None = None,
) -> BuildResult:
    """Rebuild `db_path` from seq 1 and swap it in (see the module promises).

    `engine` None keeps the engine the existing file chose (a new file probes); "fts5" or
    "plain" changes it explicitly.
    """
    with build_lock(db_path, lock_timeout):
        _clean_stale(db_path)
        if engine is None:
            engine = existing_engine(db_path)
        tmp = db_path.parent / f"{db_path.name}.reindex-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        try:
            result = build(tmp, log, progress=progress, engine=engine, parallel=parallel,
                           follow=follow, source=source)
            to_wal(tmp)
            swap(tmp, db_path)
            stale.clear_stale(db_path)  # a known drift is gone with the old file
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return BuildResult(db_path, result.last_seq, result.events, result.documents,
                           result.seconds, result.engine)


def to_wal(path: Path) -> None:
    """Turn a built file (journal off) to WAL, its lasting journal mode, and sync it."""
    con = db.connect(path)
    try:
        con.execute("PRAGMA journal_mode = WAL")
    finally:
        con.close()
    fsync_file(path)


def existing_engine(db_path: Path) -> str | None:
    """The engine recorded in `db_path`'s checkpoint; None when absent or unreadable."""
    if not db_path.exists():
        return None
    try:
        con = db.connect(db_path, readonly=True)
    except (sqlite3.Error, ProjectionDamaged):
        return None
    try:
        cp = db.read_checkpoint(con)
    except sqlite3.Error:
        cp = None
    finally:
        con.close()
    if cp is None or cp.engine not in ("fts5", "plain"):
        return None
    if cp.engine == "fts5" and not db.fts5_available():
        return None  # this SQLite cannot build it: probe again
    return cp.engine


def swap(new: Path, live: Path, timeout: float = 30.0) -> None:
    """Publish `new` as `live` while holding the old live file's write lock; its files (the
    generation, or a plain file's journal) are removed under that lock."""
    old: sqlite3.Connection | None = None
    if live.exists():
        try:
            old = db.connect(live, timeout=timeout)
            old.execute("BEGIN EXCLUSIVE")
        except sqlite3.DatabaseError:
            if old is not None:
                old.close()
            old = None  # not a usable database: nothing can be reading it consistently
    try:
        publish(new, live)
    finally:
        if old is not None:
            with contextlib.suppress(sqlite3.Error):
                old.execute("ROLLBACK")
            with contextlib.suppress(sqlite3.Error):
                old.close()  # its files are gone: a checkpoint on close writes to nothing


GENERATION = ".g"  # history.db.g<token>: a published file; its -wal and -shm beside it
PLAIN_SIDE_FILES = ("-wal", "-shm", "-journal")  # of a plain history.db from before them


def publish(new: Path, live: Path) -> Path:
    """Rename `new` to a fresh generation of `live`, point the link `live` at it (replaced
    atomically, the folder fsynced), then remove every other generation and the side files
    of a plain `live` from before generations. Returns the generation."""
    token = f"{time.time_ns():x}{os.getpid():x}"
    gen = live.parent / f"{live.name}{GENERATION}{token}"
    os.rename(new, gen)
    link = live.parent / f"{live.name}.link-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    os.symlink(gen.name, link)
    replace_durably(link, live)
    for stale_gen in live.parent.glob(f"{live.name}{GENERATION}*"):
        if not stale_gen.name.startswith(gen.name):
            with contextlib.suppress(OSError):
                stale_gen.unlink()
    for suffix in PLAIN_SIDE_FILES:
        with contextlib.suppress(OSError):
            (live.parent / (live.name + suffix)).unlink()
    return gen
