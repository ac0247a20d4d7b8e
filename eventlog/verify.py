"""Integrity checks of a log: structure, hash chain, gaplessness, key index.

A corrupt LMDB page can abort the process that reads it, so `verify_isolated` runs both
checks in child processes on a copy: LMDB's own offline structural audit
(`python -m lmdb verify`, which reads raw bytes) and this module's chain scan
(`python -m eventlog.verify DIR`). The caller only parses their output.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import lmdb
import msgspec

from eventlog import chain, codec
from eventlog.errors import CorruptRecord, EventLogError
from eventlog.store import RELEASE_BYTES, EventLog


@dataclass
class VerifyReport:
    ok: bool
    records: int = 0
    bytes: int = 0
    head_seq: int = 0
    head_hash: str = chain.GENESIS.hex()
    keys: int = 0
    first_bad_seq: int | None = None
    reason: str | None = None
    structural: str = "not run"
    forgotten: int = 0  # records `agentlog forget` dropped, proven by their forget events
    amended: int = 0  # ... or rewrote without a forgotten string
    forget_events: list[dict[str, object]] = field(default_factory=list)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def scan(log: EventLog, *, batch: int = 10_000) -> VerifyReport:
    """Re-hash every record and check gaps and the key index, in bounded read transactions.

    One pass: record n must have key seq_key(n), format 1, the stored chain hash
    sha256(h_{n-1} || seq_key(n) || stored), a decodable envelope and event (what every reader
    decodes: invalid UTF-8 in a string, say, is refused there and named here), and its idempotency
    key must map to n in the key index; finally the key index must hold exactly as many
    keys as there are records (so it maps keys to records one to one). A forgotten or
    amended record (`eventlog.forget`) is proven by the forget event it names instead of by
    its own bytes: the event must exist, name it, and attest its hash and form.
    Raises nothing for bad data: the first problem is named in the report.
    """
    t0 = time.perf_counter()
    report = VerifyReport(ok=True)
    prev, seq, nbytes, released = chain.GENESIS, 0, 0, 0
    events_db, keys_db = log.db(b"events"), log.db(b"keys")
    sha256, seq_key, decode = hashlib.sha256, chain.seq_key, codec.decode_envelope
    decode_event = codec.decode_event
    header, fmt = codec.HEADER, codec.FORMAT
    from eventlog.events import RecordsForgotten
    from eventlog.forget import Attestations

    attest = Attestations()
    try:
        done = events_db is None
        while not done:
            n = 0
            with log.read_txn() as txn:
                cur = txn.cursor(db=events_db)
                if not cur.set_range(seq_key(seq + 1)):
                    break
                get = txn.get
                for k, v in cur:
                    expected = seq_key(seq + 1)
                    if k != expected:
                        found = chain.key_seq(k) if len(k) == 8 else f"key {k[:16].hex()}"
                        raise CorruptRecord(seq + 1, f"gap: expected seq {seq + 1}, found {found}")
                    seq += 1
                    if len(v) < header:
                        raise CorruptRecord(seq, f"record too short ({len(v)} bytes)")
                    if v[0] == fmt:
                        stored = memoryview(v)[header:]
                        h = sha256(prev + k)
                        h.update(stored)
                        prev = h.digest()
                        if prev != v[1:header]:
                            raise CorruptRecord(seq, "checksum mismatch")
                    elif v[0] in (codec.FORGOTTEN, codec.AMENDED):
                        attest.form(seq, v)
                        prev = bytes(v[1:header])
                        stored = codec.unpack_tomb(v)[3]
                    else:
                        raise CorruptRecord(seq, f"unknown record format {v[0]}")
                    if v[0] == codec.FORGOTTEN:
                        key = bytes(stored)
                    else:
                        try:  # the event too: what restore, reindex and audit would refuse
                            env = decode(stored)
                            ev = decode_event(env.event)
                        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                            raise CorruptRecord(
                                seq, f"does not decode ({str(exc)[:80]})") from exc
                        key = env.key
                        if isinstance(ev, RecordsForgotten):
                            attest.event(seq, ev)
                    if keys_db is None or get(key, db=keys_db) != k:
                        raise CorruptRecord(seq, f"key index does not map {key[:60]!r} here")
                    nbytes += len(v)
                    n += 1
                    if n >= batch:
                        break
                else:
                    done = True
            if nbytes - released >= RELEASE_BYTES:  # the whole log must not stay resident
                log.release_pages()
                released = nbytes
        attest.finish()
        report.forgotten, report.amended = attest.forgotten, attest.amended
        report.forget_events = [
            {"seq": s, "kind": ev.kind, "at": ev.at, "by": ev.by, "forgotten": ev.forgotten,
             "amended": ev.amended} for s, ev in attest.events]
        report.records = report.head_seq = seq
        report.head_hash = prev.hex()
        report.bytes = nbytes
        report.keys = log.key_count()
        if report.keys != seq:
            _find_stray_key(log, seq)
            raise CorruptRecord(seq, f"key index has {report.keys} keys for {seq} records")
    except CorruptRecord as exc:
        report.ok = False
        report.first_bad_seq = exc.seq
        report.reason = exc.reason
        report.problems.append(str(exc))
    except lmdb.Error as exc:
        report.ok = False
        report.first_bad_seq = seq + 1
        report.reason = f"LMDB error reading record {seq + 1}: {exc}"
        report.problems.append(report.reason)
    report.seconds = time.perf_counter() - t0
    return report


def _find_stray_key(log: EventLog, head: int) -> None:
    """Name a key of the index that does not belong to any record (slow; failure path)."""
    for key, seq in log.iter_keys():
        rec = log.read_raw(seq, 1) if seq <= head else []
        if not rec or rec[0].seq != seq:
            raise CorruptRecord(seq, f"key index points to a missing record ({key[:60]!r})")
        value = rec[0].value
        if value and value[0] == codec.FORGOTTEN:
            rec_key = bytes(codec.unpack_tomb(value)[3])
        else:
            try:
                stored = (codec.unpack_tomb(value)[3] if value and value[0] == codec.AMENDED
                          else codec.unpack_value(value)[2])
                rec_key = codec.decode_envelope(stored).key
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        if rec_key != key:
            raise CorruptRecord(seq, f"key index maps {key[:60]!r} to a record of another key")


def _timeout_for(env_dir: Path) -> float:
    """Generous: a minute plus 5 MB/s of data (a corrupt page must not hang a caller)."""
    size = (env_dir / "data.mdb").stat().st_size if (env_dir / "data.mdb").exists() else 0
    return 60.0 + size / 5e6


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str] | None:
    """(exit code, stdout, stderr) of a child, or None when it timed out (it is killed)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    return proc.returncode, out, err


