"""docs/events.md agrees with the code: every tag and field, the record layout, the chain."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import lmdb
import msgspec

from eventlog import EventLog
from eventlog.events import ALL_EVENT_TYPES, MessageSent, OperationRecorded, tag_of

DOC = Path(__file__).resolve().parent.parent / "docs" / "events.md"


def sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^#### `([^`]+)`.*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_event_type_and_field_is_documented() -> None:
    docs = sections()
    for cls in ALL_EVENT_TYPES:
        tag = cls.__struct_config__.tag
        assert isinstance(tag, str)
        assert tag in docs, f"docs/events.md lacks a section for {tag}"
        assert f"#### `{tag}` — `{cls.__name__}`" in DOC.read_text(encoding="utf-8")
        table = docs[tag]
        for f in msgspec.structs.fields(cls):
            assert f"| `{f.name}` |" in table, f"{tag}: field {f.name} not documented"
    documented = set(docs)
    known = {c.__struct_config__.tag for c in ALL_EVENT_TYPES}
    assert documented <= known, f"documented but not in events.py: {documented - known}"


def test_record_layout_and_chain_formula_from_raw_bytes(tmp_path: Path) -> None:
    path = tmp_path / "log"
    with EventLog(path, command="doc-test") as log:
        log.append([(b"op-1", OperationRecorded(op="x", at=5))], at=1234)
        log.append(
            [(b"message\x1fm1", MessageSent(id="m1", sender="a", to=["b"], kind="message",
                                            body="hi", at=7))],
            at=5678,
        )
    env = lmdb.open(str(path), max_dbs=8, readonly=True, lock=False)
    with env.begin() as txn:
        events = env.open_db(b"events", txn=txn, create=False)
        keys = env.open_db(b"keys", txn=txn, create=False)
        rows = list(txn.cursor(db=events))
        index = dict(txn.cursor(db=keys))
    env.close()
    prev = bytes(32)
    for n, (k, v) in enumerate(rows, start=1):
        assert k == n.to_bytes(8, "big")
        assert v[0] == 0x01
        stored = v[33:]
        prev = hashlib.sha256(prev + n.to_bytes(8, "big") + stored).digest()
        assert v[1:33] == prev
        assert stored[:4] == b"\x83\xa2at"
        envelope = msgspec.msgpack.decode(stored)
        assert list(envelope) == ["at", "key", "event"]
        assert index[envelope["key"]] == k
    assert len(rows) == 3  # writer.started, then the two events
    last = msgspec.msgpack.decode(rows[-1][1][33:])
    assert last["at"] == 5678 and last["key"] == b"message\x1fm1"
    assert last["event"] == {"type": "message.sent", "id": "m1", "sender": "a", "to": ["b"],
                             "kind": "message", "body": "hi", "at": 7}  # defaults omitted
    first = msgspec.msgpack.decode(rows[0][1][33:])
    assert first["event"]["type"] == "writer.started"
    assert tag_of(OperationRecorded(op="x", at=1)) == "operation.recorded"
