"""The `capture` section of `agentlog audit` (called from cli.services.audit.audit_sections).

Per source layout: files seen, bytes captured, records parsed, unknown record types with
counts, files pending, missing and oversized (`oversized`: each rewritten file over the
snapshot bound, `{path, bytes}`: not captured until `capture.snapshotMaxMiB` allows it);
the configured roots (missing ones reported); and
Claude Code's retention risk: `cleanupPeriodDays` (default 30) and how many transcripts it
will delete within 7 days, with how many of those are already captured; and, by name, what
the counts of `search`'s footer stand for: the files capture has not finished (and why), the
sources history.db holds unparsed bytes of, and each unknown record type with its file.
"""

from __future__ import annotations

from typing import Any

from cli.services.config import Home
from eventlog import EventLog


def audit_section(home: Home, log: EventLog) -> dict[str, Any]:
    from cli.services.capture.ops import capture_roots
    from projections.query import coverage
    from readers.census import captured_sources, census, claude_retention, pending_sources

    roots = capture_roots(home, {})
    per_source = coverage(home.history_db, per_source=True)["perSource"]
    oversized: list[dict[str, Any]] = []
    kinds = census(log, oversized=oversized)
    captured = captured_sources(log)
    retention = [
        claude_retention(r.path, captured=captured)
        for r in roots
        if r.agent == "claude" and r.exists
    ]
    return {
        "capture": {
            "roots": [r.to_dict() for r in roots],
            "missing_roots": [str(r.path) for r in roots
                              if not r.exists and r.origin != "default"],
            "by_layout": kinds,
            "files": sum(k["files"] for k in kinds.values()),
            "bytes": sum(k["bytes"] for k in kinds.values()),
            "pending": sum(k["pending"] for k in kinds.values()),
            "oversized": oversized,
            "parsers": "readers.parse" if any(
                k["records"] is not None for k in kinds.values()) else "unavailable",
            "claude_retention": retention,
            # what the counts of `search`'s footer are: each file named
            "pending_files": pending_sources(log),
            "index_pending": [
                {"source": r["source"], "agent": r["agent"], "pendingBytes": r["pendingBytes"],
                 "unparsed": r["unparsed"]}
                for r in per_source if r["pendingBytes"] or r["unparsed"]],
            "unknown_records": [
                {"type": kind, "count": n, "source": r["source"]}
                for r in per_source for kind, n in r["unknownTypes"].items()],
        }
    }
