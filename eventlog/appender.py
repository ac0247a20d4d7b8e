"""The append transaction: how a batch becomes gapless, chained, idempotent records.

Promises (docs/ARCHITECTURE.md, invariants 1-3), kept by `Appender.commit`, which the caller
runs under the cross-process writer lock (`EventLog.append` holds it):
- one LMDB write transaction per batch: the records, the key index, the duplicate counter and
  any capture state passed alongside commit together or not at all;
- seqs follow the head with no gaps; keys are 8-byte big-endian, put with MDB_APPEND, and an
  append LMDB refuses is `CorruptRecord`, never ignored;
- a key already indexed (in the log or earlier in the batch) is skipped before it gets a seq
  and counted as a duplicate;
- each record's chain hash is `sha256(prev || seq_be8 || stored)` over the exact stored bytes
  (`eventlog.chain`), computed as the record is encoded;
- the first record a process writes to a log is preceded by its `WriterStarted` event;
- a full map doubles (up to `max_map_size`) and the batch is retried from scratch; a full disk
  is `LogFull` naming the free bytes, with nothing of the batch written;
- `rewrites` (only `agentlog forget`, `eventlog.forget`) replace earlier records by their
  forgotten or amended form in the same transaction as the forget event that names them
  (the batch's last record), keeping each one's chain hash.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lmdb

from eventlog import chain, codec
from eventlog.digest import sha256_for, spent
from eventlog.errors import CorruptRecord, LogFull
from eventlog.events import Event, WriterStarted
from eventlog.records import AppendResult, Head

VERSION = "0.1.0"
_SEQ = struct.Struct(">Q")  # = chain.seq_key
_FORMAT_BYTE = bytes([codec.FORMAT])


def head_in(events_db: Any, txn: Any) -> Head:
    """The last record's seq and chain hash as seen by `txn` (genesis for an empty log)."""
    if events_db is None:
        return Head(0, chain.GENESIS)
    cur = txn.cursor(db=events_db)
    if not cur.last():
        return Head(0, chain.GENESIS)
    _, h, _ = codec.unpack_value(cur.value())
    return Head(chain.key_seq(cur.key()), h)


