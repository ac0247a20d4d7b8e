"""Census of what capture holds: per layout, files seen, bytes, records, unknown types.

Promises:
- reads the log in bounded read transactions and the capture cursors; never the sources,
  except `claude_retention`, which lists transcript metadata and reads `settings.json`
  of a Claude root (read-only);
- records are counted by replaying captured bytes through the pure parsers
  (`readers.parse`) when that module is present; without it the counts are None;
- line assembly across chunks is bounded: a line longer than `MAX_LINE` is counted as
  oversized and skipped, never held whole.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from eventlog import EventLog
from eventlog.events import ChunkCaptured, FileSnapshotted, RowSnapshotted, SourceSeen
from readers import cursor as cur
from readers.capture_state import is_pending
from readers.restore import payload

DAY_MS = 86_400_000


class _Lines:
    """Reassembles complete lines of one source's newest generation."""

    __slots__ = ("buf", "gen", "skipping", "start")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.gen = -1
        self.start = 0
        self.skipping = False


def census(log: EventLog, *, parse: bool = True,
           oversized: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per layout: files, bytes, records, unknown record types, pending, missing, oversized
    (rewritten files over the snapshot bound: not captured); `oversized`, when given, gets
    each such file's `{path, bytes}`."""
    parser: Any = None
    if parse:
        from readers import parse as parser
    from readers.records import MAX_LINE, SourceInfo

    kinds: dict[str, dict[str, Any]] = {}
    infos: dict[str, Any] = {}
    lines: dict[str, _Lines] = {}
    states: dict[str, dict[str, Any]] = {}
    unknown: dict[str, Counter[str]] = {}

    def kind(layout: str) -> dict[str, Any]:
        k = kinds.get(layout)
        if k is None:
            k = kinds[layout] = {"files": 0, "bytes": 0, "records": 0 if parser else None,
                                 "pending": 0, "missing": 0, "oversized_lines": 0,
                                 "oversized": 0}
            unknown[layout] = Counter()
        return k

    def feed(info: Any, result: Any) -> None:
        k = kind(info.layout)
        k["records"] += len(result.records)
        unknown[info.layout].update(result.unknown)

    def state_for(info: Any) -> dict[str, Any]:
        scope = parser.state_scope(info)
        return states.setdefault(scope, {})

    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, SourceSeen):
            if ev.source not in infos:
                infos[ev.source] = SourceInfo(ev.source, ev.agent, ev.root, ev.path, ev.layout)
                kind(ev.layout)["files"] += 1
            continue
        if not isinstance(ev, ChunkCaptured | FileSnapshotted | RowSnapshotted):
            continue
        info = infos.get(ev.source)
        if info is None:
            continue
        k = kind(info.layout)
        k["bytes"] += ev.size if not isinstance(ev, RowSnapshotted) else len(ev.data)
        if parser is None:
            continue
        data = payload(ev.codec, ev.data)
        if isinstance(ev, FileSnapshotted):
            feed(info, parser.parse_snapshot(info, state_for(info), data))
        elif isinstance(ev, RowSnapshotted):
            feed(info, parser.parse_row(info, state_for(info), ev.table, ev.row_id, data))
        else:
            ln = lines.setdefault(ev.source, _Lines())
            if ev.generation != ln.gen or ev.offset != ln.start + len(ln.buf):
                if ev.generation == ln.gen and ev.offset < ln.start + len(ln.buf):
                    continue  # overlapping copy of bytes already seen
                ln.buf, ln.gen, ln.start, ln.skipping = bytearray(), ev.generation, ev.offset, False
            ln.buf += data
            pos = 0
            while True:
                nl = ln.buf.find(b"\n", pos)
                if nl < 0:
                    break
                if ln.skipping:
                    ln.skipping = False
                else:
                    line = bytes(ln.buf[pos:nl])
                    feed(info, parser.parse_line(info, state_for(info), line, ln.start + pos,
                                                 ev.generation))
                pos = nl + 1
            del ln.buf[:pos]
            ln.start += pos
            if len(ln.buf) > MAX_LINE:
                k["oversized_lines"] += 0 if ln.skipping else 1
                ln.skipping = True
                ln.start += len(ln.buf)
                ln.buf = bytearray()
    for _, value in log.iter_state(cur.CURSOR_PREFIX):
        c = cur.decode_cursor(value)
        k = kind(c.layout)
        if c.missing:
            k["missing"] += 1
        elif is_pending(c):
            k["pending"] += 1
        elif c.oversized:
            k["oversized"] += 1
            if oversized is not None:
                seen = infos.get(c.source)
                where = os.path.join(seen.root, seen.path) if seen is not None else c.source
                oversized.append({"path": where, "bytes": c.size})
    for layout, k in kinds.items():
        k["unknown_types"] = dict(unknown[layout].most_common()) if parser else None
    return dict(sorted(kinds.items()))


def pending_sources(log: EventLog, limit: int = 50) -> list[dict[str, Any]]:
    """The sources capture has not finished (at most `limit`): each with its layout, the
    bytes captured and the file's size at the last poll, and why it waits."""
    out: list[dict[str, Any]] = []
    for _, value in log.iter_state(cur.CURSOR_PREFIX):
        c = cur.decode_cursor(value)
        if not is_pending(c):
            continue
        if c.backlog:
            why = "queued: capture has not reached it yet"
        elif c.size < 0:
            why = "seen, not read yet"
        else:
            why = (f"{c.size - c.offset} byte(s) after the last newline: a line not yet ended "
                   "(captured when it ends)")
        out.append({"source": c.source, "layout": c.layout, "captured": c.offset,
                    "size": c.size, "why": why})
        if len(out) >= limit:
            break
    return out


def captured_sources(log: EventLog) -> set[str]:
    """Sources with a cursor (registered by capture) whose bytes are in the log."""
    out: set[str] = set()
    for _, value in log.iter_state(cur.CURSOR_PREFIX):
        c = cur.decode_cursor(value)
        if not is_pending(c) and not c.missing and not c.oversized:
            out.add(c.source)
    return out


def claude_retention(
    root: Path, *, now_ms: int | None = None, horizon_days: int = 7,
    captured: set[str] | None = None,
) -> dict[str, Any]:
    """Claude Code's `cleanupPeriodDays` (default 30) and the transcripts it deletes within
    `horizon_days` (by modification time), with how many of those are fully captured."""
    from readers.discovery import walk
    from readers.roots import source_id

    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    days: Any = 30
    origin = "default"
    try:
        settings = json.loads((root / "settings.json").read_bytes())
        if isinstance(settings, dict) and "cleanupPeriodDays" in settings:
            days, origin = settings["cleanupPeriodDays"], "settings.json"
    except (OSError, ValueError):
        pass
    if not isinstance(days, int | float) or isinstance(days, bool):
        days, origin = 30, "default (invalid setting)"
    transcripts = expiring = safe = 0
    cutoff = now - (days - horizon_days) * DAY_MS
    for entry in walk("claude", str(root)):
        if entry.layout not in ("claude.session", "claude.subagent"):
            continue
        try:
            mtime = os.stat(root / entry.rel).st_mtime_ns // 1_000_000
        except OSError:
            continue
        transcripts += 1
        if mtime < cutoff:
            expiring += 1
            if captured is not None and source_id("claude", root, entry.rel) in captured:
                safe += 1
    return {
        "root": str(root),
        "cleanupPeriodDays": days,
        "setting": origin,
        "transcripts": transcripts,
        f"deleted_within_{horizon_days}_days": expiring,
        "of_which_captured": safe if captured is not None else None,
    }
