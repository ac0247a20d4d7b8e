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
- every path component taken from the log (agent, root id, path, table name) is untrusted:
  a component that is empty, `.`/`..`, holds a `/`, a NUL or a control character is refused
  (`eventlog.untrusted`), the final path must resolve under DEST, and no symlink found under
  DEST is followed (folders are checked one by one, files opened with O_NOFOLLOW); a refused
  source is listed in `skipped` (ids) and `refused` (id and reason), nothing is written for it;
- each record is checked against the chain as it is read (`CorruptRecord` names the first bad
  seq) and pass 1 reads the whole log before anything is written, so a damaged log writes
  nothing; with `skip_damaged` the damaged records are listed (`damaged`), the files they
  belonged to (when known, or when a chunk is missing) are left out (`incomplete`), and the
  rest is written; a damaged LMDB page ends the reading (`unreadable_from`, its first seq):
  files come back as far as the records before it;
- `payload(codec, data)`: the captured bytes (zstd or raw), decoded by `eventlog.zstd`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eventlog import CorruptRecord, EventLog, zstd
from eventlog.events import (
    ChunkCaptured,
    FileSnapshotted,
    RowSnapshotted,
    SourceRewound,
    SourceSeen,
)
from eventlog.untrusted import bad_component, bad_event
from readers import registry
from readers.discovery import kind_of
from readers.errors import ReaderError


class RestoreError(ReaderError):
    """A restore could not be written."""


MAX_OFFSET = 1 << 40  # 1 TiB: no captured file is larger; a crafted log's offset is refused


def payload(codec: str, data: bytes) -> bytes:
    """The exact captured bytes of a chunk, snapshot or row (`eventlog.zstd.payload`; an
    unknown codec is a `RestoreError`)."""
    try:
        return zstd.payload(codec, data)
    except zstd.UnknownCodec as exc:
        raise RestoreError(str(exc)) from None


@dataclass(slots=True)
class _Src:
    seen: SourceSeen
    gen: int = 0
    snap_seq: int = 0
    out: Path | None = None
    end: int = 0  # contiguous bytes of the newest generation seen so far
    hole: bool = False  # a chunk of the newest generation is missing (damaged record)
    bad: str | None = None  # why a record of it cannot be written (a crafted offset)


@dataclass(slots=True)
class RestoreReport:
    files: int = 0
    bytes: int = 0
    rows: int = 0
    tables: int = 0
    skipped: list[str] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    damaged: list[int] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    unreadable_from: int | None = None

    def refuse(self, source: str, reason: str) -> None:
        self.skipped.append(source)
        self.refused.append({"source": source, "reason": reason})

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "bytes": self.bytes, "rows": self.rows,
                "tables": self.tables, "skipped": self.skipped, "refused": self.refused,
                "damaged": self.damaged, "incomplete": self.incomplete,
                "unreadableFrom": self.unreadable_from}


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


def _safe_dir(dest: Path, parts: list[str]) -> Path:
    """DEST/parts..., created folder by folder; a symlink or a non-folder on the way is
    refused (RestoreError), so nothing is ever written through a link under DEST."""
    cur = dest
    for part in parts:
        why = bad_component(part)
        if why is not None:
            raise RestoreError(f"{part[:40]!r} {why}")
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur)
            continue
        if stat.S_ISLNK(st.st_mode):
            raise RestoreError(f"{cur} is a symbolic link (not followed)")
        if not stat.S_ISDIR(st.st_mode):
            raise RestoreError(f"{cur} is not a folder")
    real = os.path.realpath(cur)
    if os.path.commonpath([real, str(dest)]) != str(dest):
        raise RestoreError(f"{cur} resolves outside {dest}")
    return cur


