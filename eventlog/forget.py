"""Forgetting records for real while the chain still proves the rest (`agentlog forget`).

A record is replaced in place — the one exception to "nothing rewritten" — by one of two
forms (`eventlog.codec`): *forgotten* (the payload dropped, its idempotency key kept so the
key index stays one to one) or *amended* (new stored bytes, the same event without a
forgotten string). Both keep the record's chain hash h_n, so the link into every later
record is still recomputed from stored bytes, and both name the forget event, appended in
the same LMDB write transaction. That event (`RecordsForgotten`) holds no content: the kind,
the counts, the seqs as ranges and `attest`:

    attest = sha256( for each affected seq in order:
                     seq_be8 || h_n || form byte || sha256(key or new stored bytes) )

computed after each record was checked against the chain. `verify` recomputes it from the
forms it finds, so a record whose payload vanished without a forget event, a form naming
the wrong event, an edited hash or edited amended bytes are all damage. What the forms give
up is only the recomputation of h_n from h_{n-1} for the forgotten record itself, i.e. a
proof of the very bytes that were asked to be forgotten; the forget event, chained after
them, commits to each h_n instead.

LMDB keeps freed pages until it reuses them, so the old payloads would stay in the file:
`scrub_free_pages` makes LMDB reuse every free page for zeros, then frees them again. A
forget sets `scrub_pending` in the same transaction, cleared once the scrub is done, so an
interrupted forget is finished by the next one (`pending_scrub`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import lmdb

from eventlog import chain, codec
from eventlog import records as rec
from eventlog.errors import CorruptRecord, EventLogError
from eventlog.events import RecordsForgotten
from eventlog.store import EventLog, damage_named, now_ms

SCRUB_PENDING = b"scrub_pending"
_FILLER = b"\0" * 1900  # two to a 4 KiB page: every byte of a reused page is written


class Applied(NamedTuple):
    event_seq: int
    forgotten: int
    amended: int
    skipped: int  # already forgotten before


def ranges_of(seqs: Iterable[int]) -> list[list[int]]:
    """Sorted seqs as inclusive [first, last] runs."""
    out: list[list[int]] = []
    for s in sorted(set(seqs)):
        if out and out[-1][1] == s - 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def in_ranges(seq: int, ranges: list[list[int]]) -> bool:
    lo, hi = 0, len(ranges)
    while lo < hi:
        mid = (lo + hi) // 2
        a, b = ranges[mid]
        if seq < a:
            hi = mid
        elif seq > b:
            lo = mid + 1
        else:
            return True
    return False


def attest_part(seq: int, chain_hash: bytes, form: int, body: bytes | memoryview) -> bytes:
    """One affected record's contribution to `attest`."""
    return (chain.seq_key(seq) + chain_hash + bytes([form])
            + hashlib.sha256(body).digest())


def forget(log: EventLog, targets: Mapping[int, bytes | None], *, kind: str, by: str,
           sources: int = 0, state: Mapping[bytes, bytes | None] | None = None) -> Applied:
    """Replace each record of `targets` (seq -> None to forget it, or its new stored bytes
    to amend it) and append the forget event, in one transaction under the writer lock.

    Each target is checked against the chain first (`CorruptRecord` if it does not hold);
    a record already forgotten is left as it is. `state` entries (capture cursors of the
    forgotten sources, their skip marks) commit in the same transaction."""
    with log.exclusive(), damage_named():
        parts: list[bytes] = []
        rewrites: dict[int, tuple[int, bytes]] = {}
        forgotten = amended = skipped = 0
        for seq in sorted(targets):
            got = log.read_raw(seq, 1)
            if not got or got[0].seq != seq:
                raise CorruptRecord(seq, "cannot be forgotten: no such record")
            value = got[0].value
            fmt = value[0] if value else -1
            if fmt == codec.FORGOTTEN:
                skipped += 1
                continue
            rec.checker_at(log.read_raw, seq).ok(got[0])  # strict: raises if it does not hold
            stored_now = (codec.unpack_value(value)[2] if fmt == codec.FORMAT
                          else codec.unpack_tomb(value)[3])
            h = bytes(value[1:codec.HEADER])
            new = targets[seq]
            if new is None:
                body = codec.decode_envelope(stored_now).key
                form = codec.FORGOTTEN
                forgotten += 1
            else:
                body, form = new, codec.AMENDED
                amended += 1
            rewrites[seq] = (form, body)
            parts.append(attest_part(seq, h, form, body))
        if not rewrites:
            return Applied(0, 0, 0, skipped)
        at = now_ms()
        event = RecordsForgotten(
            kind=kind, by=by, forgotten=forgotten, amended=amended,
            ranges=ranges_of(rewrites), attest=hashlib.sha256(b"".join(parts)).digest(),
            at=at, sources=sources,
        )
        key = f"forget:{os.uname().nodename}:{os.getpid()}:{time.time_ns()}".encode()
        result = log.append([(key, event)], state=state, at=at, rewrites=rewrites,
                            meta={SCRUB_PENDING: b"1"})
        return Applied(result.head, forgotten, amended, skipped)


