"""What the log holds: counts by tag and day, capture times, head, size, writers.

A pure scan of the log in bounded read transactions; only writer events are fully
decoded, everything else is counted from its tag.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from eventlog import codec
from eventlog.errors import CorruptRecord
from eventlog.events import WriterStarted
from eventlog.store import EventLog


class _TagOnly(msgspec.Struct):
    type: str = "?"


_tag_dec = msgspec.msgpack.Decoder(_TagOnly)
_writer_dec = msgspec.msgpack.Decoder(WriterStarted)


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")


class TaggedRecord(NamedTuple):
    seq: int
    at: int
    tag: str
    event: msgspec.Raw


def iter_tagged(log: EventLog, batch: int = 5000) -> Iterator[TaggedRecord]:
    """Every record with its tag, the event left undecoded (cheap scans for reports); each
    record is checked against the chain first (`CorruptRecord` at the first bad one)."""
    for raw in log.iter_raw(1, batch, check=True):
        fmt, _, stored = codec.unpack_value(raw.value)
        if fmt == codec.FORGOTTEN:
            yield TaggedRecord(raw.seq, 0, "forgotten", msgspec.Raw(b""))
            continue
        if fmt == codec.AMENDED:
            stored = codec.unpack_tomb(raw.value)[3]
        try:
            env = codec.decode_envelope(stored)
        except msgspec.DecodeError as exc:
            raise CorruptRecord(raw.seq, f"does not decode ({str(exc)[:80]})") from None
        try:
            tag = _tag_dec.decode(env.event).type
        except msgspec.DecodeError:
            tag = "?"
        yield TaggedRecord(raw.seq, env.at, tag, env.event)


def audit(log: EventLog) -> dict[str, Any]:
    by_tag: Counter[str] = Counter()
    by_day: Counter[str] = Counter()
    writers: list[dict[str, Any]] = []
    first = last = None
    count = 0
    for rec in iter_tagged(log):
        tag = rec.tag
        by_tag[tag] += 1
        if tag == "forgotten":  # no time, no content: counted, nothing else
            count += 1
            continue
        day = dt.datetime.fromtimestamp(rec.at / 1000, tz=dt.UTC).date().isoformat()
        by_day[day] += 1
        first = rec.at if first is None else first
        last = rec.at
        count += 1
        if tag == "writer.started":
            try:
                w = _writer_dec.decode(rec.event)
                writers.append(
                    {
                        "seq": rec.seq,
                        "host": w.host,
                        "pid": w.pid,
                        "version": w.version,
                        "command": w.command,
                        "at": iso_ms(w.at),
                    }
                )
            except msgspec.DecodeError:
                pass
    head = log.head()
    return {
        "events": count,
        "by_tag": dict(sorted(by_tag.items())),
        "by_day": dict(sorted(by_day.items())),
        "first_capture": iso_ms(first),
        "last_capture": iso_ms(last),
        "head": {"seq": head.seq, "hash": head.hex},
        "log_bytes": log.size_bytes(),
        "duplicates_skipped": log.duplicates(),
        "writers": writers,
    }
