"""`agentlog verify` extra check: does the live history.db equal a rebuild from the log?

Rebuilds into a temporary file up to the live file's checkpoint and compares row counts and
SHA-256 digests of the canonical rows, table by table. No SQL here (see projections.drift).
"""

from __future__ import annotations

import contextlib
from typing import Any

from cli.services.config import Home
from eventlog import EventLog


def verify_section(home: Home, log: EventLog) -> dict[str, Any]:
    from projections.drift import check

    if not home.history_db.exists():
        return {"name": "history.db", "ok": True, "detail": "not built yet (nothing to compare)"}
    from projections import stale
    from projections.errors import DatabaseError, ProjectionDamaged, disk_full

    built_at = _checkpoint_seq(home)
    forgot_at = log.forget_head()
    if built_at and forgot_at > built_at:
        # a forget's transaction committed and its rebuild has not run yet (a crash, or it
        # is running): not drift — the next catch-up rebuilds it from the forgotten log
        return {"name": "history.db", "ok": True,
                "detail": f"built before the forget event at record {forgot_at}: the next "
                          "search or capture rebuilds it (`agentlog forget --finish` now)"}
    try:
        report = check(home.history_db, log)
    except (ProjectionDamaged, DatabaseError, OSError) as exc:
        if disk_full(exc):
            # the comparison's rebuild found no room: nothing is known of history.db (not
            # drift, so not marked stale; issue 31: a full disk was said as drift)
            return {"name": "history.db", "ok": False, "unchecked": True,
                    "detail": "not compared: the disk is full (the comparison rebuilds "
                              "history.db beside it); free space and run `agentlog verify` "
                              "again"}
        if not isinstance(exc, DatabaseError):
            raise
        # the message of an SQLite error on a damaged file may quote its contents: not shown
        kind = "damaged" if isinstance(exc, ProjectionDamaged) else type(exc).__name__
        report = {"ok": False, "detail": f"history.db could not be read ({kind})"}
    detail = report["detail"]
    if not report["ok"]:
        # history.db is derived: a rebuild from the log is always the cure (e.g. after an
        # upgrade changed how documents are derived)
        detail = f"{detail}; `agentlog reindex` rebuilds it from the log"
        with contextlib.suppress(OSError):
            stale.mark_stale(home.history_db, detail)  # search, serve and MCP flag it
    elif not home.history_db.is_symlink():  # not a published generation (docs/search.md)
        detail = (f"{detail}; a file from before generations (rollback journal: a search "
                  "waits for capture's commits): `agentlog reindex` moves it to WAL")
    return {"name": "history.db", "ok": report["ok"], "detail": detail}


def _checkpoint_seq(home: Home) -> int:
    """history.db's checkpoint (0: none or unreadable — `check` then says what is wrong)."""
    from projections.catchup import applied_seq

    return applied_seq(home.history_db)
