"""Keep history.db caught up with the log (after appends, and before answering a query).

No SQL here: `projections.catchup` does the work. A busy rebuild in another process never
makes a query fail: the query answers from the file as it is.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cli.config import Home


def _warn(line: str) -> None:
    """A notice on stderr (no click: `search --json` runs without it)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def after_append(home: Home) -> None:
    """Catch the projections up after `record`, `capture` or `import` appended events."""
    from projections.catchup import catch_up
    from projections.errors import ProjectionBusy, ProjectionDamaged

    if not home.has_log():
        return
    try:
        catch_up(home.history_db, home.log(readonly=True))
    except ProjectionBusy as exc:
        _warn(f"agentlog: history.db not updated now ({exc})")
    except ProjectionDamaged as exc:
        _rebuild_damaged(home, exc)


def _rebuild_damaged(home: Home, exc: Exception) -> None:
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
        catch_up(home.history_db, log)
    except ProjectionBusy as exc:
        _warn(f"agentlog: answering from the current history.db ({exc})")
    except ProjectionDamaged as exc:
        _rebuild_damaged(home, exc)


def search_engine(home: Home) -> str | None:
    """The engine forced by config.json ({"search": {"engine": "plain"}}), if any."""
    cfg = home.config.get("search")
    if isinstance(cfg, dict) and isinstance(cfg.get("engine"), str) and cfg["engine"]:
        return str(cfg["engine"])
    return None
