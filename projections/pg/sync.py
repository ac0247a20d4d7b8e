"""Ship a machine's log to the team server: every record byte for byte, keyed by (host, seq).

Promises:
- one transaction per batch, and a batch is bounded (`BATCH` records, about `BATCH_BYTES`
  of values); the host's head (`hosts.head_seq/head_hash`) moves in the same transaction
  as the records it covers, so a failure at any point resumes exactly after the last
  committed batch;
- idempotent: the host's row is locked (`FOR UPDATE`) before the head is read, so two
  processes of one home never ship a record twice, and a batch that was already shipped
  adds nothing (its overlap is compared hash by hash);
- the server's chain stays a chain: every new record is re-linked from the server's head
  hash before it is sent (`eventlog.chain.link`), so a gap, a local corruption or a log
  that diverged from what the server holds (a home restored from an old backup) stops the
  sync with `Diverged` instead of mixing two histories;
- a record damaged in the local log is never shipped: every batch passes the same
  `ChainCheck` as restore and rebuild first, so local damage stops the sync with
  `CorruptRecord` (naming the record, `agentlog verify` lists them all) instead of being
  mistaken for a server that diverged;
- every write goes through the schema owner's functions (`projections.pg.logsql`: a writer
  holds SELECT only on `hosts` and `records`, so it can take no lock on them that would
  stall a search): a batch is one `put_records` call with the seqs and values as two
  binary arrays, which re-checks the host, the seqs and the chain on the server and moves
  the head with the records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from eventlog import EventLog, chain, codec
from eventlog.records import RawRecord
from projections.pg import schema
from projections.pg.conn import (
    TeamError,
    redact,
    writing,
)

BATCH = 1000
BATCH_BYTES = 8 << 20


class Diverged(TeamError):
    """The server holds a different history for this host than the local log."""


@dataclass(frozen=True, slots=True)
class SyncResult:
    host: str
    shipped: int
    bytes: int
    batches: int
    server_head: int
    local_head: int
    seconds: float
    forgotten: int = 0  # server records replaced by the forms this host's forgets left

    @property
    def behind(self) -> int:
        return max(self.local_head - self.server_head, 0)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "shipped": self.shipped, "bytes": self.bytes,
                "batches": self.batches, "serverHead": self.server_head,
                "localHead": self.local_head, "behind": self.behind,
                "forgotten": self.forgotten, "seconds": round(self.seconds, 3)}


def register_host(con: Any, host: str, label: str | None = None) -> None:
    """Create the host's row if missing (owned by the connected role); commits."""
    have = schema.version(con)
    if have < schema.LATEST:
        try:
            schema.ensure_schema(con)
            con.commit()
        except Exception as exc:
            con.rollback()
            if have == 0:
                raise TeamError(redact(
                    f"the team schema is missing and this role cannot create it ({exc}); "
                    "run `agentlog team init URL` with the server's owner first")) from None
    if _functions(con):
        con.execute("SELECT agentlog.register_host(%s, %s)", (host, label))
    else:
        con.execute("INSERT INTO agentlog.hosts(host, label) VALUES (%s, %s)"
                    " ON CONFLICT (host) DO NOTHING", (host, label))
    con.commit()


def _functions(con: Any) -> bool:
    """Whether the database has step 5's log functions. An older one (until its owner runs
    `team init`) takes sync's writes directly, under its row-level security as before:
    records keep leaving the machine while the owner has not upgraded the schema."""
    row = con.execute("SELECT to_regprocedure('agentlog.put_records(text, bigint[], bytea[])')"
                      " IS NOT NULL").fetchone()
    return bool(row and row[0])


def server_head(con: Any, host: str, *, lock: bool = False) -> tuple[int, bytes]:
    """The host's (head seq, head hash); `lock`: its row locked for the transaction, through
    the owner's `take_head` (only the host's own writer may)."""
    sql = "SELECT head_seq, head_hash FROM agentlog.hosts WHERE host = %s"
    if lock:
        sql = ("SELECT head_seq, head_hash FROM agentlog.take_head(%s)" if _functions(con)
               else sql + " FOR UPDATE")
    row = con.execute(sql, (host,)).fetchone()
    if row is None:
        raise TeamError(f"host {host!r} is not registered on the server")
    return int(row[0]), bytes(row[1])


def _local_hash(log: EventLog, seq: int) -> bytes | None:
    got = log.read_raw(seq, 1)
    if not got or got[0].seq != seq:
        return None
    return codec.unpack_value(got[0].value)[1]


def ship_batch(con: Any, host: str, records: Sequence[RawRecord]) -> int:
    """Ship `records` (consecutive seqs) in one transaction; returns how many were new.

    Records the server already has are compared by hash and skipped; the rest must continue
    the server's chain exactly. Commits on success, rolls back on any error.
    """
    try:
        head, head_hash = server_head(con, host, lock=True)
        old = [r for r in records if r.seq <= head]
        if old:
            have = dict(con.execute(
                "SELECT seq, hash FROM agentlog.records WHERE host = %s AND seq = ANY(%s)",
                (host, [r.seq for r in old])).fetchall())
            for r in old:
                if bytes(have.get(r.seq, b"")) != codec.unpack_value(r.value)[1]:
                    raise Diverged(f"host {host}: record {r.seq} differs from the server's copy")
        new = [r for r in records if r.seq > head]
        if not new:
            con.rollback()
            return 0
        prev, expect = head_hash, head + 1
        seqs: list[int] = []
        values: list[bytes] = []
        for r in new:
            fmt, h, stored = codec.unpack_value(r.value)
            if r.seq != expect:
                raise Diverged(f"host {host}: record {r.seq} does not follow server head {head}")
            forgotten = fmt in (codec.FORGOTTEN, codec.AMENDED)  # proven by its forget event
            if not forgotten and (fmt != codec.FORMAT or chain.link(prev, r.seq, stored) != h):
                raise Diverged(f"host {host}: record {r.seq} does not continue the chain")
            seqs.append(r.seq)
            values.append(r.value)
            prev, expect = h, expect + 1
        if _functions(con):  # binary parameters (%b): the values travel as they are
            con.execute("SELECT agentlog.put_records(%s, %b, %b)", (host, seqs, values))
        else:
            _insert_directly(con, host, seqs, values, prev)
        con.commit()
        return len(seqs)
    except BaseException:
        con.rollback()
        raise


