"""agentlog's source of truth: an append-only, SHA-256-chained LMDB event log.

The names below are loaded on first use (PEP 562), so `eventlog.peek` — the search path's
head read — does not pay for msgspec and the event types.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventlog.errors import CorruptRecord, EventLogError, LogFull, LogMissing, WriterBusy
    from eventlog.records import AppendResult, Head, StoredEvent
    from eventlog.store import EventLog, now_ms, open_log

_WHERE = {
    "AppendResult": "eventlog.records",
    "CorruptRecord": "eventlog.errors",
    "EventLog": "eventlog.store",
    "EventLogError": "eventlog.errors",
    "Head": "eventlog.records",
    "LogFull": "eventlog.errors",
    "LogMissing": "eventlog.errors",
    "StoredEvent": "eventlog.records",
    "WriterBusy": "eventlog.errors",
    "now_ms": "eventlog.store",
    "open_log": "eventlog.store",
}

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


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'eventlog' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value
