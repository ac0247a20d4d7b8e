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


class WriterBusy(EventLogError):
    """Another process held the writer lock for longer than the timeout."""


class LogFull(EventLogError):
    """The log could not grow: the map reached its cap or the disk is full."""


class LogMissing(EventLogError):
    """No log exists at the given path."""