class Appender:
    """Writes batches into one open LMDB environment (its named databases in `dbs`)."""

    def __init__(
        self, env: Any, dbs: dict[bytes, Any], path: Path, command: str, max_map_size: int
    ) -> None:
        self.env = env
        self.dbs = dbs
        self.path = path
        self.command = command
        self.max_map_size = max_map_size
        self.wrote_writer = False  # this process's WriterStarted is in the log
        self.written = 0  # record bytes committed (the store releases the map's pages by it)

    def commit(
        self, batch: list[tuple[bytes, Event]], state: Mapping[bytes, bytes | None], at: int,
        rewrites: Mapping[int, tuple[int, bytes]] | None = None,
        meta: Mapping[bytes, bytes] | None = None,
    ) -> AppendResult:
        """Append `batch` in one transaction, growing the map as needed (caller holds the
        writer lock). `rewrites`: seq -> (codec.FORGOTTEN or AMENDED, body), see the module
        docstring; `meta` entries are put in the same transaction."""
        for _ in range(64):
            try:
                return self._txn(batch, state, at, rewrites, meta)
            except lmdb.MapFullError:
                self.grow()
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

    def grow(self) -> None:
        """Double the map (up to `max_map_size`; `LogFull` at the cap)."""
        current = int(self.env.info()["map_size"])
        if current >= self.max_map_size:
            raise LogFull(
                f"event log {self.path} is full: map size {current} bytes reached its cap "
                f"{self.max_map_size}; nothing of this batch was written"
            )
        self.env.set_mapsize(min(current * 2, self.max_map_size))

    def _txn(
        self,
        items: list[tuple[bytes, Event]],
        state: Mapping[bytes, bytes | None],
        at: int,
        rewrites: Mapping[int, tuple[int, bytes]] | None = None,
        meta: Mapping[bytes, bytes] | None = None,
    ) -> AppendResult:
        """One write transaction: index keys, encode, chain, put, commit.

        Fast path: the whole batch's keys go into the index with one `putmulti`
        (overwrite=False); if every key was new, seqs follow the head in order. Otherwise
        that transaction is dropped and a fresh one indexes key by key: `put(overwrite=
        False)` refuses a key already present (in the log or earlier in this batch), which
        marks a duplicate before a seq is assigned, so seqs stay gapless.
        """
        keys_db = self.dbs[b"keys"]
        # hot loop: locals only, no Python-level calls per event but the C ones
        sha256, pack_seq, join = sha256_for(0), _SEQ.pack, b"".join  # counted below
        envelope, encode, fmt = codec.EnvelopeOut, codec.encode, _FORMAT_BYTE
        txn = self.env.begin(write=True)
        try:
            head = head_in(self.dbs[b"events"], txn)
            seq, prev = head.seq, head.hash
            pending = 0 if self.wrote_writer else 1
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
                head = head_in(self.dbs[b"events"], txn)
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
                size = sum(len(v) for _, v in rows)
                self.written += size
                spent(size)  # hashed with `sha256` above (eventlog.digest)
                cur = txn.cursor(db=self.dbs[b"events"])
                _, added = cur.putmulti(rows, append=True)
                if added != len(rows):
                    raise CorruptRecord(head.seq + added + 1, "append refused: key out of order")
            writer_added = bool(rows) and not self.wrote_writer
            writer_extra = 1 if writer_added else 0
            duplicates = len(items) - (len(rows) - writer_extra)
            for skey_, sval in state.items():
                if sval is None:
                    txn.delete(skey_, db=self.dbs[b"state"])
                else:
                    txn.put(skey_, sval, db=self.dbs[b"state"])
            if duplicates:
                meta_db = self.dbs[b"meta"]
                old = txn.get(b"duplicates", db=meta_db)
                total = (int(old) if old else 0) + duplicates
                txn.put(b"duplicates", str(total).encode(), db=meta_db)
            if rewrites:
                self._rewrite(txn, rewrites, seq)
                meta_db = self.dbs[b"meta"]
                txn.put(b"forget_head", str(seq).encode(), db=meta_db)
                older = txn.get(b"forget_events", db=meta_db)
                txn.put(b"forget_events", (bytes(older) + b"," if older else b"")
                        + str(seq).encode(), db=meta_db)
            for mk, mv in (meta or {}).items():
                txn.put(mk, mv, db=self.dbs[b"meta"])
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        if writer_added:
            self.wrote_writer = True
        return AppendResult(
            appended=len(rows) - writer_extra,
            duplicates=duplicates,
            head=seq,
            seqs=tuple(range(seq - len(rows) + writer_extra + 1, seq + 1)),
        )

    def _rewrite(self, txn: Any, rewrites: Mapping[int, tuple[int, bytes]], by: int) -> None:
        """Replace each record of `rewrites` by its forgotten/amended form naming record `by`."""
        events_db = self.dbs[b"events"]
        for tseq, (fmt, body) in sorted(rewrites.items()):
            skey = _SEQ.pack(tseq)
            old = txn.get(skey, db=events_db)
            if old is None or not 0 < tseq < by or len(old) < codec.HEADER:
                raise CorruptRecord(tseq, "cannot be forgotten: no such record before the event")
            txn.put(skey, codec.pack_tomb(fmt, bytes(old[1:codec.HEADER]), by, body),
                    db=events_db)

    def _index_all(self, txn: Any, items: list[tuple[bytes, Event]], first: int) -> bool:
        """Index every key at first, first+1, ... if all are new; False if any is known."""
        pack_seq = _SEQ.pack
        cur = txn.cursor(db=self.dbs[b"keys"])
        pairs = [(key, pack_seq(first + i)) for i, (key, _) in enumerate(items)]
        _, added = cur.putmulti(pairs, overwrite=False)
        return bool(added == len(pairs))

    def _add_writer(
        self, txn: Any, rows: list[tuple[bytes, bytes]], seq: int, prev: bytes, at: int
    ) -> bytes:
        """Index and chain this process's writer event as record `seq`; its hash."""
        host, pid = os.uname().nodename, os.getpid()  # = gethostname(); `socket` costs start-up
        key = f"writer:{host}:{pid}:{time.time_ns()}".encode()
        ev = WriterStarted(host=host, pid=pid, version=VERSION, command=self.command, at=at)
        stored = codec.encode_stored(at, key, codec.encode_event(ev))
        skey = chain.seq_key(seq)
        if not txn.put(key, skey, db=self.dbs[b"keys"], overwrite=False):
            raise CorruptRecord(seq, "writer key already indexed")
        digest = chain.link(prev, seq, stored)
        rows.append((skey, codec.pack_value(digest, stored)))
        return digest
