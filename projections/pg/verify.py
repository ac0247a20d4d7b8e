"""Server-side verification of every host's chain, and comparison with a local log.

The chain formula is evaluated by PostgreSQL itself (`sha256`, `int8send` for the
big-endian seq), one pass per host in seq order: seqs are gapless from 1, each value's
format byte is 1, its embedded hash equals the `hash` column, and
`hash = sha256(prev ‖ seq_be8 ‖ stored)`; a record the host forgot before shipping it
(format 0xF0/0xF1, `eventlog.forget`) keeps its hash as stored (the host's own `verify`
proves it through the forget event). The host's recorded head must be its last record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eventlog import EventLog, codec

_CHECK = """
WITH r AS (
  SELECT seq, hash, value,
         lag(hash) OVER w AS prev, row_number() OVER w AS n
  FROM agentlog.records WHERE host = %s WINDOW w AS (ORDER BY seq)
), bad AS (
  SELECT seq, CASE
    WHEN seq <> n THEN 'gap before this record'
    WHEN get_byte(value, 0) NOT IN (1, 240, 241) THEN 'unknown record format'
    WHEN substring(value FROM 2 FOR 32) <> hash THEN 'hash column differs from the record'
    WHEN get_byte(value, 0) = 1 AND hash <> sha256(coalesce(prev, decode(repeat('00', 32), 'hex'))
                        || int8send(seq) || substring(value FROM 34))
      THEN 'checksum mismatch' END AS reason
  FROM r
)
SELECT (SELECT count(*) FROM r), (SELECT max(seq) FROM r),
       (SELECT hash FROM r ORDER BY seq DESC LIMIT 1),
       (SELECT seq FROM bad WHERE reason IS NOT NULL ORDER BY seq LIMIT 1),
       (SELECT reason FROM bad WHERE reason IS NOT NULL ORDER BY seq LIMIT 1)
"""


@dataclass(frozen=True, slots=True)
class HostCheck:
    host: str
    ok: bool
    records: int
    head_seq: int
    head_hash: str
    first_bad_seq: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "ok": self.ok, "records": self.records,
                "headSeq": self.head_seq, "headHash": self.head_hash,
                "firstBadSeq": self.first_bad_seq, "reason": self.reason}


def check_hosts(con: Any, hosts: list[str] | None = None) -> list[HostCheck]:
    """Re-check the chain of every host (or of `hosts`) on the server."""
    rows = con.execute("SELECT host, head_seq, head_hash FROM agentlog.hosts ORDER BY host"
                       ).fetchall()
    out: list[HostCheck] = []
    for host, head_seq, head_hash in rows:
        if hosts is not None and host not in hosts:
            continue
        n, last, last_hash, bad_seq, reason = con.execute(_CHECK, (host,)).fetchone()
        n, last = int(n), int(last or 0)
        ok = bad_seq is None
        if ok and (last != head_seq or (last and bytes(last_hash) != bytes(head_hash))):
            ok, reason = False, f"recorded head {head_seq} is not the last record ({last})"
        out.append(HostCheck(str(host), ok, n, last,
                             bytes(last_hash).hex() if last_hash is not None else "",
                             None if bad_seq is None else int(bad_seq), reason or ""))
    con.rollback()
    return out


def compare_local(check: HostCheck, log: EventLog) -> dict[str, Any]:
    """How the server's copy of this home's host relates to the local log."""
    local = log.head()
    out: dict[str, Any] = {"localHead": local.seq, "serverHead": check.head_seq,
                           "behind": max(local.seq - check.head_seq, 0)}
    if check.head_seq > local.seq:
        out.update(ok=False, state="diverged", detail="server is ahead of the local log")
        return out
    if check.head_seq == 0:
        out.update(ok=True, state="empty" if local.seq else "in sync", detail="")
        return out
    got = log.read_raw(check.head_seq, 1)
    local_hash = codec.unpack_value(got[0].value)[1].hex() if got else ""
    if local_hash != check.head_hash:
        out.update(ok=False, state="diverged",
                   detail=f"record {check.head_seq} differs between server and local log")
    else:
        out.update(ok=True, state="in sync" if check.head_seq == local.seq else "behind",
                   detail="")
    return out
