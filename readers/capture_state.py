"""The engine's plain data: options, run statistics, registered sources, cursor states.

Promises: no I/O; `is_idle` and `is_pending` are pure functions of a cursor (and its
source's kind), shared by the engine, the stat cache and the audit.
"""

from __future__ import annotations

import os
from typing import Any

from readers import cursor as cur
from readers.capture_files import READ_MAX, SNAPSHOT_MAX
from readers.discovery import kind_of
from readers.roots import Root


class Options:
    """Bounds and pacing of the engine (defaults are the seed's figures)."""

    __slots__ = ("batch_bytes", "batch_events", "discover_per_tick", "final",
                 "max_clean_sweeps", "polls_per_tick", "read_max", "rediscover_s", "settle_s",
                 "snapshot_max", "sweep_checks_per_tick")

    def __init__(
        self,
        *,
        settle_s: float = 2.0,
        discover_per_tick: int = 32,
        polls_per_tick: int = 2,
        batch_bytes: int = 8 * 1024 * 1024,  # 16 MiB: +12 MiB peak RSS, same CPU
        batch_events: int = 4000,
        rediscover_s: float = 30.0,
        max_clean_sweeps: int = 3,
        sweep_checks_per_tick: int = 64,
        read_max: int = READ_MAX,
        snapshot_max: int = SNAPSHOT_MAX,
        final: bool = False,
    ) -> None:
        if read_max < 1:
            raise ValueError(f"read_max must be at least 1 byte; got {read_max}")
        if snapshot_max < 1:
            raise ValueError(f"snapshot_max must be at least 1 byte; got {snapshot_max}")
        self.settle_s = settle_s
        self.discover_per_tick = discover_per_tick
        self.polls_per_tick = polls_per_tick
        self.batch_bytes = batch_bytes
        self.batch_events = batch_events
        self.rediscover_s = rediscover_s
        self.max_clean_sweeps = max_clean_sweeps
        self.sweep_checks_per_tick = sweep_checks_per_tick
        self.read_max = read_max  # bytes of one append read (the 64 KiB bound)
        self.snapshot_max = snapshot_max  # a rewritten file larger than this is not read
        # the named files are finished (an agent's session ended): their unterminated last
        # lines are final (`ChunkCaptured.final`); only `capture_paths` of a hook sets it
        self.final = final


class Stats:
    """Counters of one capture run (`to_dict` is the `--json` summary)."""

    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0
        self.appended = 0
        self.duplicates = 0
        self.registered = 0
        self.rewound = 0
        self.snapshots = 0
        self.rows = 0
        self.missing = 0
        self.pending = 0
        self.oversized = 0  # rewritten files over the snapshot bound (named in `skipped`)
        self.errors: list[str] = []
        self.skipped: list[str] = []
        self.changed: set[str] = set()
        self.locked: set[str] = set()  # databases another process held: not polled again
        self.forgotten: set[str] = set()  # sources `agentlog forget` took back: not captured
        # files of this run whose records the parsers could not read (set by the front end
        # after it indexed them: {path, source, types})
        self.unreadable: list[dict[str, Any]] = []
        self._noted: set[str] = set()

    def note_skipped(self, root: Root, entry: Any) -> None:
        """A link not followed (`skipped`) or a folder not listed (`errors`), once each."""
        where = os.path.join(str(root.path), entry.rel)
        msg = f"{where}: {entry.error or entry.skipped}"
        if msg in self._noted:
            return
        self._noted.add(msg)
        (self.errors if entry.error else self.skipped).append(msg)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "appended": self.appended,
            "duplicates": self.duplicates,
            "changed_files": len(self.changed),
            "new_files": self.registered,
            "rewound": self.rewound,
            "rows": self.rows,
            "missing_files": self.missing,
            "pending": self.pending,
            "errors": self.errors[:20],
            "skipped": self.skipped[:20],
            "oversized": self.oversized,
            "unreadable": self.unreadable[:20],
            "forgotten": len(self.forgotten),
        }


class Source:
    """A registered source: where it is and its cursor."""

    __slots__ = ("cursor", "kind", "path", "rel", "root", "round_sig", "table_idx", "table_paged")

    def __init__(self, root: Root, rel: str, kind: str, cursor: cur.Cursor) -> None:
        self.root = root
        self.rel = rel
        self.kind = kind
        self.cursor = cursor
        self.path = os.path.join(root.path, rel)
        self.table_idx = 0
        self.table_paged = False  # a page of the current table was read in this round
        self.round_sig: tuple[int, int, int] | None = None


def is_idle(c: cur.Cursor, src: Source) -> bool:
    """Nothing left to do until the file's metadata changes."""
    if c.backlog or c.size < 0 or c.missing or c.oversized:
        return False
    if src.kind == "append":
        return c.offset == c.size
    if src.kind == "rows":
        return src.round_sig is None
    return True


def is_pending(c: cur.Cursor) -> bool:
    if c.missing:
        return False
    if c.backlog or c.size < 0:
        return True
    if kind_of(c.layout) == "append":
        return c.offset < c.size
    return False
