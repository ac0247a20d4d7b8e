"""Lossless transfer of a whole log: every record with its seq, time, key and chain hash.

The transfer format is JSON Lines (UTF-8), bounded in memory on both sides:

    {"format": "agentlog-log", "version": 1, "head": {"seq": N, "hash": HEX}}   header
    {"seq": 1, "at": MS, "key": B64, "hash": HEX, "stored": B64}                one a record
    {"seq": 2, "at": 0, "key": B64, "hash": HEX, "form": B64}                   a forgotten
                                                                                 or amended one
    {"state": B64, "value": B64}                                                 capture state
    {"end": true, "records": N, "head": {"seq": N, "hash": HEX}}                 trailer

`stored` is the record's exact stored bytes (the MessagePack envelope the chain hashes), so
a copy made with `StoredAppender` has the same bytes, the same hashes and the same head.
`form` is the whole LMDB value of a record `agentlog forget` replaced (`eventlog.forget`):
copied as it is, its chain hash taken as stored (the copy's `verify` proves it).

Promises of `StoredAppender` (the only way to write records that were not encoded here):
- it re-verifies the chain as it appends: seqs must run 1, 2, … with no gap, every stored
  envelope must decode, its time and key must be the ones given, and
  sha256(h_{n-1} || seq || stored) must equal the given hash, and no path field may be one
  `restore` refuses (`eventlog.untrusted`), else `TransferError` and the current batch is
  not committed (`check_stream` applies the same checks without writing);
- it refuses a target log that already holds records, unless those records are exactly a
  prefix of the incoming stream (same seq and chain hash at the target's head), which makes
  an interrupted transfer resumable and a repeated one a no-op;
- it never adds a writer event and never changes the time or key of a record;
- batches of at most `batch` records or `batch_bytes` bytes commit one LMDB write
  transaction each, holding the writer lock for the whole transfer.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import lmdb
import msgspec

from eventlog import chain, codec
from eventlog.errors import CorruptRecord, EventLogError
from eventlog.records import Head
from eventlog.store import EventLog
from eventlog.untrusted import bad_event

FORMAT_NAME = "agentlog-log"
FORMAT_VERSION = 1


class TransferError(EventLogError):
    """A transferred record or file is malformed, breaks the chain, or cannot be appended."""


@dataclass(frozen=True, slots=True)
class TransferRecord:
    seq: int
    at: int
    key: bytes
    hash: bytes
    stored: bytes
    form: bytes = b""  # the whole value of a forgotten or amended record


@dataclass(frozen=True, slots=True)
class TransferResult:
    records: int
    appended: int
    already_present: int
    state_entries: int
    head: Head


def _event(seq: int, raw: msgspec.Raw) -> object:
    """The event of a transferred record; one every reader would refuse (invalid UTF-8, not
    MessagePack) is refused here, naming the record."""
    try:
        return codec.decode_event(raw)
    except msgspec.DecodeError as exc:
        raise TransferError(f"record {seq}: event does not decode ({str(exc)[:80]})") from None


# --- reading a log ----------------------------------------------------------------------


def iter_records(log: EventLog, *, batch: int = 64) -> Iterator[TransferRecord]:
    """Every record of `log` from seq 1, its chain re-checked (`CorruptRecord` if broken)."""
    prev, expected = chain.GENESIS, 1
    for raw in log.iter_raw(1, batch):
        if raw.seq != expected:
            raise CorruptRecord(expected, f"gap: expected seq {expected}, found {raw.seq}")
        fmt, h, stored = codec.unpack_value(raw.value)
        if fmt in (codec.FORGOTTEN, codec.AMENDED):
            yield _form_record(raw.seq, bytes(raw.value))
            prev, expected = h, expected + 1
            continue
        if fmt != codec.FORMAT:
            raise CorruptRecord(raw.seq, f"unknown record format {fmt}")
        prev = chain.link(prev, raw.seq, stored)
        if prev != h:
            raise CorruptRecord(raw.seq, "checksum mismatch")
        try:
            env = codec.decode_envelope(stored)
        except msgspec.DecodeError as exc:
            raise CorruptRecord(raw.seq, f"does not decode ({str(exc)[:80]})") from None
        yield TransferRecord(raw.seq, env.at, env.key, h, bytes(stored))
        expected += 1


def _form_record(seq: int, value: bytes) -> TransferRecord:
    """A forgotten or amended record as transferred (its key for the key index)."""
    if len(value) < codec.TOMB_HEADER or codec.unpack_tomb(value)[2] <= seq:
        raise CorruptRecord(seq, "a forgotten record that names no later forget event")
    fmt, h, _, body = codec.unpack_tomb(value)
    try:
        key = bytes(body) if fmt == codec.FORGOTTEN else codec.decode_envelope(body).key
    except msgspec.DecodeError as exc:
        raise CorruptRecord(seq, f"does not decode ({str(exc)[:80]})") from None
    return TransferRecord(seq, 0, key, h, b"", value)


def write_jsonl(log: EventLog, out: IO[bytes], *, batch: int = 64) -> TransferResult:
    """Write the whole log (records, then capture state) to `out` in the transfer format."""
    head = log.head()
    _line(out, {"format": FORMAT_NAME, "version": FORMAT_VERSION,
                "head": {"seq": head.seq, "hash": head.hex}})
    n = 0
    for rec in iter_records(log, batch=batch):
        if rec.seq > head.seq:
            break  # appended after we started: the header names the head we promise
        body = {"form": _b64(rec.form)} if rec.form else {"stored": _b64(rec.stored)}
        _line(out, {"seq": rec.seq, "at": rec.at, "key": _b64(rec.key), "hash": rec.hash.hex(),
                    **body})
        n += 1
    states = 0
    for k, v in log.iter_state(b""):
        _line(out, {"state": _b64(k), "value": _b64(v)})
        states += 1
    _line(out, {"end": True, "records": n, "head": {"seq": head.seq, "hash": head.hex}})
    return TransferResult(n, 0, 0, states, head)


def _line(out: IO[bytes], obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


# --- parsing a transfer file --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransferFile:
    """What a header promises; filled while `parse_jsonl` runs."""

    head_seq: int
    head_hash: str


def parse_jsonl(
    lines: Iterable[bytes],
) -> Iterator[TransferRecord | tuple[bytes, bytes] | TransferFile]:
    """Parse the transfer format line by line.

    Yields the header first (`TransferFile`), then records and `(state key, value)` pairs.
    Raises `TransferError` naming the line for anything malformed, a missing trailer, or a
    trailer that disagrees with the header.
    """
    header: TransferFile | None = None
    records = 0
    ended = False
    for no, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if ended:
            raise TransferError(f"line {no}: data after the end line")
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TransferError(f"line {no}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise TransferError(f"line {no}: expected a JSON object")
        try:
            if header is None:
                if obj.get("format") != FORMAT_NAME or obj.get("version") != FORMAT_VERSION:
                    raise TransferError(
                        f"line {no}: not an agentlog log export (expected format "
                        f"{FORMAT_NAME!r} version {FORMAT_VERSION})"
                    )
                header = TransferFile(int(obj["head"]["seq"]), str(obj["head"]["hash"]))
                yield header
            elif "seq" in obj:
                records += 1
                form = "form" in obj
                yield TransferRecord(
                    seq=_int(obj["seq"]),
                    at=_int(obj["at"]),
                    key=base64.b64decode(obj["key"], validate=True),
                    hash=bytes.fromhex(obj["hash"]),
                    stored=b"" if form else base64.b64decode(obj["stored"], validate=True),
                    form=base64.b64decode(obj["form"], validate=True) if form else b"",
                )
            elif "state" in obj:
                yield (base64.b64decode(obj["state"], validate=True),
                       base64.b64decode(obj["value"], validate=True))
            elif obj.get("end") is True:
                if _int(obj["records"]) != records or _int(obj["head"]["seq"]) != header.head_seq:
                    raise TransferError(
                        f"line {no}: end line says {obj['records']} records / head "
                        f"{obj['head']['seq']}, file has {records} / header {header.head_seq}"
                    )
                ended = True
            else:
                raise TransferError(f"line {no}: unknown line (keys {sorted(obj)[:5]})")
        except TransferError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise TransferError(f"line {no}: malformed ({type(exc).__name__}: {exc})") from None
    if header is None:
        raise TransferError("empty file: no header line")
    if not ended:
        raise TransferError(f"truncated file: no end line after {records} records")


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"expected a non-negative integer, got {v!r}")
    return v


# --- writing pre-encoded records ----------------------------------------------------------


class StoredAppender:
    """Append records of another log, preserving seq, time, key and hash (see module doc).

    Use as a context manager: `add` each record in order, `put_state` capture state, and
    leave the block to commit the last batch (an exception discards the open batch).
    """

    def __init__(self, log: EventLog, *, batch: int = 1000,
                 batch_bytes: int = 16 * 1024 * 1024) -> None:
        if log.readonly:
            raise TransferError("log opened read-only")
        self.log = log
        self.batch = batch
        self.batch_bytes = batch_bytes
        self._bytes = 0
        self._stack = contextlib.ExitStack()
        self._rows: list[tuple[bytes, bytes, bytes]] = []  # (key, seq key, value)
        self._state: dict[bytes, bytes] = {}
        self._target = Head(0, chain.GENESIS)
        self._prev = chain.GENESIS
        self._seq = 0
        self.appended = 0
        self.already_present = 0
        self.state_entries = 0

    def __enter__(self) -> StoredAppender:
        self._stack.enter_context(self.log.exclusive())
        self._target = self.log.head()
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            if exc_type is None:
                self._flush()
                self._flush_state()
                if self._seq < self._target.seq:
                    raise TransferError(
                        f"target log is not empty: it holds {self._target.seq} records but the "
                        f"transfer has only {self._seq}"
                    )
        finally:
            self._stack.close()

    def add(self, rec: TransferRecord) -> None:
        seq = self._seq + 1
        if rec.seq != seq:
            raise TransferError(f"record {rec.seq}: expected seq {seq} (records must be gapless)")
        if rec.form:
            _check_form(rec)
            self._take(seq, rec.hash, rec.key, rec.form)
            return
        try:
            env = codec.decode_envelope(rec.stored)
        except Exception as exc:  # msgspec raises DecodeError/ValidationError
            raise TransferError(f"record {seq}: stored bytes do not decode ({exc})") from None
        if env.at != rec.at or env.key != rec.key:
            raise TransferError(f"record {seq}: time or key differ from its stored bytes")
        why = bad_event(_event(seq, env.event))
        if why is not None:
            raise TransferError(f"record {seq}: {why}")
        if not env.key or len(env.key) > 480:
            raise TransferError(f"record {seq}: idempotency key must be 1..480 bytes")
        h = chain.link(self._prev, seq, rec.stored)
        if h != rec.hash:
            raise TransferError(f"record {seq}: chain hash mismatch")
        self._take(seq, h, env.key, codec.pack_value(h, rec.stored))

    def _take(self, seq: int, h: bytes, key: bytes, value: bytes) -> None:
        self._prev, self._seq = h, seq
        if seq <= self._target.seq:
            if seq == self._target.seq and h != self._target.hash:
                raise TransferError(
                    f"target log is not empty and differs from the transfer at record {seq}"
                )
            self.already_present += 1
            return
        self._rows.append((key, chain.seq_key(seq), value))
        self._bytes += len(value)
        if len(self._rows) >= self.batch or self._bytes >= self.batch_bytes:
            self._flush()

    def put_state(self, key: bytes, value: bytes) -> None:
        self._state[key] = value
        if len(self._state) >= self.batch:
            self._flush_state()

    def _flush(self) -> None:
        if not self._rows:
            return
        rows = self._rows
        self._retry(lambda: self._write_rows(rows))
        self.appended += len(rows)
        self._rows = []
        self._bytes = 0

    def _write_rows(self, rows: list[tuple[bytes, bytes, bytes]]) -> None:
        events_db, keys_db = self.log.db(b"events"), self.log.db(b"keys")
        with self.log.env.begin(write=True) as txn:
            cur = txn.cursor(db=events_db)
            for key, skey, value in rows:
                seq = chain.key_seq(skey)
                if not txn.put(key, skey, db=keys_db, overwrite=False):
                    raise TransferError(f"record {seq}: idempotency key repeats an earlier one")
                if not cur.put(skey, value, append=True):
                    raise CorruptRecord(seq, "append refused: key out of order")

    def _flush_state(self) -> None:
        if not self._state:
            return
        items = list(self._state.items())
        self._retry(lambda: self._write_state(items))
        self.state_entries += len(items)
        self._state = {}

    def _write_state(self, items: list[tuple[bytes, bytes]]) -> None:
        with self.log.env.begin(write=True) as txn:
            for k, v in items:
                txn.put(k, v, db=self.log.db(b"state"))

    def _retry(self, write: Any) -> None:
        for _ in range(64):
            try:
                write()
                return
            except lmdb.MapFullError:
                self.log.grow_map()
            except lmdb.MapResizedError:
                self.log.env.set_mapsize(0)
        raise TransferError(f"could not grow {self.log.path} enough for a batch")

    def result(self) -> TransferResult:
        return TransferResult(
            records=self._seq,
            appended=self.appended,
            already_present=self.already_present,
            state_entries=self.state_entries,
            head=Head(self._seq, self._prev),
        )


def check_stream(
    items: Iterable[TransferRecord | tuple[bytes, bytes] | TransferFile],
) -> TransferResult:
    """Verify a parsed transfer without writing: gapless seqs, chain, header head.

    Constant memory: a repeated idempotency key (possible only in a forged file, since the
    chain hash would otherwise break) is caught by `StoredAppender` when it is appended.
    """
    header: TransferFile | None = None
    prev, seq, states = chain.GENESIS, 0, 0
    for item in items:
        if isinstance(item, TransferFile):
            header = item
        elif isinstance(item, TransferRecord):
            seq += 1
            if item.seq != seq:
                raise TransferError(f"record {item.seq}: expected seq {seq}")
            if item.form:
                _check_form(item)
                prev = item.hash
                continue
            try:
                env = codec.decode_envelope(item.stored)
            except Exception as exc:
                raise TransferError(f"record {seq}: stored bytes do not decode ({exc})") from None
            if env.at != item.at or env.key != item.key:
                raise TransferError(f"record {seq}: time or key differ from its stored bytes")
            why = bad_event(_event(seq, env.event))
            if why is not None:  # a path field restore would refuse: never bring it in
                raise TransferError(f"record {seq}: {why}")
            prev = chain.link(prev, seq, item.stored)
            if prev != item.hash:
                raise TransferError(f"record {seq}: chain hash mismatch")
        else:
            states += 1
    if header is not None and (header.head_seq != seq or header.head_hash != prev.hex()):
        raise TransferError(
            f"header names head {header.head_seq} {header.head_hash[:16]}…, records end at "
            f"{seq} {prev.hex()[:16]}…"
        )
    return TransferResult(seq, 0, 0, states, Head(seq, prev))


def _check_form(rec: TransferRecord) -> None:
    """A transferred forgotten or amended record: its form, hash and key agree."""
    try:
        got = _form_record(rec.seq, rec.form)
    except CorruptRecord as exc:
        raise TransferError(str(exc)) from None
    if got.hash != rec.hash or got.key != rec.key or not rec.key or len(rec.key) > 480:
        raise TransferError(f"record {rec.seq}: its forgotten form disagrees with its line")
    if got.form[0] == codec.AMENDED:
        why = bad_event(_event(rec.seq, codec.decode_envelope(got.form[codec.TOMB_HEADER:]).event))
        if why is not None:
            raise TransferError(f"record {rec.seq}: {why}")
