"""The archive section of `agentlog audit`, and the journal of read-only operations.

`audit_section(home, log)` lists archive ticks, imports (applied and dry run) and exports:
those that wrote to the log are `OperationRecorded` events (plus the `SessionArchived` and
`TurnsImported` counts); those that must not write to the log (dry runs, exports, ticks
that found nothing) are lines of `<home>/operations.jsonl`, written by `note_operation`.
The journal is append-only, one JSON object a line, and never holds transcript text.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from cli.services.config import Home
from eventlog import EventLog
from eventlog.audit import iso_ms, iter_tagged
from eventlog.events import OperationRecorded

JOURNAL = "operations.jsonl"
SHOWN = 20


_op_dec = msgspec.msgpack.Decoder(OperationRecorded)


def _iso(ms: int) -> str:
    return str(iso_ms(ms))


def journal_path(home: Home) -> Path:
    return home.root / JOURNAL


def note_operation(home: Home, op: str, details: dict[str, Any]) -> None:
    """Append one line to the operations journal (best effort: never fails the operation)."""
    line = json.dumps({"op": op, "at": _iso(_now()), "details": details},
                      ensure_ascii=False, default=str)
    try:
        home.root.mkdir(parents=True, exist_ok=True)
        with journal_path(home).open("a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass


def _now() -> int:
    from eventlog import now_ms

    return now_ms()


def _journal(home: Home) -> list[dict[str, Any]]:
    path = journal_path(home)
    out: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(obj, dict):
                    obj["recorded"] = "journal"
                    out.append(obj)
    except OSError:
        return []
    return out


def audit_section(home: Home, log: EventLog) -> dict[str, Any]:
    ops: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for rec in iter_tagged(log):
        tag = rec.tag
        if tag in ("session.archived", "turns.imported"):
            counts[tag] += 1
        elif tag == "operation.recorded":
            try:
                ev = _op_dec.decode(rec.event)
            except msgspec.DecodeError:
                continue
            ops.append({"op": ev.op, "at": _iso(ev.at), "details": ev.details,
                        "recorded": f"log seq {rec.seq}"})
    ops.extend(_journal(home))
    ops.sort(key=lambda o: str(o.get("at", "")))

    def pick(prefix: str) -> list[dict[str, Any]]:
        return [o for o in ops if str(o.get("op", "")).startswith(prefix)][-SHOWN:]

    return {
        "archive": {
            "sessions_archived_events": counts["session.archived"],
            "turns_imported_events": counts["turns.imported"],
            "archive_ticks": pick("archive."),
            "imports": pick("import."),
            "exports": pick("export"),
            "journal": str(journal_path(home)),
        }
    }
