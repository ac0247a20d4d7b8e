"""`agentlog verify` extra check: does the live history.db equal a rebuild from the log?

Rebuilds into a temporary file up to the live file's checkpoint and compares row counts and
SHA-256 digests of the canonical rows, table by table. No SQL here (see projections.drift).
"""

from __future__ import annotations

from typing import Any

from cli.config import Home
from eventlog import EventLog


def verify_section(home: Home, log: EventLog) -> dict[str, Any]:
    from projections.drift import check

    if not home.history_db.exists():
        return {"name": "history.db", "ok": True, "detail": "not built yet (nothing to compare)"}
    report = check(home.history_db, log)
    detail = report["detail"]
    if not report["ok"]:
        # history.db is derived: a rebuild from the log is always the cure (e.g. after an
        # upgrade changed how documents are derived)
        detail = f"{detail}; `agentlog reindex` rebuilds it from the log"
    return {"name": "history.db", "ok": report["ok"], "detail": detail}
