"""One `agentlog capture` pass (walk every root, capture, catch history.db up), without click.

`cli.commands.capture` runs it for a one-shot capture (not `--watch`, not `--path`). It
prints the JSON summary (`--json`) or one line on stdout, warnings and skipped links on
stderr (counts and paths only, never transcript text). A log error while capturing is
raised as `CaptureFailed` (its message is the log's), anything else as it is: the front end
words them its way (one line, `cli.services.errors`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from cli.services.errors import Failure
from cli.services.output import emit_json, human_bytes

if TYPE_CHECKING:
    from cli.services.config import Home


class CaptureFailed(Failure):
    """The log refused the capture (`EventLogError`: busy writer, full disk, damage)."""


def run(home: Home, roots: list[Any], *, as_json: bool, index: bool, settle: float,
        progress: bool) -> Any:
    """Capture once under `roots`, print the summary, catch history.db up; the Stats."""
    from eventlog import EventLogError
    from readers.capture import Capturer, Options

    try:
        follower = _follower(home) if index else None
        from cli.services.capture.ops import engine_options

        engine = Capturer(home.log(), roots, Options(settle_s=settle, **engine_options(home)))
        from cli.services.startup import startup_done

        startup_done()  # the engine is ready: its walk and reads make garbage
        try:
            stats = _once(engine, progress=progress, follower=follower)
        finally:
            if follower is not None:
                follower.finish()  # history.db swapped in (or rebuilt below instead)
    except EventLogError as exc:
        raise CaptureFailed(str(exc)) from exc
    if stats.appended and index:  # indexed before the report: it names what did not parse
        from cli.services import catchup
        from projections.problems import damage_counts, new_damage, paths_of

        before = damage_counts(home.history_db, stats.changed)
        catchup.after_append(home)
        grown = new_damage(before, damage_counts(home.history_db, stats.changed))
        where = paths_of(home.history_db, grown)
        stats.unreadable = [{"path": where.get(s, s), "source": s, "types": kinds}
                            for s, kinds in sorted(grown.items())]
    report(stats, roots, as_json=as_json)
    from cli.services.capture.retention import warn_once

    warn_once(home)
    return stats


def _follower(home: Home) -> Any:
    """A `cli.services.catchup.Follower` only when it could start (no history.db yet): the
    catch-up module and its imports are not needed by a capture of an indexed home."""
    if home.history_db.exists():
        return None
    from cli.services.catchup import Follower

    return Follower(home)


def report(stats: Any, roots: list[Any], *, as_json: bool) -> None:
    """The summary on stdout: JSON, or one line (+ warnings and skipped links on stderr)."""
    out = stats.to_dict()
    out["roots"] = [r.to_dict() for r in roots]
    # a default folder that does not exist is an agent not installed, not a problem
    out["missing_roots"] = [str(r.path) for r in roots if not r.exists and r.origin != "default"]
    if as_json:
        emit_json(out)
        sys.stdout.flush()
        return
    missing = (f"; missing roots: {', '.join(out['missing_roots'])}"
               if out["missing_roots"] else "")
    pending = f", {out['pending']} pending" if out["pending"] else ""
    if out["appended"] == 0:
        print(f"nothing new in {out['files']} files{pending}{missing}")
    else:
        print(f"captured {out['files']} files, {human_bytes(out['bytes'])} new, "
              f"{out['appended']} events appended ({out['duplicates']} duplicates), "
              f"{out['pending']} pending{missing}")
    sys.stdout.flush()
    for err in out["errors"]:
        sys.stderr.write(f"warning: {err}\n")
    for skipped in out["skipped"]:
        sys.stderr.write(f"skipped: {skipped}\n")
    for bad in out["unreadable"]:
        kinds = ", ".join(f"{k} ×{n}" for k, n in sorted(bad["types"].items()))
        sys.stderr.write(f"unreadable: {bad['path']}: {kinds} (kept in the log; `agentlog "
                         "audit` counts every kind)\n")
    sys.stderr.flush()


def _once(engine: Any, *, progress: bool, follower: Any = None) -> Any:
    # the follow build is asked after every tick: it starts as soon as the files found hold
    # FOLLOW_BYTES, however fast the reads (at the 0.1 s progress cadence, a 20 MB home was
    # read before the first question, and built after the capture instead: 1.2 s, not 0.9 s)
    each = follower.tick if follower is not None else None
    if not progress:
        return engine.run_once(None, each)
    from rich.progress import BarColumn, Progress, TextColumn

    with Progress(
        TextColumn("capturing"), BarColumn(), TextColumn("{task.description}"),
        TextColumn("{task.fields[mb]}"), transient=True,
    ) as bar:
        # the total is unknown until the first tick: never show it as "None"
        task = bar.add_task("discovering files", total=None, mb="")

        def tick(e: Any) -> None:
            total = len(e.sources)
            done = min(total - len(e.ready) if e.discovery_done else e._sweep_pos, total)
            bar.update(task, total=max(total, 1), completed=done,
                       description=f"{done}/{total} files", mb=human_bytes(e.stats.bytes))

        return engine.run_once(tick, each)
