"""Golden cases: tests/fixtures/<agent>/<case>/{case.json, input/…, expected.json}.

`case.json` lists the sources in the order capture would announce them:
`{"sources": [{"layout": …, "path": <path under input/>}, …]}` (`"input": "../other/input"`
reuses another case's files); an `opencode.db` source
names an SQL script (`"sql": "opencode.sql"`) that the test loads into a real SQLite file.
The expected view is what a projection keeps: the last record of every uid, in order of
first appearance, plus titles, subagent names, unknown counts and skipped counts.

Regenerate after an intended change: `UPDATE_GOLDEN=1 .venv/bin/pytest tests/parsers`
(then read the diff: it is the review of the parser change).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import msgspec

from readers.records import LINE_LAYOUTS, ROW_LAYOUTS, ParseResult
from tests.parsers.feed import db_rows, feed_lines, feed_rows, feed_snapshot, merge, source_info

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def cases() -> list[Path]:
    return sorted(p.parent for p in FIXTURES.glob("*/*/case.json"))


def run_case(case: Path, tmp: Path) -> dict[str, Any]:
    spec = json.loads((case / "case.json").read_text())
    inputs = (case / spec.get("input", "input")).resolve()  # a case may reuse another's input
    states: dict[str, dict[str, Any]] = {}
    total = ParseResult()
    for item in spec["sources"]:
        layout, path = item["layout"], item["path"]
        source = source_info(layout, path)
        if layout in ROW_LAYOUTS:
            db = tmp / f"{case.name}.db"
            con = sqlite3.connect(db)
            con.executescript((inputs / item["sql"]).read_text())
            con.commit()
            con.close()
            merge(total, feed_rows(source, db_rows(db), states))
            continue
        data = (inputs / path).read_bytes()
        if layout in LINE_LAYOUTS:
            merge(total, feed_lines(source, data, states))
        else:
            merge(total, feed_snapshot(source, data, states))
    return view(total)


def view(total: ParseResult) -> dict[str, Any]:
    final: dict[str, Any] = {}
    for record in total.records:
        final[record.uid] = msgspec.to_builtins(record)
    return {
        "emitted": len(total.records),
        "records": list(final.values()),
        "titles": msgspec.to_builtins(total.titles),
        "subagents": msgspec.to_builtins(total.subagents),
        "unknown": dict(sorted(total.unknown.items())),
        "skipped": total.skipped,
    }
