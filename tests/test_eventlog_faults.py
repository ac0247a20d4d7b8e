"""Faults: a full map or disk, and corrupt copies of data.mdb.

- Disk full: a small map cap gives a clear LogFull and earlier events stay intact; as
  root, a real 2 MiB tmpfs is filled too (skipped where mounting is not allowed).
- Corruption: bytes flipped in a COPY of data.mdb (a payload byte, page headers, random
  bytes), a truncated file, and a key index or event db edited behind the log's back.
  `agentlog verify --log COPY` exits 1 naming the first bad seq or the reason, and the
  calling process always survives.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import lmdb
import pytest

from eventlog import EventLog, LogFull, chain
from eventlog.events import OperationRecorded
from eventlog.verify import scan, verify_isolated
from tests.conftest import run_cli, unavailable

PAGE = 4096


def op(i: int, size: int = 100) -> tuple[bytes, OperationRecorded]:
    key = f"key-{i:05d}".encode()
    return key, OperationRecorded(op="t", at=i, details={"mark": f"MARK{i:05d}", "pad": "p" * size})


# --- disk full ---------------------------------------------------------------------------


def fill(log: EventLog, size: int) -> tuple[int, Exception]:
    """Append batches of 10 events until an error; (events appended, the error)."""
    i = 0
    while True:
        try:
            log.append([op(i + j, size) for j in range(10)])
        except Exception as exc:
            return i, exc
        i += 10
        assert i < 1_000_000, "never filled"


def test_map_cap_gives_log_full_and_keeps_earlier_events(tmp_path: Path) -> None:
    path = tmp_path / "log"
    log = EventLog(path, map_size=256 * 1024, max_map_size=1024 * 1024)
    appended, err = fill(log, 2000)
    assert isinstance(err, LogFull), repr(err)
    assert "is full" in str(err) and "cap" in str(err) and str(path) in str(err)
    assert appended > 100
    report = scan(log)
    assert report.ok and report.records == appended + 1  # + the writer event
    # still usable for reads, and a small batch still fails cleanly rather than corrupting
    with pytest.raises(LogFull):
        log.append([op(10**6 + j, 5000) for j in range(100)])
    assert log.head().seq == appended + 1
    log.close()
    with EventLog(path) as again:  # without the cap the log grows on
        assert again.append([op(10**7)]).appended == 1
        assert scan(again).ok


@pytest.fixture
def tiny_fs(tmp_path: Path):  # type: ignore[no-untyped-def]
    if os.geteuid() != 0 or shutil.which("mount") is None:
        unavailable("needs root and mount(8) to mount a tmpfs")
    mnt = tmp_path / f"tmpfs-{uuid.uuid4().hex[:8]}"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True
    )
    if res.returncode != 0:
        unavailable(f"cannot mount a tmpfs: {res.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_real_full_disk_gives_log_full_and_keeps_earlier_events(tiny_fs: Path) -> None:
    path = tiny_fs / "log"
    log = EventLog(path, map_size=64 * 1024 * 1024)
    appended, err = fill(log, 3000)
    assert isinstance(err, LogFull), repr(err)
    assert "disk full" in str(err) and "earlier events are intact" in str(err)
    log.close()
    with EventLog(path, readonly=True) as ro:
        report = scan(ro)
    assert report.ok, report.problems
    assert report.records == appended + 1
    assert appended > 100


# --- corruption --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sound_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A log of 400 events (some larger than a page), and the seq of each marker."""
    path = tmp_path_factory.mktemp("sound") / "log"
    with EventLog(path) as log:
        for start in range(0, 400, 50):
            log.append([op(i, 6000 if i % 37 == 0 else 200) for i in range(start, start + 50)])
        seqs = {f"MARK{i:05d}": log.seq_of_key(f"key-{i:05d}".encode()) or 0 for i in range(400)}
    return path, seqs