def _insert_directly(con: Any, host: str, seqs: list[int], values: list[bytes],
                     head_hash: bytes) -> None:
    """Before step 5: COPY into a session temp table, one INSERT … SELECT (row-level security,
    which COPY FROM does not support, checks every row), the head moved by UPDATE."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS ship_in(host text, seq bigint, hash bytea,"
                " value bytea) ON COMMIT DELETE ROWS")
    with con.cursor() as cur:
        with cur.copy("COPY ship_in (host, seq, hash, value) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "int8", "bytea", "bytea"])
            for seq, value in zip(seqs, values, strict=True):
                cp.write_row((host, seq, value[1:33], value))
        cur.execute("INSERT INTO agentlog.records(host, seq, hash, value)"
                    " SELECT host, seq, hash, value FROM ship_in ORDER BY seq")
    con.execute("UPDATE agentlog.hosts SET head_seq = %s, head_hash = %s, synced_at = now()"
                " WHERE host = %s", (seqs[-1], head_hash, host))


def sync(
    log: EventLog,
    url: str,
    host: str,
    *,
    label: str | None = None,
    batch: int = BATCH,
    batch_bytes: int = BATCH_BYTES,
    max_batches: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> SyncResult:
    """Ship everything the server lacks of `log` for `host`, batch by batch."""
    started = time.monotonic()
    with writing(url) as con:
        return _sync(con, log, host, label, batch, batch_bytes, max_batches, on_batch, started)


def _sync(con: Any, log: EventLog, host: str, label: str | None, batch: int, batch_bytes: int,
          max_batches: int | None, on_batch: Callable[[int, int], None] | None,
          started: float) -> SyncResult:
    register_host(con, host, label)
    local = log.head()
    head, head_hash = server_head(con, host)
    con.rollback()
    if head > local.seq or (head and _local_hash(log, head) != head_hash):
        raise Diverged(
            f"host {host}: the server holds records up to {head} that the local log "
            f"(head {local.seq}) does not match; this home's log was replaced")
    check = log.chain_check(head + 1)  # CorruptRecord: the local log is damaged
    shipped = nbytes = batches = 0
    while max_batches is None or batches < max_batches:
        records = log.read_raw(head + 1, batch, max_bytes=batch_bytes)
        if not records:
            break
        check.all(records)
        shipped += ship_batch(con, host, records)
        nbytes += sum(len(r.value) for r in records)
        batches += 1
        head = records[-1].seq
        if on_batch is not None:
            on_batch(head, local.seq)
    forgotten = push_forgotten(con, log, host)
    head, _ = server_head(con, host)
    con.rollback()
    return SyncResult(host, shipped, nbytes, batches, head, log.head().seq,
                      time.monotonic() - started, forgotten)


def push_forgotten(con: Any, log: EventLog, host: str, *, chunk: int = 1000) -> int:
    """Replace the server's copies of records this host forgot (`agentlog forget`) by their
    forms, and drop the host's projected rows so the projector replays it, in one
    transaction (a crash leaves the old copies, which the next sync replaces). Returns how
    many records were replaced. Only forget events the server already holds are sent."""
    import hashlib

    from eventlog.events import RecordsForgotten

    events = log.forget_events()
    if not events:
        return 0
    try:
        head, _ = server_head(con, host, lock=True)
        changed = 0
        for ev_seq in events:
            st = log.get(ev_seq) if ev_seq <= head else None
            if st is None or not isinstance(st.event, RecordsForgotten):
                continue
            for a, b in st.event.ranges:
                for lo in range(a, b + 1, chunk):
                    hi = min(b, lo + chunk - 1)
                    local = {r.seq: r.value for r in log.read_raw(lo, hi - lo + 1)}
                    theirs = con.execute(
                        "SELECT seq, sha256(value) FROM agentlog.records WHERE host = %s AND"
                        " seq BETWEEN %s AND %s", (host, lo, hi)).fetchall()
                    upd = [int(q) for q, d in theirs if int(q) in local and bytes(d)
                           != hashlib.sha256(local[int(q)]).digest()]
                    if upd and _functions(con):  # forgotten forms keeping the hash only
                        con.execute("SELECT agentlog.forget_records(%s, %b, %b)",
                                    (host, upd, [local[q] for q in upd]))
                    elif upd:  # before step 5: the policy `records_forget` checks them
                        with con.cursor() as cur:
                            cur.executemany("UPDATE agentlog.records SET value = %s"
                                            " WHERE host = %s AND seq = %s",
                                            [(local[q], host, q) for q in upd])
                    changed += len(upd)
        if changed:
            from projections.pg.project import drop_host_rows

            drop_host_rows(con, host)
        con.commit()
        return changed
    except BaseException:
        con.rollback()
        raise
