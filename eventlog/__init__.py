"""agentlog's source of truth: an append-only, SHA-256-chained LMDB event log."""

from __future__ import annotations

from eventlog.errors import CorruptRecord, EventLogError, LogFull, LogMissing, WriterBusy
from eventlog.records import AppendResult, Head, StoredEvent
from eventlog.store import EventLog, now_ms, open_log

__all__ = [
    "AppendResult",
    "CorruptRecord",
    "EventLog",
    "EventLogError",
    "Head",
    "LogFull",
    "LogMissing",
    "StoredEvent",
    "WriterBusy",
    "now_ms",
    "open_log",
]
