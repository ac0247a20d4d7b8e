"""Errors of the event log. Only `cli` turns them into exit codes."""

from __future__ import annotations


class EventLogError(Exception):
    """Base of every error raised by `eventlog`."""


class CorruptRecord(EventLogError):
    """A stored record does not match its checksum, its seq or the key index."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(f"record {seq}: {reason}")
        self.seq = seq
        self.reason = reason


class DamagedPage(CorruptRecord):
    """LMDB refused a page of the log's file (MDB_CORRUPTED, a page not found): the records
    from `seq` on could not be read. `seq` is 0 when no record was being read (the head)."""

    def __init__(self, seq: int, reason: str) -> None:
        super().__init__(seq, reason)
        if not seq:
            self.args = (f"the log's file: {reason}",)


class WriterBusy(EventLogError):
    """Another process held the writer lock for longer than the timeout."""


class LogFull(EventLogError):
    """The log could not grow: the map reached its cap or the disk is full."""


class LogMissing(EventLogError):
    """No log exists at the given path."""
