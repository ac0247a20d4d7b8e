"""Restore: captured sources written back from the log alone, byte for byte.

Promises:
- reads only the log (the original files may be gone) in bounded read transactions, in
  two passes: the first learns each source's newest generation and newest snapshot, the
  second writes bytes at their offsets (memory holds per-source metadata, never a file);
- an append-only file comes back as the bytes of its newest generation; a rewritten file
  as its newest snapshot; a database as JSON Lines per table (the newest capture of
  each row, in capture order) under `<db path>.rows/<table>.jsonl`;
- paths are `DEST/<agent>/<path relative to its root>`, or
  `DEST/<agent>/<root id>/<path>` when that agent has several roots in the selection;
- relative paths that would escape DEST are refused (counted in `skipped`);
- `payload(codec, data)` is the one decoder of captured bytes (zstd or raw).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eventlog import EventLog
from eventlog.events import (
    ChunkCaptured,
    FileSnapshotted,
    RowSnapshotted,
    SourceRewound,
    SourceSeen,
)
from readers import registry
from readers.discovery import kind_of

_decompressor: Any = None


class RestoreError(Exception):
    """A restore could not be written."""


def payload(codec: str, data: bytes) -> bytes:
    """The exact captured bytes of a chunk, snapshot or row."""
    global _decompressor
    if not codec:
        return data
    if codec != "zstd":
        raise RestoreError(f"unknown codec {codec!r}")
    if _decompressor is None:
        import zstandard

        _decompressor = zstandard.ZstdDecompressor()
    out: bytes = _decompressor.decompress(data)
    return out


@dataclass(slots=True)
class _Src:
    seen: SourceSeen
    gen: int = 0
    snap_seq: int = 0
    out: Path | None = None


@dataclass(slots=True)
class RestoreReport:
    files: int = 0
    bytes: int = 0
    rows: int = 0
    tables: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "bytes": self.bytes, "rows": self.rows,
                "tables": self.tables, "skipped": self.skipped}


def _selected(seen: SourceSeen, agent: str | None, session: str | None) -> bool:
    if agent is not None and seen.agent != agent:
        return False
    if session is not None and kind_of(seen.layout) != "rows":
        # opencode parts live under their message's folder: their JSON names the session
        if session in seen.path or seen.layout == "opencode.json":
            return True
        # a reader may know files whose path does not spell the whole session id
        owner = registry.agent_of_layout(seen.layout)
        hook = getattr(registry.reader(owner.name), "may_hold_session", None) if owner else None
        return bool(hook(seen.path, session)) if hook is not None else False
    return True


def _row_matches(data: bytes, session: str) -> bool:
    import json

    try:
        obj = json.loads(data)
    except ValueError:
        return False
    return isinstance(obj, dict) and session in (
        obj.get("session_id"), obj.get("sessionID"), obj.get("sessionId"), obj.get("id"))


def _safe_join(base: Path, rel: str) -> Path | None:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None
    return base.joinpath(*parts)


def scan_sources(log: EventLog) -> dict[str, _Src]:
    """Pass 1: every source, its newest generation and its newest snapshot's seq."""
    srcs: dict[str, _Src] = {}
    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, SourceSeen):
            srcs.setdefault(ev.source, _Src(ev))
        elif isinstance(ev, SourceRewound | ChunkCaptured):
            s = srcs.get(ev.source)
            if s is not None:
                s.gen = max(s.gen, ev.generation)
        elif isinstance(ev, FileSnapshotted):
            s = srcs.get(ev.source)
            if s is not None:
                s.snap_seq = se.seq
    return srcs


def restore(
    log: EventLog, dest: Path, *, agent: str | None = None, session: str | None = None
) -> RestoreReport:
    """Write every selected captured source under `dest` (see the module promises)."""
    report = RestoreReport()
    srcs = {k: v for k, v in scan_sources(log).items() if _selected(v.seen, agent, session)}
    roots_per_agent: dict[str, set[str]] = {}
    for s in srcs.values():
        roots_per_agent.setdefault(s.seen.agent, set()).add(s.seen.root)
    for s in srcs.values():
        base = dest / s.seen.agent
        if len(roots_per_agent[s.seen.agent]) > 1:
            base = base / s.seen.source.split(":", 2)[1]
        out = _safe_join(base, s.seen.path)
        if out is None:
            report.skipped.append(s.seen.source)
            continue
        kind = kind_of(s.seen.layout)
        if kind == "rows":
            out = out.with_name(out.name + ".rows")
            out.mkdir(parents=True, exist_ok=True)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            if kind == "append":
                out.write_bytes(b"")
                report.files += 1
        s.out = out
    newest_rows = _newest_rows(log, srcs) if any(
        kind_of(s.seen.layout) == "rows" for s in srcs.values()) else {}
    tables: dict[Path, Any] = {}
    try:
        for se in log.iter_events():
            ev = se.event
            if isinstance(ev, ChunkCaptured):
                c = srcs.get(ev.source)
                if c is None or c.out is None or ev.generation != c.gen:
                    continue
                data = payload(ev.codec, ev.data)
                fd = os.open(c.out, os.O_WRONLY)
                try:
                    os.pwrite(fd, data, ev.offset)
                finally:
                    os.close(fd)
            elif isinstance(ev, FileSnapshotted):
                f = srcs.get(ev.source)
                if f is None or f.out is None or se.seq != f.snap_seq:
                    continue
                data = payload(ev.codec, ev.data)
                if (session is not None and session not in f.seen.path
                        and not _row_matches(data, session)):
                    continue
                f.out.write_bytes(data)
                report.files += 1
            elif isinstance(ev, RowSnapshotted):
                r = srcs.get(ev.source)
                if r is None or r.out is None or newest_rows.get(
                        (ev.source, ev.table, ev.row_id)) != se.seq:
                    continue
                data = payload(ev.codec, ev.data)
                if session is not None and not _row_matches(data, session):
                    continue
                path = r.out / f"{ev.table}.jsonl"
                fh = tables.get(path)
                if fh is None:
                    fh = tables[path] = open(path, "wb")  # noqa: SIM115
                fh.write(data + b"\n")
                report.rows += 1
    finally:
        for fh in tables.values():
            fh.close()
    report.tables = len(tables)
    report.bytes = sum(
        (s.out.stat().st_size for s in srcs.values()
         if s.out is not None and s.out.is_file()), 0)
    return report


def _newest_rows(log: EventLog, srcs: dict[str, _Src]) -> dict[tuple[str, str, str], int]:
    best: dict[tuple[str, str, str], tuple[int, int]] = {}
    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, RowSnapshotted) and ev.source in srcs:
            k = (ev.source, ev.table, ev.row_id)
            cand = (ev.time_updated, se.seq)
            if k not in best or cand >= best[k]:
                best[k] = cand
    return {k: v[1] for k, v in best.items()}


def generation_bytes(log: EventLog, source: str, generation: int) -> bytes:
    """The captured bytes of one generation of one append-only source (small files)."""
    buf = bytearray()
    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, ChunkCaptured) and ev.source == source and ev.generation == generation:
            data = payload(ev.codec, ev.data)
            end = ev.offset + len(data)
            if len(buf) < end:
                buf.extend(b"\0" * (end - len(buf)))
            buf[ev.offset:end] = data
    return bytes(buf)


def iter_sources(log: EventLog) -> Iterator[SourceSeen]:
    for s in scan_sources(log).values():
        yield s.seen
