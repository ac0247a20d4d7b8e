"""Integrity checks of a log: structure, hash chain, gaplessness, key index.

A corrupt LMDB page can abort the process that reads it, so `verify_isolated` runs both
checks in child processes on a copy: LMDB's own offline structural audit
(`python -m lmdb verify`, which reads raw bytes) and this module's chain scan
(`python -m eventlog.verify DIR`). The caller only parses their output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import msgspec

from eventlog import chain, codec
from eventlog.errors import CorruptRecord, EventLogError
from eventlog.store import EventLog


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
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def scan(log: EventLog, *, batch: int = 5000) -> VerifyReport:
    """Re-hash every record and check the key index, in bounded read transactions.

    Raises nothing for bad data: the first problem is named in the report.
    """
    t0 = time.perf_counter()
    report = VerifyReport(ok=True)
    prev, expected, nbytes = chain.GENESIS, 1, 0
    try:
        for raw in log.iter_raw(1, batch):
            if raw.seq != expected:
                raise CorruptRecord(expected, f"gap: expected seq {expected}, found {raw.seq}")
            if len(raw.value) < codec.HEADER:
                raise CorruptRecord(raw.seq, f"record too short ({len(raw.value)} bytes)")
            fmt, stored_hash, stored = codec.unpack_value(raw.value)
            if fmt != codec.FORMAT:
                raise CorruptRecord(raw.seq, f"unknown record format {fmt}")
            prev = chain.link(prev, raw.seq, stored)
            if prev != stored_hash:
                raise CorruptRecord(raw.seq, "checksum mismatch")
            nbytes += len(raw.value)
            expected += 1
        report.records = expected - 1
        report.head_seq = expected - 1
        report.head_hash = prev.hex()
        report.bytes = nbytes
        keys = 0
        for key, seq in log.iter_keys():
            keys += 1
            rec = log.read_raw(seq, 1)
            if not rec or rec[0].seq != seq:
                raise CorruptRecord(seq, f"key index points to a missing record ({key[:60]!r})")
            try:
                env = codec.decode_envelope(codec.unpack_value(rec[0].value)[2])
            except msgspec.DecodeError as exc:
                raise CorruptRecord(seq, f"undecodable envelope: {exc}") from exc
            if env.key != key:
                raise CorruptRecord(seq, f"key index mismatch for {key[:60]!r}")
        report.keys = keys
        if keys != report.records:
            raise CorruptRecord(
                report.records, f"key index has {keys} keys for {report.records} records"
            )
    except CorruptRecord as exc:
        report.ok = False
        report.first_bad_seq = exc.seq
        report.reason = exc.reason
        report.problems.append(str(exc))
    report.seconds = time.perf_counter() - t0
    return report


def structural_check(env_dir: Path, timeout: float = 600) -> tuple[bool, str]:
    """LMDB's offline structural audit of `env_dir`, in a child process."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "lmdb", "verify", "-e", str(env_dir)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, "structural check timed out"
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode == 0:
        return True, "ok"
    if proc.returncode < 0:
        return False, f"structural check died with signal {-proc.returncode}"
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return False, "; ".join(lines[:5]) or f"exit {proc.returncode}"


def _chain_check_child(env_dir: Path, timeout: float = 3600) -> VerifyReport:
    proc = subprocess.run(
        [sys.executable, "-m", "eventlog.verify", str(env_dir)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode < 0:
        return VerifyReport(ok=False, reason=f"chain scan died with signal {-proc.returncode}")
    try:
        data = json.loads(proc.stdout)
        return VerifyReport(**data)
    except (json.JSONDecodeError, TypeError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return VerifyReport(ok=False, reason=f"chain scan failed: {tail}")


def verify_isolated(path: Path, live: EventLog | None = None) -> VerifyReport:
    """Verify the log in directory `path` without risking this process.

    With `live` (the open log of `path`), a consistent snapshot is taken with LMDB's copy;
    otherwise `data.mdb` is copied as raw bytes (it may be corrupt: never opened here).
    """
    t0 = time.perf_counter()
    if not (path / "data.mdb").exists():
        raise EventLogError(f"no event log at {path}")
    with tempfile.TemporaryDirectory(prefix="agentlog-verify-") as tmp:
        snap = Path(tmp) / "log"
        snap.mkdir()
        if live is not None:
            live.copy_to(snap, compact=False)
        else:
            shutil.copyfile(path / "data.mdb", snap / "data.mdb")
        ok_struct, msg = structural_check(snap)
        report = _chain_check_child(snap)
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
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(_main(sys.argv[1:]))