def _open_out(path: Path, flags: int) -> int:
    """A file descriptor of `path` that is never a symlink's target."""
    try:
        return os.open(path, flags | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RestoreError(f"{path} is a symbolic link (not followed)") from None
        raise


def _write_new(path: Path, data: bytes) -> None:
    fd = _open_out(path, os.O_CREAT | os.O_TRUNC)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` (write(2) may take part of it: a signal, a nearly full disk)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _target(dest: Path, s: _Src, several_roots: bool) -> Path:
    """Where a source is restored (folders created; see the module promises)."""
    why = bad_event(s.seen)
    if why is not None:
        raise RestoreError(why)
    seen = s.seen
    parts = [seen.agent]
    if several_roots:
        parts.append(seen.source.split(":", 2)[1])
    rel = seen.path.split("/")
    if kind_of(seen.layout) == "rows":
        return _safe_dir(dest, parts + rel[:-1] + [rel[-1] + ".rows"])
    return _safe_dir(dest, parts + rel[:-1]) / rel[-1]


def scan_sources(log: EventLog, damaged: list[int] | None = None) -> dict[str, _Src]:
    """Pass 1: every source, its newest generation and its newest snapshot's seq."""
    srcs: dict[str, _Src] = {}
    for se in log.iter_events(damaged=damaged):
        ev = se.event
        if isinstance(ev, SourceSeen):
            srcs.setdefault(ev.source, _Src(ev))
        elif isinstance(ev, SourceRewound | ChunkCaptured):
            s = srcs.get(ev.source)
            if s is None:
                continue
            if ev.generation > s.gen:
                s.gen, s.end, s.hole = ev.generation, 0, False
            if isinstance(ev, ChunkCaptured) and not 0 <= ev.offset <= MAX_OFFSET - ev.size:
                s.bad = s.bad or (f"record {se.seq}: chunk offset {ev.offset} is outside a "
                                  f"file (0..{MAX_OFFSET})")
            elif isinstance(ev, ChunkCaptured) and ev.generation == s.gen:
                s.hole = s.hole or ev.offset > s.end
                s.end = max(s.end, ev.offset + ev.size)
        elif isinstance(ev, FileSnapshotted):
            s = srcs.get(ev.source)
            if s is not None:
                s.snap_seq = se.seq
    return srcs


def _prepare(dest: Path, srcs: dict[str, _Src], report: RestoreReport) -> None:
    """Create every target (append files empty); refused sources get no `out`."""
    roots_per_agent: dict[str, set[str]] = {}
    for s in srcs.values():
        roots_per_agent.setdefault(s.seen.agent, set()).add(s.seen.root)
    for s in srcs.values():
        if s.bad is not None:
            report.refuse(s.seen.source, s.bad)
            continue
        try:
            out = _target(dest, s, len(roots_per_agent[s.seen.agent]) > 1)
            if kind_of(s.seen.layout) == "append":
                _write_new(out, b"")
                report.files += 1
        except RestoreError as exc:
            report.refuse(s.seen.source, str(exc))
            continue
        except OSError as exc:  # a name clash (a folder where its file goes, or the reverse)
            report.refuse(s.seen.source, f"{exc.strerror or exc}: {exc.filename or ''}")
            continue
        s.out = out


def restore(
    log: EventLog, dest: Path, *, agent: str | None = None, session: str | None = None,
    skip_damaged: bool = False,
) -> RestoreReport:
    """Write every selected captured source under `dest` (see the module promises)."""
    report = RestoreReport()
    damaged = report.damaged if skip_damaged else None
    srcs = {k: v for k, v in scan_sources(log, damaged).items()
            if _selected(v.seen, agent, session)}
    if skip_damaged:
        _leave_out_damaged(log, srcs, report)
    if not srcs:
        return report  # nothing selected: DIR is not even created
    dest.mkdir(parents=True, exist_ok=True)
    dest = Path(os.path.realpath(dest))
    _prepare(dest, srcs, report)
    newest_rows = _newest_rows(log, srcs, damaged) if any(
        kind_of(s.seen.layout) == "rows" for s in srcs.values()) else {}
    tables: dict[Path, int] = {}
    try:
        for se in log.iter_events(damaged=[] if skip_damaged else None):
            ev = se.event
            if isinstance(ev, ChunkCaptured):
                c = srcs.get(ev.source)
                if c is None or c.out is None or ev.generation != c.gen:
                    continue
                data = payload(ev.codec, ev.data)
                try:
                    fd = _open_out(c.out, 0)
                    try:
                        os.pwrite(fd, data, ev.offset)
                    finally:
                        os.close(fd)
                except (OSError, RestoreError) as exc:
                    _refuse_midway(report, c, se.seq, exc)
            elif isinstance(ev, FileSnapshotted):
                f = srcs.get(ev.source)
                if f is None or f.out is None or se.seq != f.snap_seq:
                    continue
                data = payload(ev.codec, ev.data)
                if (session is not None and session not in f.seen.path
                        and not _row_matches(data, session)):
                    continue
                try:
                    _write_new(f.out, data)
                except (OSError, RestoreError) as exc:
                    _refuse_midway(report, f, se.seq, exc)
                    continue
                report.files += 1
            elif isinstance(ev, RowSnapshotted):
                r = srcs.get(ev.source)
                if r is None or r.out is None or newest_rows.get(
                        (ev.source, ev.table, ev.row_id)) != se.seq:
                    continue
                data = payload(ev.codec, ev.data)
                if session is not None and not _row_matches(data, session):
                    continue
                why = bad_event(ev)
                if why is not None:
                    if ev.source not in report.skipped:
                        report.refuse(ev.source, why)
                    continue
                path = r.out / f"{ev.table}.jsonl"
                if path not in tables:
                    tables[path] = _open_out(path, os.O_CREAT | os.O_TRUNC | os.O_APPEND)
                _write_all(tables[path], data + b"\n")
                report.rows += 1
    finally:
        for fd in tables.values():
            os.close(fd)
    report.tables = len(tables)
    report.bytes = sum(
        (s.out.stat().st_size for s in srcs.values()
         if s.out is not None and s.out.is_file()), 0)
    return report


def _refuse_midway(report: RestoreReport, s: _Src, seq: int, exc: Exception) -> None:
    """A write that failed after its file was made: the source is refused, naming the record."""
    why = f"{exc.strerror or exc}: {exc.filename or ''}" if isinstance(exc, OSError) else exc
    report.refuse(s.seen.source, f"record {seq}: {why}")
    s.out = None


def _leave_out_damaged(log: EventLog, srcs: dict[str, _Src], report: RestoreReport) -> None:
    """With --skip-damaged: sources a damaged record belonged to (when it still decodes far
    enough to name one) or whose newest generation has a missing chunk are left out."""
    bad: set[str] = {k for k, s in srcs.items() if s.hole}
    report.unreadable_from = log.unreadable_from
    for seq in report.damaged:
        try:
            raw = log.read_raw(seq, 1)
        except CorruptRecord:  # a damaged page: nothing there names its source
            continue
        if not raw or raw[0].seq != seq:
            continue
        source = _source_of(raw[0].value)
        if source is not None:
            bad.add(source)
    for source in sorted(bad):
        if srcs.pop(source, None) is not None:
            report.incomplete.append(source)


def _source_of(value: bytes) -> str | None:
    from eventlog import codec

    try:
        stored = codec.unpack_value(value)[2]
        env = codec.decode_envelope(stored)
        ev = codec.decode_event(env.event)
    except Exception:
        return None
    src = getattr(ev, "source", None)
    return src if isinstance(src, str) else None


def _newest_rows(
    log: EventLog, srcs: dict[str, _Src], damaged: list[int] | None
) -> dict[tuple[str, str, str], int]:
    best: dict[tuple[str, str, str], tuple[int, int]] = {}
    for se in log.iter_events(damaged=None if damaged is None else []):
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