def _structural_result(done: tuple[int, str, str] | None) -> tuple[bool, str]:
    if done is None:
        return False, "structural check timed out"
    code, out, err = done
    if code == 0:
        return True, "ok"
    if code < 0:
        return False, f"structural check died with signal {-code}"
    lines = [ln.strip() for ln in (out + err).splitlines() if ln.strip()]
    return False, "; ".join(lines[:5]) or f"exit {code}"


def _chain_result(done: tuple[int, str, str] | None) -> VerifyReport:
    if done is None:
        return VerifyReport(ok=False, reason="chain scan timed out")
    code, out, err = done
    if code < 0:
        return VerifyReport(ok=False, reason=f"chain scan died with signal {-code}")
    try:
        return VerifyReport(**json.loads(out))
    except (json.JSONDecodeError, TypeError):
        tail = (err.strip().splitlines() or ["no output"])[-1]
        return VerifyReport(ok=False, reason=f"chain scan failed: {tail}")


def structural_check(env_dir: Path, timeout: float | None = None) -> tuple[bool, str]:
    """LMDB's offline structural audit of `env_dir` (raw bytes), in a child process."""
    proc = _start(["-m", "lmdb", "verify", "-e", str(env_dir)])
    return _structural_result(_finish(proc, timeout or _timeout_for(env_dir)))


def chain_check(env_dir: Path, timeout: float | None = None) -> VerifyReport:
    """`scan` of the log in `env_dir`, in a child process (which may die; this won't)."""
    proc = _start(["-m", "eventlog.verify", str(env_dir)])
    return _chain_result(_finish(proc, timeout or _timeout_for(env_dir)))


def verify_isolated(path: Path, live: EventLog | None = None) -> VerifyReport:
    """Verify the log in directory `path` without risking this process.

    With `live` (the open log of `path`), a consistent snapshot is taken with LMDB's copy;
    otherwise `data.mdb` is copied as raw bytes (it may be corrupt: never opened here).
    The structural audit and the chain scan run at the same time, each in its own child.
    """
    t0 = time.perf_counter()
    if not (path / "data.mdb").is_file():
        raise EventLogError(f"no event log at {path} (no data.mdb)")
    with tempfile.TemporaryDirectory(prefix="agentlog-verify-") as tmp:
        snap = Path(tmp) / "log"
        snap.mkdir()
        try:
            if live is not None:
                live.copy_to(snap, compact=False)
            else:
                shutil.copyfile(path / "data.mdb", snap / "data.mdb")
        except (OSError, lmdb.Error) as exc:
            raise EventLogError(f"cannot copy {path} for verification: {exc}") from exc
        timeout = _timeout_for(snap)
        struct_proc = _start(["-m", "lmdb", "verify", "-e", str(snap)])
        chain_proc = _start(["-m", "eventlog.verify", str(snap)])
        report = _chain_result(_finish(chain_proc, timeout))
        ok_struct, msg = _structural_result(_finish(struct_proc, timeout))
        report.structural = msg
        if not ok_struct:
            report.ok = False
            report.problems.insert(0, f"structure: {msg}")
            if report.reason is None:
                report.reason = f"structure: {msg}"
    report.seconds = time.perf_counter() - t0
    return report


def _main(argv: list[str]) -> int:
    env_dir = Path(argv[0])
    try:
        log = EventLog(env_dir, readonly=True, create=False)
    except Exception as exc:  # the child reports any failure as data
        print(json.dumps(VerifyReport(ok=False, reason=f"cannot open: {exc}").to_dict()))
        return 1
    report = scan(log)
    log.close()
    print(json.dumps(report.to_dict()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
