"""EventLog against a simple in-memory model, driven by a Hypothesis state machine.

Random batches (with keys repeated within and across batches), capture state written
with them, reopening, map growth from a tiny map, a map cap that stops growth (LogFull),
and batches that fail after their puts (the transaction must leave no trace). After
every step: a full replay equals the model, bounded reads from arbitrary seqs agree, and
the chain verifies.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from eventlog import EventLog, EventLogError, LogFull
from eventlog.events import OperationRecorded, WriterStarted
from eventlog.verify import scan

SMALL_MAP = 64 * 1024
KEYS = st.sampled_from([f"k{i}".encode() for i in range(40)])
STATE_KEYS = st.sampled_from([b"cur/a", b"cur/b", b"cur/c", b"other/x"])
WRITER = b""  # model marker for "this process's writer event"


class Boom(Exception):
    """Raised from inside the write transaction, after the batch's puts."""


class ExplodingState(Mapping[bytes, bytes | None]):
    """A state mapping that fails half-way: `append` reads it after putting events."""

    def __getitem__(self, key: bytes) -> bytes | None:
        raise KeyError(key)

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[bytes]:
        raise Boom("state iteration failed mid-batch")

    def items(self) -> Any:
        # one state entry goes into the transaction first: it must vanish with the batch
        yield b"cur/a", b"written-then-aborted"
        raise Boom("state iteration failed mid-batch")


