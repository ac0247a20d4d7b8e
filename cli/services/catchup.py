"""Keep history.db caught up with the log (after appends, and before answering a query).

No SQL here: `projections.catchup` does the work. A busy rebuild in another process never
makes a query fail: the query answers from the file as it is. Neither does a full disk:
the log write is what counts, so after an append a history.db that cannot be updated is
reported once (with about how much space a rebuild needs) and the command still succeeds;
a query answers from the file as it is, saying so.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home

_full_said = False


def _warn(line: str) -> None:
    """A notice on stderr (no click: `search --json` runs without it)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def after_append(home: Home) -> None:
    """Catch the projections up after `record`, `capture` or `import` appended events, and
    wake the team syncer when `team.postgres` is set."""
    _catch_up(home)
    team = home.config.get("team")
    if isinstance(team, dict) and team.get("postgres"):  # the syncer loads only then
        from cli.services import team_sync

        team_sync.after_append(home)


def _catch_up(home: Home) -> None:
    global _full_said
    from projections.catchup import catch_up
    from projections.errors import ProjectionBusy, ProjectionDamaged

    if not home.has_log():
        return
    try:
        try:
            catch_up(home.history_db, home.log(readonly=True), count=False)
        except ProjectionDamaged as exc:
            rebuild_damaged(home, exc)
        if _full_said:
            _warn("agentlog: history.db is up to date again")
        _full_said = False
    except ProjectionBusy as exc:
        _warn(f"agentlog: history.db not updated now ({exc})")
    except Exception as exc:
        if not disk_full(exc):
            raise
        if not _full_said:  # once while it lasts (the capture loop retries every commit)
            _warn(full_message(home))
        _full_said = True


def disk_full(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's or the OS's "no space left"."""
    from projections.errors import disk_full as full

    return full(exc)


def full_message(home: Home) -> str:
    """The log holds the events; history.db could not follow (and what it needs)."""
    import shutil

    from cli.services.output import human_bytes

    try:
        size = home.history_db.stat().st_size
    except OSError:
        size = 0
    try:
        free = shutil.disk_usage(home.root).free
    except OSError:
        free = 0
    need = size + (size >> 2)  # a rebuild writes a new copy, then swaps
    try:  # plus about twice the new events' stored bytes (documents and their index)
        from projections.catchup import applied_seq

        log = home.log(readonly=True)
        head = log.head().seq
        behind = head - applied_seq(home.history_db)
        need += 2 * log.size_bytes() * behind // max(head, 1)
    except Exception:  # an estimate only
        pass
    need = max(need, 1 << 20)
    return (f"agentlog: the log holds every event, but history.db could not be updated: the "
            f"disk is full ({human_bytes(free)} free; about {human_bytes(need)} needed to "
            "rebuild it). Free space, then any search or `agentlog reindex` brings it up to "
            "date")


def rebuild_damaged(home: Home, exc: Exception) -> None:
    """history.db is derived: a damaged file is rebuilt from the log (new file, swapped in)."""
    from projections.rebuild import rebuild

    _warn(f"agentlog: {exc}; rebuilding it from the log")
    rebuild(home.history_db, home.log(readonly=True))


def ensure_current(home: Home) -> None:
    """Before answering: a fast no-op when history.db is at the log head, else catch up."""
    if not home.has_log():
        return
    from eventlog.peek import head_seq
    from projections.catchup import status

    head = head_seq(home.log_dir)  # the event types load only when there is work to do
    if head is not None and status(home.history_db, head) == "current":
        return
    from projections.catchup import catch_up
    from projections.errors import ProjectionBusy, ProjectionDamaged

    log = home.log(readonly=True)
    if status(home.history_db, log.head().seq) == "current":
        return
    try:
        try:
            catch_up(home.history_db, log)
        except ProjectionDamaged as exc:
            rebuild_damaged(home, exc)
    except ProjectionBusy as exc:
        _warn(f"agentlog: answering from the current history.db ({exc})")
    except Exception as exc:
        if not disk_full(exc) or not home.history_db.exists():
            raise
        _warn(full_message(home) + "; answering from it as it is")


def search_engine(home: Home) -> str | None:
    """The engine forced by config.json ({"search": {"engine": "plain"}}), if any."""
    cfg = home.config.get("search")
    if isinstance(cfg, dict) and isinstance(cfg.get("engine"), str) and cfg["engine"]:
        return str(cfg["engine"])
    return None


FOLLOW_BYTES = 8 << 20  # a first capture this large rebuilds history.db beside itself:
# started once the files discovery registered hold this much (asked after every tick), the
# follow build beat the build after the capture from ~5.5 MB of Claude files up (4.7 MB:
# 0.40 against 0.37 s; 20 MB: 0.89 against 1.15 s; docs/performance.md, "The first minute")


class Follower:
    """history.db rebuilt beside a large first capture (`projections.follow`), so capture,
    parse and the SQL build share the cores instead of taking turns: started in a home
    without history.db once the capture will read `FOLLOW_BYTES` (`to_read`), not once it
    has (its builder's and parse process's start-ups then run beside the first reads);
    `finish` waits for the swap (the catch-up after the capture then has nothing left to
    do)."""

    def __init__(self, home: Home) -> None:
        import os

        self.home = home
        self.builder: Any = None
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        self.off = cpus < 2 or home.history_db.exists()
        self._sized = 0  # the engine's registered files counted in `_size`
        self._size = 0

    def tick(self, engine: Any) -> None:
        if self.off or self.to_read(engine) < FOLLOW_BYTES:
            return
        self.off = True
        if self.home.history_db.exists() or not self.home.has_log():
            return
        import os

        from projections import follow

        self.builder = follow.start(self.home.history_db, self.home.log_dir,
                                    os.environ.get("AGENTLOG_PIPE_STATS"))  # measuring aid

    def to_read(self, engine: Any) -> int:
        """What the capture reads, known before it is read: of each file discovery registered
        (stat'd once, as it is registered) the bytes past its cursor, none when it is as
        captured; or the bytes read when more (a file grew meanwhile)."""
        import itertools
        import os

        new = len(engine.sources) - self._sized
        if new > 0:  # registered since the last tick: the newest entries of the dict
            for src in itertools.islice(reversed(engine.sources.values()), new):
                try:
                    st = os.stat(src.path)
                except OSError:
                    continue  # gone, or unreadable: the capture says so
                c = src.cursor
                if (st.st_size, st.st_mtime_ns, st.st_ino) == (c.size, c.mtime_ns, c.ino):
                    continue
                # past the cursor, or the whole file when it is shorter (rewritten)
                self._size += st.st_size - (c.offset if c.offset <= st.st_size else 0)
            self._sized += new
        return max(self._size, int(engine.stats.bytes))

    def finish(self) -> None:
        if self.builder is not None:
            import gc
            import importlib

            from projections import follow, heap

            # the capture is over: while the builder catches up (minutes on a big home),
            # this process loads what the catch-up after the swap runs
            # (after_append: ~50 ms of imports, off the path between the swap and the exit
            # then) and hands back the log's mapped pages and its freed heap
            for name in ("cli.services.capture.retention",
                         "projections.catchup", "projections.apply"):
                importlib.import_module(name)
            gc.collect()
            if self.home.has_log():
                self.home.log().release_pages()
            heap.trim()
            follow.finish(self.builder)
            self.builder = None