class Attestations:
    """What `verify` checks of forgotten and amended records while it scans the chain.

    `form` is fed every such record in seq order, `event` every forget event; `finish`
    raises `CorruptRecord` for the first record or event that does not hold."""

    def __init__(self) -> None:
        self._by_event: dict[int, list[bytes]] = {}
        self._seqs: dict[int, list[int]] = {}
        self.events: list[tuple[int, RecordsForgotten]] = []
        self.forgotten = 0
        self.amended = 0

    def form(self, seq: int, value: bytes | memoryview) -> None:
        if len(value) < codec.TOMB_HEADER:
            raise CorruptRecord(seq, "a forgotten record shorter than its header")
        fmt, h, event_seq, body = codec.unpack_tomb(value)
        if event_seq <= seq:
            raise CorruptRecord(seq, f"forgotten by record {event_seq}, which is not later")
        self._by_event.setdefault(event_seq, []).append(attest_part(seq, h, fmt, body))
        self._seqs.setdefault(event_seq, []).append(seq)
        if fmt == codec.FORGOTTEN:
            self.forgotten += 1
        else:
            self.amended += 1

    def event(self, seq: int, ev: RecordsForgotten) -> None:
        self.events.append((seq, ev))

    def finish(self) -> None:
        named = {seq: ev for seq, ev in self.events}
        for event_seq, seqs in sorted(self._seqs.items()):
            ev = named.get(event_seq)
            if ev is None:
                raise CorruptRecord(seqs[0], f"its payload is gone, and record {event_seq} is "
                                             "not a forget event")
            for s in seqs:
                if not in_ranges(s, ev.ranges):
                    raise CorruptRecord(s, f"forget event {event_seq} does not name it")
        for event_seq, ev in self.events:
            seqs = self._seqs.get(event_seq, [])
            named_count = sum(b - a + 1 for a, b in ev.ranges)
            if len(seqs) < named_count:
                continue  # some of its records were forgotten again by a later event
            got = hashlib.sha256(b"".join(self._by_event.get(event_seq, []))).digest()
            if got != ev.attest or len(seqs) != ev.forgotten + ev.amended:
                raise CorruptRecord(event_seq, "forget event does not match the records it "
                                               "names (edited forms or hashes)")


# --- the freed pages ----------------------------------------------------------------------


def pending_scrub(log: EventLog) -> bool:
    return log.get_meta(SCRUB_PENDING) is not None


def scrub_free_pages(log: EventLog) -> int:
    """Overwrite every free page of the log's file with zeros; returns the pages written.

    LMDB hands a write transaction free pages before it grows the file, once no reader
    still sees the snapshot that freed them: two empty commits age the forget's own freed
    pages, then one transaction fills a scratch database until it has taken them all, and
    the next drops it (its pages, now zeros, go back to the free list)."""
    env = log.env
    with log.exclusive(), damage_named():
        env.reader_check()
        _bump(log)
        _bump(log)
        free = _free_pages_estimate(log)
        pages = free + 16
        scratch = env.open_db(b"scrub")
        _write_retry(log, lambda txn: _fill(txn, scratch, 2 * pages))
        _write_retry(log, lambda txn: txn.drop(scratch, delete=False))
        _write_retry(log, lambda txn: txn.delete(SCRUB_PENDING, db=log.db(b"meta")))
        return pages


def _fill(txn: Any, db: Any, n: int) -> None:
    put = txn.put
    for i in range(n):
        put(i.to_bytes(8, "big"), _FILLER, db=db)


def _bump(log: EventLog) -> None:
    _write_retry(log, lambda txn: txn.put(b"scrub_tick", str(time.time_ns()).encode(),
                                          db=log.db(b"meta")))


def _write_retry(log: EventLog, write: Any) -> None:
    for _ in range(64):
        try:
            with log.env.begin(write=True) as txn:
                write(txn)
            return
        except lmdb.MapFullError:
            log.grow_map()
        except lmdb.MapResizedError:
            log.env.set_mapsize(0)
    raise EventLogError(f"could not grow {log.path} to scrub its free pages")


def _free_pages_estimate(log: EventLog) -> int:
    """Pages of the file below its last page that no database uses (an over-estimate by
    the free list's own few pages)."""
    env = log.env
    total = int(env.info()["last_pgno"]) + 1
    used = 2  # the meta pages
    with log.read_txn() as txn:
        st = env.stat()
        used += st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]
        for name in (b"events", b"keys", b"state", b"meta"):
            db = log.db(name)
            if db is None:
                continue
            s = txn.stat(db)
            used += s["branch_pages"] + s["leaf_pages"] + s["overflow_pages"]
    return max(0, total - used)
