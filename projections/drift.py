"""Drift audit: the live history.db against a fresh rebuild of the same log prefix.

Promise: `check` never modifies the live file. It rebuilds into a temporary file up to the
live checkpoint, then compares, per table, the row count and a SHA-256 over the canonical
rows (every column except rowids, in a fixed order) — so any difference between incremental
catch-up and rebuild, or any tampering, shows up with the table that differs. The contentless
full-text indexes are compared by their terms (documents and occurrences per term, from
fts5vocab) plus FTS5's structural 'integrity-check'.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from eventlog import EventLog
from projections import db
from projections.rebuild import build

CANONICAL = {
    "documents": "SELECT id, kind, agent, at, project, session, job, run, message, cursor,"
                 " conversation, role, tool, subagent, subagent_name, title, text, archived,"
                 " seq, ord, source, sender, extra FROM documents ORDER BY id",
    "aliases": "SELECT alias, session, agent, at FROM aliases ORDER BY alias, session",
    "recipients": "SELECT r.alias, d.id FROM recipients r JOIN documents d ON d.rowid = r.doc"
                  " ORDER BY r.alias, d.id",
    "sessions": "SELECT agent, session, title, project FROM sessions ORDER BY agent, session",
    "subagents": "SELECT * FROM subagents ORDER BY agent, session, subagent",
    "runs": "SELECT run, job, session, agent, started_at FROM runs ORDER BY run",
    "sources": "SELECT * FROM sources ORDER BY source",
    "unknown_types": "SELECT source, type, count FROM unknown_types ORDER BY source, type",
    "parser_state": "SELECT scope, state FROM parser_state ORDER BY scope",
    "opaque_events": "SELECT tag, count FROM opaque_events ORDER BY tag",
    "secrets": "SELECT doc, kind, agent, session, at, count FROM secrets ORDER BY doc, kind",
    "checkpoint": "SELECT last_seq, last_hash, schema_version, parser_version, engine"
                  " FROM checkpoint",
}


# The full-text indexes are contentless (projections/db.py): their terms, with the number of
# documents and of occurrences of each, stand for them.
FULL_TEXT = {
    "documents_fts": "SELECT term, doc, cnt FROM documents_fts_terms",
    "documents_cjk": "SELECT term, doc, cnt FROM documents_cjk_terms",
}


def digests(con: sqlite3.Connection) -> dict[str, tuple[int, str]]:
    """(row count, SHA-256 hex) of each table's canonical rows (and of the FTS5 terms)."""
    out: dict[str, tuple[int, str]] = {}
    queries = dict(CANONICAL, **(FULL_TEXT if db.has_fts(con) else {}))
    for table, sql in queries.items():
        h = hashlib.sha256()
        n = 0
        for row in con.execute(sql):
            h.update(json.dumps([x.hex() if isinstance(x, bytes) else x for x in row],
                                ensure_ascii=False).encode("utf-8", "surrogatepass"))
            h.update(b"\n")
            n += 1
        out[table] = (n, h.hexdigest())
    return out


def check(live: Path, log: EventLog) -> dict[str, Any]:
    con = db.connect(live, readonly=True)
    try:
        cp = db.read_checkpoint(con)
        if cp is None:
            return {"ok": False, "detail": "history.db has no checkpoint", "tables": {}}
        if not db.is_current(cp):
            return {"ok": True, "detail": "outdated schema or parser: next search rebuilds it",
                    "tables": {}}
        con.execute("BEGIN")  # one consistent snapshot of the live file
        live_d = digests(con)
        con.execute("COMMIT")
    finally:
        con.close()
    fts_ok = _fts_ok(live)
    tmpdir = Path(tempfile.mkdtemp(prefix="agentlog-drift-", dir=live.parent))
    try:
        fresh = tmpdir / "history.db"
        build(fresh, log, upto=cp.last_seq, engine=cp.engine)
        c2 = db.connect(fresh, readonly=True)
        try:
            new_d = digests(c2)
        finally:
            c2.close()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    names = list(CANONICAL) + [t for t in FULL_TEXT if t in live_d or t in new_d]
    differ = [t for t in names if live_d.get(t) != new_d.get(t)]
    tables = {t: {"live": live_d.get(t, (0, ""))[0], "rebuilt": new_d.get(t, (0, ""))[0],
                  "same": t not in differ} for t in names}
    if differ or not fts_ok:
        parts = [f"{t} ({tables[t]['live']} live vs {tables[t]['rebuilt']} rebuilt rows)"
                 for t in differ]
        if not fts_ok:
            parts.append("full-text index does not match documents")
        return {"ok": False, "detail": f"drift at seq {cp.last_seq}: {'; '.join(parts)}",
                "tables": tables}
    return {"ok": True, "detail": f"matches a rebuild at seq {cp.last_seq}"
            f" ({live_d['documents'][0]} documents)", "tables": tables}


def _fts_ok(live: Path) -> bool:
    """FTS5 'integrity-check' of the index structure (contentless: there is no content to
    check it against; `digests` compares its terms with a rebuild's); it writes nothing."""
    con = db.connect(live)
    try:
        if not db.has_fts(con):
            return True
        con.execute("BEGIN")
        try:
            con.execute(
                "INSERT INTO documents_fts(documents_fts, rank) VALUES ('integrity-check', 1)"
            )
        except sqlite3.DatabaseError:
            return False
        finally:
            con.execute("ROLLBACK")
        return True
    finally:
        con.close()
