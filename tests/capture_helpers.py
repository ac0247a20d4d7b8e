"""Helpers shared by the capture and restore tests (not a test module)."""

from __future__ import annotations

from pathlib import Path

from eventlog import EventLog
from eventlog.events import ChunkCaptured
from readers.capture import Capturer, Options, Stats
from readers.restore import payload
from readers.roots import Root


def roots_of(**dirs: Path) -> list[Root]:
    return [Root(agent, Path(p), "flag", Path(p).is_dir()) for agent, p in dirs.items()]


def capture(log: EventLog, roots: list[Root], *, settle: float = 0.0) -> Stats:
    return Capturer(log, roots, Options(settle_s=settle)).run_once()


def chunk_map(log: EventLog) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(source, generation) -> sorted (offset, size) of every captured chunk."""
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for se in log.iter_events():
        ev = se.event
        if isinstance(ev, ChunkCaptured):
            assert len(payload(ev.codec, ev.data)) == ev.size
            out.setdefault((ev.source, ev.generation), []).append((ev.offset, ev.size))
    for v in out.values():
        v.sort()
    return out


def assert_contiguous(log: EventLog) -> None:
    """Chunks of every generation tile [0, end) exactly: no gap, no overlap."""
    for key, spans in chunk_map(log).items():
        pos = 0
        for off, size in spans:
            assert off == pos, f"{key}: chunk at {off}, expected {pos} (gap or overlap)"
            pos += size


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)