def copy_of(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    shutil.copyfile(src / "data.mdb", dest / "data.mdb")
    return dest


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    with open(path / "data.mdb", "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ mask]))


def cli_verify(home: Path, log: Path, json_too: bool = True) -> tuple[int, str, dict[str, object]]:
    """`agentlog verify --log LOG`: (exit code, text output, the --json report or {})."""
    text = run_cli(home, "verify", "--log", str(log), timeout=120)
    assert b"Traceback" not in text.stderr
    if not json_too:
        return text.returncode, (text.stdout + text.stderr).decode(), {}
    js = run_cli(home, "verify", "--log", str(log), "--json", timeout=120)
    assert text.returncode == js.returncode and b"Traceback" not in js.stderr
    return text.returncode, (text.stdout + text.stderr).decode(), json.loads(js.stdout)


def cli_verify_json(home: Path, log: Path) -> tuple[int, dict[str, Any]]:
    js = run_cli(home, "verify", "--log", str(log), "--json", timeout=120)
    assert b"Traceback" not in js.stderr
    out: dict[str, Any] = json.loads(js.stdout)
    return js.returncode, out


def test_sound_copy_verifies(sound_log: tuple[Path, dict[str, int]], home: Path) -> None:
    code, out, js = cli_verify(home, sound_log[0])
    assert code == 0 and out.startswith("ok: 401 records"), out
    assert js["ok"] is True and js["structural"] == "ok"


def test_flipped_payload_byte_names_its_record(
    sound_log: tuple[Path, dict[str, int]], home: Path, tmp_path: Path
) -> None:
    path, seqs = sound_log
    bad = copy_of(path, tmp_path / "copy")
    data = (bad / "data.mdb").read_bytes()
    for marker in ("MARK00123", "MARK00037"):  # a small record; one on overflow pages
        off = data.find(marker.encode())
        assert off > 0 and data.find(marker.encode(), off + 1) == -1
        flip(bad, off + 7)
        code, out, js = cli_verify(home, bad)
        assert code == 1
        seq = seqs[marker]
        assert f"record {seq}: checksum mismatch" in out, out
        assert js["first_bad_seq"] == seq and js["reason"] == "checksum mismatch"
        flip(bad, off + 7)  # undo for the next marker
    assert (bad / "data.mdb").read_bytes() == data


def test_flipped_page_headers_fail_verify(
    sound_log: tuple[Path, dict[str, int]], home: Path, tmp_path: Path
) -> None:
    path, _ = sound_log
    npages = (path / "data.mdb").stat().st_size // PAGE
    rng = random.Random(7)
    # pgno, flags, lower/upper of data pages; the meta pages 0 and 1 together
    cases = [(p, field) for p in rng.sample(range(2, npages), 2) for field in (0, 10, 12)]
    for n, (pgno, field) in enumerate(cases):
        bad = copy_of(path, tmp_path / f"hdr{n}")
        flip(bad, pgno * PAGE + field, 0x40)
        code, out, _ = cli_verify(home, bad, json_too=False)
        assert code == 1 and out.startswith("BAD: "), (pgno, field, out)
        if n % 3 == 0:
            report = verify_isolated(bad)  # in this process: it must survive and say why
            assert not report.ok and report.reason and report.reason in out, (report, out)
    both_meta = copy_of(path, tmp_path / "meta")
    flip(both_meta, 0 * PAGE + 16, 0xFF)
    flip(both_meta, 1 * PAGE + 16, 0xFF)
    code, out, _ = cli_verify(home, both_meta, json_too=False)
    assert code == 1 and "BAD" in out


def test_random_flips_never_crash_the_caller(
    sound_log: tuple[Path, dict[str, int]], home: Path, tmp_path: Path
) -> None:
    path, _ = sound_log
    size = (path / "data.mdb").stat().st_size
    rng = random.Random(11)
    detected = 0
    for n in range(8):
        bad = copy_of(path, tmp_path / f"rnd{n}")
        for _ in range(3):
            flip(bad, rng.randrange(2 * PAGE, size), rng.randrange(1, 256))
        report = verify_isolated(bad)
        assert report.ok or report.reason, report
        detected += not report.ok
    assert detected >= 4  # a flip in free space of a page may legitimately go unseen


def test_truncated_copy_fails_verify(
    sound_log: tuple[Path, dict[str, int]], home: Path, tmp_path: Path
) -> None:
    bad = copy_of(sound_log[0], tmp_path / "trunc")
    with open(bad / "data.mdb", "r+b") as f:
        f.truncate((bad / "data.mdb").stat().st_size // 2)
    code, out, js = cli_verify(home, bad)
    assert code == 1 and js["ok"] is False and out.strip()


def _raw_edit(path: Path, db: bytes, fn) -> None:  # type: ignore[no-untyped-def]
    env = lmdb.open(str(path), max_dbs=8, map_size=1 << 30)
    with env.begin(write=True) as txn:
        fn(txn, env.open_db(db, txn=txn))
    env.close()


def test_key_index_and_gap_edits_are_named(
    sound_log: tuple[Path, dict[str, int]], home: Path, tmp_path: Path
) -> None:
    path, seqs = sound_log
    seq = seqs["MARK00200"]

    moved = copy_of(path, tmp_path / "moved")
    _raw_edit(moved, b"keys", lambda t, d: t.put(b"key-00200", chain.seq_key(seq + 1), db=d))
    code, js = cli_verify_json(home, moved)
    assert code == 1 and js["first_bad_seq"] == seq and "key index" in js["reason"], js

    stray = copy_of(path, tmp_path / "stray")
    _raw_edit(stray, b"keys", lambda t, d: t.put(b"zz-stray", chain.seq_key(5), db=d))
    code, js = cli_verify_json(home, stray)
    assert code == 1 and js["first_bad_seq"] == 5 and "another key" in js["reason"], js

    gap = copy_of(path, tmp_path / "gap")
    _raw_edit(gap, b"events", lambda t, d: t.delete(chain.seq_key(seq), db=d))
    code, out, js = cli_verify(home, gap)
    assert code == 1 and js["first_bad_seq"] == seq
    assert f"BAD: record {seq}: gap: expected seq {seq}, found {seq + 1}" in out, out


def test_verify_of_a_missing_log_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run_cli(home, "verify", "--log", str(empty))
    assert res.returncode == 1
    assert b"no event log" in res.stderr and b"Traceback" not in res.stderr
