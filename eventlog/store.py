"""The LMDB event store: append-only, gapless, hash-chained, idempotent.

Promises (see docs/ARCHITECTURE.md, invariants 1-3):
- one LMDB environment per log directory per process (`open_log`; LMDB forbids opening one
  twice), created private (0600), durable sync, no writemap;
- one writer at a time across processes: `append` holds the advisory flock (`eventlog.lock`,
  waited for with a timeout) around the write transaction, which `eventlog.appender` owns
  (gapless seqs, MDB_APPEND, one transaction per batch with its capture state, idempotency
  keys counted as duplicates, the map doubling up to a cap);
- reads happen in short read transactions of bounded size and hand out copies; every
  `RELEASE_BYTES` read, and every `APPEND_RELEASE_BYTES` appended, by one EventLog, the log's
  mapped pages are released (so neither a scan nor a long capture keeps the log resident).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import lmdb

from eventlog import chain
from eventlog import records as rec
from eventlog.appender import Appender, head_in
from eventlog.errors import CorruptRecord, DamagedPage, EventLogError, LogMissing
from eventlog.events import Event
from eventlog.lock import WriterLock
from eventlog.records import AppendResult, Head, RawRecord, StoredEvent, decode_record

DEFAULT_MAP_SIZE = 1 << 30
DEFAULT_MAX_MAP_SIZE = 1 << 40
READ_BATCH = 1000
RELEASE_BYTES = 32 << 20  # reads drop the log's mapped pages after this many bytes
# appends drop them after this many bytes written: a commit touches more of the map than it
# writes (the key index, the trees' edges); at 32 MiB a cold capture kept 13-16 MiB resident
APPEND_RELEASE_BYTES = 1 << 20

_DBS = (b"events", b"keys", b"state", b"meta")
_registry: dict[str, EventLog] = {}
_registry_lock = threading.Lock()


# what LMDB says of a file whose pages it cannot trust (a flipped bit, a torn copy)
_PAGE_ERRORS = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.PanicError,
                lmdb.InvalidError)


@contextlib.contextmanager
def damage_named(seq: int = 0) -> Iterator[None]:
    """LMDB's page errors as `DamagedPage` naming the record being read (0: none)."""
    try:
        yield
    except _PAGE_ERRORS as exc:
        raise DamagedPage(seq, f"a damaged LMDB page ({exc})") from None


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class EventLog:
    """An open event log in `path` (a directory holding data.mdb and lock.mdb)."""

    def __init__(
        self,
        path: Path,
        *,
        readonly: bool = False,
        create: bool = True,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int = DEFAULT_MAX_MAP_SIZE,
        lock_timeout: float = 30.0,
        command: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.lock_timeout = lock_timeout
        self.command = command if command is not None else " ".join(sys.argv[:2])
        if not (self.path / "data.mdb").exists():
            if readonly or not create:
                raise LogMissing(f"no event log at {self.path}")
            self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        data_file = self.path / "data.mdb"
        existing = data_file.stat().st_size if data_file.exists() else 0
        self.env = lmdb.open(
            str(self.path),
            map_size=max(map_size, existing),
            max_dbs=len(_DBS) + 2,
            max_readers=1024,
            sync=True,
            metasync=True,
            writemap=False,
            readonly=readonly,
            max_spare_txns=0,
            create=not readonly,
            mode=0o600,  # data.mdb and lock.mdb: transcripts are private
        )
        self.env.reader_check()
        self._dbs: dict[bytes, Any] = {}
        if readonly:
            for name in _DBS:
                try:
                    self._dbs[name] = self.env.open_db(name, create=False)
                except lmdb.NotFoundError:
                    self._dbs[name] = None
        else:
            for name in _DBS:
                self._dbs[name] = self.env.open_db(name)
        self._appender = Appender(self.env, self._dbs, self.path, self.command, max_map_size)
        self._unreleased = 0  # bytes read since the mapped pages were last released
        self._unreleased_writes = 0  # ... and bytes appended
        self.unreadable_from: int | None = None  # where a lenient read met a damaged page
        self._lock = WriterLock(self.path / "writer.lock", self.path, self.command)

    @property
    def max_map_size(self) -> int:
        """The cap the map may double up to when a batch does not fit."""
        return self._appender.max_map_size

    # --- lifecycle --------------------------------------------------------------------

    def close(self) -> None:
        with _registry_lock:
            for k, v in list(_registry.items()):
                if v is self:
                    del _registry[k]
        self._close_env()

    def _close_env(self) -> None:
        self._lock.close()
        self.env.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writer lock --------------------------------------------------------------------

    @contextlib.contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the cross-process writer lock (reentrant within this process)."""
        with self._lock.hold(self.lock_timeout if timeout is None else timeout):
            yield

    # --- append -----------------------------------------------------------------------

    def append(
        self,
        items: Sequence[tuple[bytes, Event]],
        *,
        state: Mapping[bytes, bytes | None] | None = None,
        at: int | None = None,
        rewrites: Mapping[int, tuple[int, bytes]] | None = None,
        meta: Mapping[bytes, bytes] | None = None,
    ) -> AppendResult:
        """Append `(idempotency key, event)` pairs in one transaction.

        `state` entries (capture cursors) are written (or deleted, for None) in the same
        transaction. Keys already in the log, or repeated within the batch, are skipped
        and counted as duplicates. `rewrites` and `meta`: `eventlog.forget` only (see
        `eventlog.appender`).
        """
        if self.readonly:
            raise EventLogError("log opened read-only")
        for key, _ in items:
            if not key or len(key) > 480:
                raise EventLogError(f"idempotency key must be 1..480 bytes, got {len(key)}")
        stamp = now_ms() if at is None else at
        batch = list(items)
        with self.exclusive(), damage_named():
            result = self._appender.commit(batch, state or {}, stamp, rewrites, meta)
        # appending reads the key index and the tree's edges through the map: a long capture
        # must not keep them resident either
        self._unreleased_writes += self._appender.written
        self._appender.written = 0
        if self._unreleased_writes >= APPEND_RELEASE_BYTES:
            self._unreleased_writes = 0
            self.release_pages()
        return result

    def grow_map(self) -> None:
        """Double the map after a `MapFullError` (for writers outside `append`: `import --log`);
        `LogFull` once it reached `max_map_size`."""
        self._appender.grow()

    # --- reads ------------------------------------------------------------------------

    def _begin(self) -> Any:
        try:
            return self.env.begin()
        except lmdb.MapResizedError:
            self.env.set_mapsize(0)
            return self.env.begin()

    @contextlib.contextmanager
    def read_txn(self) -> Iterator[Any]:
        """A short read transaction (for scans that hold one per bounded batch)."""
        with self._begin() as txn:
            yield txn

    def db(self, name: bytes) -> Any:
        """The handle of a named database (events, keys, state, meta), or None if absent."""
        return self._dbs[name]

    def head(self) -> Head:
        with damage_named(), self._begin() as txn:
            return head_in(self._dbs[b"events"], txn)

    def has_key(self, key: bytes) -> bool:
        if self._dbs[b"keys"] is None:
            return False
        with damage_named(), self._begin() as txn:
            return txn.get(key, db=self._dbs[b"keys"]) is not None

    def seq_of_key(self, key: bytes) -> int | None:
        if self._dbs[b"keys"] is None:
            return None
        with damage_named(), self._begin() as txn:
            v = txn.get(key, db=self._dbs[b"keys"])
            return None if v is None else chain.key_seq(v)

    def read_raw(
        self, from_seq: int = 1, limit: int = READ_BATCH, max_bytes: int | None = None
    ) -> list[RawRecord]:
        """At most `limit` records from `from_seq`, as exact LMDB values; with `max_bytes`,
        stop once their values add up to that many bytes (at least one record is read).

        The values are copies: after every `RELEASE_BYTES` read by this log object (in any
        number of calls: catch-up reads a little after each capture commit) the mapped pages
        are released (`release_pages`), so no replay, catch-up or sync keeps the log
        resident."""
        out: list[RawRecord] = []
        if self._dbs[b"events"] is None:
            return out
        total = 0
        with damage_named(max(from_seq, 1)), self._begin() as txn:
            cur = txn.cursor(db=self._dbs[b"events"])
            if not cur.set_range(chain.seq_key(max(from_seq, 1))):
                return out
            for k, v in cur:
                out.append(RawRecord(chain.key_seq(k), bytes(v)))
                total += len(v)
                if len(out) >= limit or (max_bytes is not None and total >= max_bytes):
                    break
        self._unreleased += total
        if self._unreleased >= RELEASE_BYTES:  # a long read must not keep the log resident
            self._unreleased = 0
            self.release_pages()
        return out

    def read(self, from_seq: int = 1, limit: int = READ_BATCH) -> list[StoredEvent]:
        """At most `limit` decoded events from `from_seq` (one short read transaction)."""
        return [decode_record(r) for r in self.read_raw(from_seq, limit)]

    def iter_events(
        self, from_seq: int = 1, batch: int = READ_BATCH, *, damaged: list[int] | None = None
    ) -> Iterator[StoredEvent]:
        """Every event from `from_seq` to the head, in bounded read transactions, each
        checked against the chain as it is read (`CorruptRecord` at the first bad one; with
        `damaged`, bad records are listed there and left out)."""
        for raw in self.iter_raw(from_seq, batch, check=True, damaged=damaged):
            try:
                yield decode_record(raw)
            except CorruptRecord:
                if damaged is None:
                    raise
                damaged.append(raw.seq)

    def chain_check(self, from_seq: int = 1, damaged: list[int] | None = None) -> rec.ChainCheck:
        """A `ChainCheck` positioned before `from_seq`."""
        return rec.checker_at(self.read_raw, from_seq, damaged)

    def iter_raw(
        self, from_seq: int = 1, batch: int = READ_BATCH, max_bytes: int | None = None,
        *, check: bool = False, damaged: list[int] | None = None,
    ) -> Iterator[RawRecord]:
        """Exact records from `from_seq`; with `check`, each is checked against the chain
        first (see `iter_events`). Leniently (`check` and `damaged`), a damaged LMDB page
        ends the reading: its first unreadable seq is listed in `damaged` and kept in
        `unreadable_from`."""
        seq = from_seq
        chk = self.chain_check(from_seq, damaged) if check else None
        while True:
            try:
                chunk = self.read_raw(seq, batch, max_bytes)
            except DamagedPage as exc:
                if chk is None or damaged is None:
                    raise
                # nothing past a damaged page can be found: the reading ends here, said once
                self.unreadable_from = exc.seq
                if exc.seq not in damaged:
                    damaged.append(exc.seq)
                return
            if not chunk:
                return
            if chk is None:
                yield from chunk
            else:
                for raw in chunk:
                    if chk.ok(raw):
                        yield raw
            seq = chunk[-1].seq + 1

    def release_pages(self) -> int:
        """Drop this process's mapped pages of the log (see `eventlog.pages`); a long read
        calls it as it goes, so reading the whole log never keeps it resident."""
        from eventlog.pages import release

        return release(self.path)

    def get(self, seq: int) -> StoredEvent | None:
        """Record `seq`, checked against the stored link of the record before it."""
        return rec.checked_get(self.read_raw, seq)

    def get_state(self, key: bytes) -> bytes | None:
        if self._dbs[b"state"] is None:
            return None
        with damage_named(), self._begin() as txn:
            v = txn.get(key, db=self._dbs[b"state"])
            return None if v is None else bytes(v)

    def iter_state(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Capture state entries whose key starts with `prefix` (one read transaction)."""
        if self._dbs[b"state"] is None:
            return
        with damage_named(), self._begin() as txn:
            cur = txn.cursor(db=self._dbs[b"state"])
            if not cur.set_range(prefix):
                return
            for k, v in cur:
                if not bytes(k).startswith(prefix):
                    break
                yield bytes(k), bytes(v)

    def get_meta(self, key: bytes) -> bytes | None:
        """An entry of the `meta` database (None when absent)."""
        if self._dbs[b"meta"] is None:
            return None
        with damage_named(), self._begin() as txn:
            v = txn.get(key, db=self._dbs[b"meta"])
            return None if v is None else bytes(v)

    def forget_head(self) -> int:
        """The seq of the newest forget event (0 when nothing was ever forgotten): a
        projection built before it still holds what was forgotten."""
        v = self.get_meta(b"forget_head")
        return int(v) if v else 0

    def forget_events(self) -> list[int]:
        """The seqs of every forget event, oldest first (the team sync sends their forms)."""
        v = self.get_meta(b"forget_events")
        return [int(x) for x in v.split(b",")] if v else []

    def duplicates(self) -> int:
        if self._dbs[b"meta"] is None:
            return 0
        with damage_named(), self._begin() as txn:
            v = txn.get(b"duplicates", db=self._dbs[b"meta"])
            return int(v) if v else 0

    def key_count(self) -> int:
        if self._dbs[b"keys"] is None:
            return 0
        with damage_named(), self._begin() as txn:
            return int(txn.stat(self._dbs[b"keys"])["entries"])

    def iter_keys(self, batch: int = 10_000) -> Iterator[tuple[bytes, int]]:
        """(idempotency key, seq) of the key index, in bounded read transactions."""
        if self._dbs[b"keys"] is None:
            return
        after: bytes | None = None
        while True:
            rows: list[tuple[bytes, int]] = []
            with damage_named(), self._begin() as txn:
                cur = txn.cursor(db=self._dbs[b"keys"])
                ok = cur.set_range(after) if after is not None else cur.first()
                if ok and after is not None and bytes(cur.key()) == after:
                    ok = cur.next()
                while ok and len(rows) < batch:
                    rows.append((bytes(cur.key()), chain.key_seq(cur.value())))
                    ok = cur.next()
            if not rows:
                return
            yield from rows
            after = rows[-1][0]

    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.path.glob("*.mdb"))

    def copy_to(self, dest: Path, *, compact: bool = True) -> None:
        """A consistent snapshot of the environment into the directory `dest`.

        LMDB copies through its map, touching every page: they are released as it goes."""
        from eventlog.pages import releasing

        dest.mkdir(parents=True, exist_ok=True)
        with damage_named(), releasing(self.path):
            self.env.copy(str(dest), compact=compact)


def open_log(path: Path, **kwargs: Any) -> EventLog:
    """The process-wide EventLog of `path` (LMDB forbids opening one env twice)."""
    real = os.path.realpath(path)
    with _registry_lock:
        log = _registry.get(real)
        if log is not None and (log.readonly and not kwargs.get("readonly", False)):
            log._close_env()
            log = None
        if log is None:
            log = EventLog(Path(path), **kwargs)
            _registry[real] = log
        return log

