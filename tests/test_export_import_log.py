"""eventlog.transfer: a lossless log copy reproduces every record, hash and the head."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from eventlog import EventLog
from eventlog.events import DecisionRevised, MessageSent
from eventlog.transfer import (
    StoredAppender,
    TransferError,
    check_stream,
    parse_jsonl,
    write_jsonl,
)


def _fill(log: EventLog, n: int, start: int = 0) -> None:
    items = [
        (f"m:{i}".encode(), MessageSent(id=f"m{i}", sender="a", to=["b"], kind="message",
                                        body=f"hello {i} <x>", at=1_700_000_000_000 + i))
        for i in range(start, start + n)
    ]
    log.append(items, state={b"cursor:x": str(start + n).encode()}, at=1_700_000_000_000 + start)
    log.append([(b"d:1", DecisionRevised(topic="t", revision=1, body="b", author="me", at=5))])


def _export(log: EventLog) -> bytes:
    buf = io.BytesIO()
    write_jsonl(log, buf)
    return buf.getvalue()


def _import(data: bytes, target: EventLog) -> None:
    check_stream(parse_jsonl(io.BytesIO(data)))
    with StoredAppender(target, batch=7) as app:
        for item in parse_jsonl(io.BytesIO(data)):
            if isinstance(item, tuple):
                app.put_state(*item)
            elif hasattr(item, "stored"):
                app.add(item)  # type: ignore[arg-type]


def _raw(log: EventLog) -> list[bytes]:
    return [r.value for r in log.iter_raw()]


def test_round_trip_reproduces_head_records_keys_and_state(tmp_path: Path) -> None:
    src = EventLog(tmp_path / "a")
    _fill(src, 40)
    data = _export(src)
    dst = EventLog(tmp_path / "b")
    _import(data, dst)
    assert dst.head() == src.head()
    assert _raw(dst) == _raw(src)
    assert dst.key_count() == src.key_count()
    assert dst.get_state(b"cursor:x") == b"40"
    assert dst.seq_of_key(b"m:7") == src.seq_of_key(b"m:7")
    # the copy goes on working: a new append chains onto the imported head
    res = dst.append([(b"m:new", MessageSent(id="n", sender="a", to=[], kind="message",
                                             body="x", at=1))])
    assert res.appended == 1
    # and re-importing into the now longer log is refused (not a prefix any more)
    with pytest.raises(TransferError, match="not empty"):
        _import(data, dst)
    src.close()
    dst.close()


def test_tampered_record_is_refused_and_nothing_written(tmp_path: Path) -> None:
    src = EventLog(tmp_path / "a")
    _fill(src, 5)
    lines = _export(src).splitlines()
    rec = json.loads(lines[3])
    stored = bytearray(base64.b64decode(rec["stored"]))
    stored[-1] ^= 1
    rec["stored"] = base64.b64encode(bytes(stored)).decode()
    lines[3] = json.dumps(rec).encode()
    bad = b"\n".join(lines) + b"\n"
    dst = EventLog(tmp_path / "b")
    with pytest.raises(TransferError, match="record 3"):
        _import(bad, dst)
    assert dst.head().seq == 0
    src.close()
    dst.close()


def test_truncated_and_foreign_files_are_refused(tmp_path: Path) -> None:
    src = EventLog(tmp_path / "a")
    _fill(src, 3)
    data = _export(src)
    truncated = b"\n".join(data.splitlines()[:-1])
    with pytest.raises(TransferError, match="truncated"):
        check_stream(parse_jsonl(io.BytesIO(truncated)))
    with pytest.raises(TransferError, match="not an agentlog log export"):
        check_stream(parse_jsonl(io.BytesIO(b'{"schemaVersion":1}\n')))
    with pytest.raises(TransferError, match="line 2: not JSON"):
        check_stream(parse_jsonl(io.BytesIO(data.splitlines()[0] + b"\n{nope\n")))
    src.close()


def test_interrupted_transfer_resumes_from_a_prefix(tmp_path: Path) -> None:
    src = EventLog(tmp_path / "a")
    _fill(src, 30)
    data = _export(src)
    dst = EventLog(tmp_path / "b")
    # simulate a crash after the first batches: import only the first 10 records
    with StoredAppender(dst, batch=4) as app:
        for item in parse_jsonl(io.BytesIO(data)):
            if hasattr(item, "stored") and item.seq <= 10:  # type: ignore[union-attr]
                app.add(item)  # type: ignore[arg-type]
    assert dst.head().seq == 10
    _import(data, dst)
    assert dst.head() == src.head()
    assert _raw(dst) == _raw(src)
    src.close()
    dst.close()


def test_foreign_non_empty_target_is_refused(tmp_path: Path) -> None:
    src = EventLog(tmp_path / "a")
    _fill(src, 3)
    dst = EventLog(tmp_path / "b")
    dst.append([(b"other", DecisionRevised(topic="x", revision=1, body="y", author="z", at=1))])
    with pytest.raises(TransferError, match="not empty"):
        _import(_export(src), dst)
    assert dst.head().seq == 2
    src.close()
    dst.close()