def event(key: bytes, size: int, nonce: int) -> OperationRecorded:
    return OperationRecorded(op=key.decode(), at=nonce, details={"blob": "x" * size, "n": nonce})


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="agentlog-sm-")) / "log"
        self.log = EventLog(self.dir, map_size=SMALL_MAP, command="test")
        self.model: list[tuple[bytes, OperationRecorded | None]] = []
        self.keys: set[bytes] = set()
        self.state: dict[bytes, bytes] = {}
        self.duplicates = 0
        self.writer_pending = True
        self.nonce = 0

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.dir.parent, ignore_errors=True)

    # --- model ---------------------------------------------------------------------

    def expect(self, batch: list[tuple[bytes, OperationRecorded]]) -> tuple[int, int]:
        """Apply a batch to the model: (appended, duplicates)."""
        fresh = []
        for key, ev in batch:
            if key in self.keys:
                continue
            self.keys.add(key)
            fresh.append((key, ev))
        if fresh and self.writer_pending:
            self.model.append((WRITER, None))
            self.writer_pending = False
        self.model.extend(fresh)
        self.duplicates += len(batch) - len(fresh)
        return len(fresh), len(batch) - len(fresh)

    def make_batch(self, keys: list[bytes], sizes: list[int]) -> list[tuple[bytes, Any]]:
        out = []
        for key, size in zip(keys, sizes, strict=False):
            self.nonce += 1
            out.append((key, event(key, size, self.nonce)))
        return out

    # --- rules ---------------------------------------------------------------------

    @rule(
        keys=st.lists(KEYS, max_size=12),
        sizes=st.lists(st.integers(0, 3000), min_size=12, max_size=12),
        state=st.dictionaries(STATE_KEYS, st.none() | st.binary(min_size=1, max_size=16)),
    )
    def append(self, keys: list[bytes], sizes: list[int], state: dict[bytes, bytes | None]) -> None:
        batch = self.make_batch(keys, sizes)
        head_before = len(self.model)
        result = self.log.append(batch, state=state, at=1_000 + self.nonce)
        appended, dups = self.expect(batch)
        for k, v in state.items():
            if v is None:
                self.state.pop(k, None)
            else:
                self.state[k] = v
        assert (result.appended, result.duplicates, result.head) == (
            appended,
            dups,
            len(self.model),
        )
        assert result.seqs == tuple(range(len(self.model) - appended + 1, len(self.model) + 1))
        assert result.head >= head_before

    @rule(size=st.integers(20_000, 200_000))
    def append_big(self, size: int) -> None:
        """A batch far larger than the small map: the map must grow (MapFull + retry)."""
        self.nonce += 1
        key = f"big{self.nonce}".encode()
        batch = [(key, event(key, size, self.nonce))]
        result = self.log.append(batch, at=5)
        self.expect(batch)
        assert result.head == len(self.model)

    @rule(keys=st.lists(KEYS, min_size=1, max_size=6))
    def append_then_fail(self, keys: list[bytes]) -> None:
        """An error inside the transaction after the puts: nothing of the batch remains."""
        batch = self.make_batch([*keys, b"fresh-%d" % self.nonce], [10] * (len(keys) + 1))
        with pytest.raises(Boom):
            self.log.append(batch, state=ExplodingState(), at=7)

    @rule(bad=st.sampled_from([b"", b"x" * 481]))
    def append_bad_key(self, bad: bytes) -> None:
        self.nonce += 1
        batch = [(b"ok-%d" % self.nonce, event(b"ok", 1, self.nonce)), (bad, event(b"b", 1, 0))]
        with pytest.raises(EventLogError, match="idempotency key"):
            self.log.append(batch, at=8)

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = EventLog(self.dir, map_size=SMALL_MAP, command="test")
        self.writer_pending = True

    @precondition(lambda self: len(self.model) > 0)
    @rule(extra=st.integers(1, 4))
    def full_at_cap(self, extra: int) -> None:
        """Reopen with the cap at the current map size; a batch bigger than the map fails
        with LogFull and leaves the log as it was."""
        self.log.close()
        cap = int(EventLog(self.dir, map_size=SMALL_MAP, readonly=True).env.info()["map_size"])
        self.log = EventLog(self.dir, map_size=SMALL_MAP, max_map_size=cap, command="test")
        self.writer_pending = True
        self.nonce += 1
        batch = [
            (b"huge-%d-%d" % (self.nonce, i), event(b"h", cap // 2, i)) for i in range(extra + 1)
        ]
        with pytest.raises(LogFull, match="full"):
            self.log.append(batch, at=9)
        self.reopen()

    @rule(data=st.data())
    def read_back(self, data: st.DataObject) -> None:
        n = len(self.model)
        start = data.draw(st.integers(0, n + 2), label="from_seq")
        limit = data.draw(st.integers(1, 7), label="limit")
        got = self.log.read(start, limit)
        first = max(start, 1)
        want = list(range(first, min(first + limit, n + 1)))
        assert [e.seq for e in got] == want
        for e in got:
            self.check_one(e.seq, e.key, e.event)
        assert (self.log.get(n + 1)) is None

    # --- invariants ----------------------------------------------------------------

    def check_one(self, seq: int, key: bytes, ev: Any) -> None:
        want_key, want_ev = self.model[seq - 1]
        if want_key == WRITER:
            assert isinstance(ev, WriterStarted)
            assert ev.pid == os.getpid() and ev.command == "test"
        else:
            assert key == want_key
            assert ev == want_ev

    @invariant()
    def replay_equals_model(self) -> None:
        got = list(self.log.iter_events(1, batch=5))
        assert [e.seq for e in got] == list(range(1, len(self.model) + 1))
        for e in got:
            self.check_one(e.seq, e.key, e.event)
        assert self.log.head().seq == len(self.model)
        assert self.log.duplicates() == self.duplicates
        for key in list(self.keys)[:5]:
            seq = self.log.seq_of_key(key)
            assert seq is not None and self.model[seq - 1][0] == key

    @invariant()
    def state_equals_model(self) -> None:
        assert dict(self.log.iter_state(b"")) == self.state
        assert dict(self.log.iter_state(b"cur/")) == {
            k: v for k, v in self.state.items() if k.startswith(b"cur/")
        }
        for k in (b"cur/a", b"other/x"):
            assert self.log.get_state(k) == self.state.get(k)

    @invariant()
    def chain_verifies(self) -> None:
        report = scan(self.log, batch=4)
        assert report.ok, report.problems
        assert report.records == report.keys == len(self.model)


LogMachine.TestCase.settings = settings(
    max_examples=75,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestLogMachine = LogMachine.TestCase
