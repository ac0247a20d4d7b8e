"""The LMDB event store: append-only, gapless, hash-chained, idempotent.

Promises (see docs/ARCHITECTURE.md, invariants 1-3):
- seqs start at 1 with no gaps; keys are 8-byte big-endian and written with MDB_APPEND
  (a `False` from put is treated as corruption, never ignored);
- one LMDB write transaction per batch: a batch commits whole or not at all, together
  with any capture state (cursors) passed alongside it;
- an event whose idempotency key is already present adds nothing and is counted;
- one writer at a time across processes (an advisory flock, waited for with a timeout);
- durable sync, no writemap; the map doubles on MapFullError up to a cap;
- reads happen in short read transactions of bounded size.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import lmdb

from eventlog import chain, codec
from eventlog import records as rec
from eventlog.errors import CorruptRecord, EventLogError, LogFull, LogMissing
from eventlog.events import Event, WriterStarted
from eventlog.lock import WriterLock
from eventlog.records import AppendResult, Head, RawRecord, StoredEvent, decode_record

VERSION = "0.1.0"
DEFAULT_MAP_SIZE = 1 << 30
DEFAULT_MAX_MAP_SIZE = 1 << 40
READ_BATCH = 1000
RELEASE_BYTES = 32 << 20  # reads drop the log's mapped pages after this many bytes
_SEQ = struct.Struct(">Q")  # = chain.seq_key
_FORMAT_BYTE = bytes([codec.FORMAT])

_DBS = (b"events", b"keys", b"state", b"meta")
_registry: dict[str, EventLog] = {}
_registry_lock = threading.Lock()


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
        self.max_map_size = max_map_size
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
        self._wrote_writer = False
        self._unreleased = 0  # bytes read since the mapped pages were last released
        self._lock = WriterLock(self.path / "writer.lock", self.path, self.command)

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
    ) -> AppendResult:
        """Append `(idempotency key, event)` pairs in one transaction.

        `state` entries (capture cursors) are written (or deleted, for None) in the same
        transaction. Keys already in the log, or repeated within the batch, are skipped
        and counted as duplicates.
        """
        if self.readonly:
            raise EventLogError("log opened read-only")
        for key, _ in items:
            if not key or len(key) > 480:
                raise EventLogError(f"idempotency key must be 1..480 bytes, got {len(key)}")
        stamp = now_ms() if at is None else at
        batch = list(items)
        with self.exclusive():
            for _ in range(64):
                try:
                    return self._append_txn(batch, state or {}, stamp)
                except lmdb.MapFullError:
                    self._grow()
                except lmdb.MapResizedError:
                    self.env.set_mapsize(0)
                except lmdb.Error as exc:
                    if "Input/output error" in str(exc) or "No space" in str(exc):
                        raise LogFull(self._disk_full_message(exc, len(batch))) from exc
                    raise
            raise LogFull(f"could not grow {self.path} enough for this batch")

    def _disk_full_message(self, exc: Exception, count: int) -> str:
        """LMDB reports a full disk on commit as EIO; say which it most likely was."""
        try:
            st = os.statvfs(self.path)
            free = st.f_bavail * st.f_frsize
        except OSError:
            return f"cannot commit to {self.path}: {exc} (disk full?)"
        if free < 8 << 20:
            return (
                f"disk full: cannot commit {count} event(s) to {self.path} "
                f"({free} bytes free on its filesystem; LMDB said: {exc}); "
                "nothing of this batch was written, earlier events are intact"
            )
        return f"cannot commit to {self.path}: {exc} (an I/O error; {free} bytes free)"

    def _grow(self) -> None:
        current = int(self.env.info()["map_size"])
        if current >= self.max_map_size:
            raise LogFull(
                f"event log {self.path} is full: map size {current} bytes reached its cap "
                f"{self.max_map_size}; nothing of this batch was written"
            )
        self.env.set_mapsize(min(current * 2, self.max_map_size))

    def _append_txn(
        self,
        items: list[tuple[bytes, Event]],
        state: Mapping[bytes, bytes | None],
        at: int,
    ) -> AppendResult:
        """One write transaction: index keys, encode, chain, put, commit.

        Fast path: the whole batch's keys go into the index with one `putmulti`
        (overwrite=False); if every key was new, seqs follow the head in order. Otherwise
        that transaction is dropped and a fresh one indexes key by key: `put(overwrite=
        False)` refuses a key already present (in the log or earlier in this batch), which
        marks a duplicate before a seq is assigned, so seqs stay gapless.
        """
        keys_db = self._dbs[b"keys"]
        # hot loop: locals only, no Python-level calls per event but the C ones
        sha256, pack_seq, join = hashlib.sha256, _SEQ.pack, b"".join
        envelope, encode, fmt = codec.EnvelopeOut, codec.encode, _FORMAT_BYTE
        txn = self.env.begin(write=True)
        try:
            head = self._head_in(txn)
            seq, prev = head.seq, head.hash
            pending = 0 if self._wrote_writer else 1
            rows: list[tuple[bytes, bytes]] = []
            if items and self._index_all(txn, items, seq + 1 + pending):
                # fast path: every key was new; seqs are head+1+pending, head+2+pending, ...
                if pending:
                    seq += 1
                    prev = self._add_writer(txn, rows, seq, prev, at)
                for key, event in items:
                    # encode and hash while the bytes are hot in cache (codec.pack_value
                    # layout: format || chain hash || stored)
                    stored = encode(envelope(at, key, event))
                    seq += 1
                    skey = pack_seq(seq)
                    h = sha256(prev + skey)
                    h.update(stored)
                    prev = h.digest()
                    rows.append((skey, join((fmt, prev, stored))))
            else:
                # slow path (some keys known): probe and index key by key, in a clean txn
                txn.abort()
                txn = self.env.begin(write=True)
                head = self._head_in(txn)
                seq, prev = head.seq, head.hash
                put_key = txn.put
                for key, event in items:
                    # the first fresh key is indexed one seq further on: the writer
                    # event slots in before it (none for a batch that adds nothing)
                    skey = pack_seq(seq + 1 + pending)
                    if not put_key(key, skey, db=keys_db, overwrite=False):
                        continue
                    if pending:
                        pending = 0
                        seq += 1
                        prev = self._add_writer(txn, rows, seq, prev, at)
                    stored = encode(envelope(at, key, event))
                    seq += 1
                    h = sha256(prev + skey)
                    h.update(stored)
                    prev = h.digest()
                    rows.append((skey, join((fmt, prev, stored))))
            if rows:
                cur = txn.cursor(db=self._dbs[b"events"])
                _, added = cur.putmulti(rows, append=True)
                if added != len(rows):
                    raise CorruptRecord(head.seq + added + 1, "append refused: key out of order")
            writer_added = bool(rows) and not self._wrote_writer
            writer_extra = 1 if writer_added else 0
            duplicates = len(items) - (len(rows) - writer_extra)
            for skey_, sval in state.items():
                if sval is None:
                    txn.delete(skey_, db=self._dbs[b"state"])
                else:
                    txn.put(skey_, sval, db=self._dbs[b"state"])
            if duplicates:
                meta = self._dbs[b"meta"]
                old = txn.get(b"duplicates", db=meta)
                total = (int(old) if old else 0) + duplicates
                txn.put(b"duplicates", str(total).encode(), db=meta)
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        if writer_added:
            self._wrote_writer = True
        return AppendResult(
            appended=len(rows) - writer_extra,
            duplicates=duplicates,
            head=seq,
            seqs=tuple(range(seq - len(rows) + writer_extra + 1, seq + 1)),
        )

    def _index_all(self, txn: Any, items: list[tuple[bytes, Event]], first: int) -> bool:
        """Index every key at first, first+1, ... if all are new; False if any is known."""
        pack_seq = _SEQ.pack
        cur = txn.cursor(db=self._dbs[b"keys"])
        pairs = [(key, pack_seq(first + i)) for i, (key, _) in enumerate(items)]
        _, added = cur.putmulti(pairs, overwrite=False)
        return bool(added == len(pairs))

    def _add_writer(
        self, txn: Any, rows: list[tuple[bytes, bytes]], seq: int, prev: bytes, at: int
    ) -> bytes:
        """Index and chain this process's writer event as record `seq`; its hash."""
        host, pid = socket.gethostname(), os.getpid()
        key = f"writer:{host}:{pid}:{time.time_ns()}".encode()
        ev = WriterStarted(host=host, pid=pid, version=VERSION, command=self.command, at=at)
        stored = codec.encode_stored(at, key, codec.encode_event(ev))
        skey = chain.seq_key(seq)
        if not txn.put(key, skey, db=self._dbs[b"keys"], overwrite=False):
            raise CorruptRecord(seq, "writer key already indexed")
        digest = chain.link(prev, seq, stored)
        rows.append((skey, codec.pack_value(digest, stored)))
        return digest

    # --- reads ------------------------------------------------------------------------

    def _head_in(self, txn: Any) -> Head:
        db = self._dbs[b"events"]
        if db is None:
            return Head(0, chain.GENESIS)
        cur = txn.cursor(db=db)
        if not cur.last():
            return Head(0, chain.GENESIS)
        _, h, _ = codec.unpack_value(cur.value())
        return Head(chain.key_seq(cur.key()), h)

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
        with self._begin() as txn:
            return self._head_in(txn)

    def has_key(self, key: bytes) -> bool:
        if self._dbs[b"keys"] is None:
            return False
        with self._begin() as txn:
            return txn.get(key, db=self._dbs[b"keys"]) is not None

    def seq_of_key(self, key: bytes) -> int | None:
        if self._dbs[b"keys"] is None:
            return None
        with self._begin() as txn:
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
        with self._begin() as txn:
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
        first (see `iter_events`)."""
        seq = from_seq
        chk = self.chain_check(from_seq, damaged) if check else None
        while True:
            chunk = self.read_raw(seq, batch, max_bytes)
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
        with self._begin() as txn:
            v = txn.get(key, db=self._dbs[b"state"])
            return None if v is None else bytes(v)

    def iter_state(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Capture state entries whose key starts with `prefix` (one read transaction)."""
        if self._dbs[b"state"] is None:
            return
        with self._begin() as txn:
            cur = txn.cursor(db=self._dbs[b"state"])
            if not cur.set_range(prefix):
                return
            for k, v in cur:
                if not bytes(k).startswith(prefix):
                    break
                yield bytes(k), bytes(v)

    def duplicates(self) -> int:
        if self._dbs[b"meta"] is None:
            return 0
        with self._begin() as txn:
            v = txn.get(b"duplicates", db=self._dbs[b"meta"])
            return int(v) if v else 0

    def key_count(self) -> int:
        if self._dbs[b"keys"] is None:
            return 0
        with self._begin() as txn:
            return int(txn.stat(self._dbs[b"keys"])["entries"])

    def iter_keys(self, batch: int = 10_000) -> Iterator[tuple[bytes, int]]:
        """(idempotency key, seq) of the key index, in bounded read transactions."""
        if self._dbs[b"keys"] is None:
            return
        after: bytes | None = None
        while True:
            rows: list[tuple[bytes, int]] = []
            with self._begin() as txn:
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
        with releasing(self.path):
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

