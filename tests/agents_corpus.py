"""Harness for the agents of issue 14 on ../shared/corpus-more (read in place, never copied).

`capture_home(agent, home, tmp)` resolves the agent's roots with `home` as the user's home
(the registry's defaults: the discovery a user gets), checks the source files' SHA-256 before
and after capture (SQLite, WAL and SHM included), captures, catches history.db up, restores
and checks every captured file byte for byte. `found(...)` searches a phrase and returns the
hits of one agent and session. The expected sessions, projects and phrases come from small
independent readers of the raw files in each test (no corpus text lives in the tests).
Under CI=true a missing corpus fails; otherwise the test is skipped, saying why.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eventlog import EventLog
from projections import query
from projections.catchup import catch_up
from readers.restore import restore
from readers.roots import Root, resolve_roots
from tests.capture_helpers import capture
from tests.conftest import need

ROOT = Path(__file__).resolve().parent.parent
CORPUS_MORE = Path(os.environ.get("AGENTLOG_CORPUS_MORE", ROOT.parent / "shared" / "corpus-more"))
_WORD = re.compile(r"[^\W\d_]{5,}")


def homes(folder: str) -> list[Path]:
    """The sample homes (one per source repository) of a corpus-more folder."""
    base = CORPUS_MORE / folder
    need(base.is_dir(), f"corpus-more not present at {base}")
    return sorted(p for p in base.iterdir() if p.is_dir())


def sha_tree(base: Path) -> dict[str, str]:
    out = {}
    for dirpath, _, names in os.walk(base):
        for name in names:
            p = Path(dirpath) / name
            out[str(p.relative_to(base))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass
class Captured:
    db: Path
    log: EventLog
    roots: list[Root]
    stats: Any


def capture_home(agent: str, home: Path, tmp: Path) -> Captured:
    roots = [r for r in resolve_roots(flags={}, config={}, env={}, user_home=home,
                                      agents=(agent,)) if r.exists]
    assert roots, f"no {agent} root found under {home.name}"
    before = sha_tree(home)
    log = EventLog(tmp / "log")
    stats = capture(log, roots)
    assert stats.errors == []
    db = tmp / "history.db"
    catch_up(db, log)
    assert sha_tree(home) == before, "capture changed a source file"
    dest = tmp / "restored"
    report = restore(log, dest, agent=agent)
    restored = 0
    for root in roots:
        for rel, digest in sha_tree(root.path).items():
            out = dest / agent / rel
            if out.exists():
                assert hashlib.sha256(out.read_bytes()).hexdigest() == digest, rel
                restored += 1
    assert restored == report.files > 0
    return Captured(db, log, roots, stats)


def phrase(text: str) -> str | None:
    """Three distinctive words of a text (None when it has too few)."""
    words = _WORD.findall(text)
    words = sorted(set(words), key=lambda w: (-len(w), w))[:3]
    return " ".join(words) if len(words) >= 2 else None


def found(db: Path, agent: str, session: str, text: str) -> list[dict[str, Any]]:
    """Hits of `agent` and `session` for a phrase of `text`."""
    words = phrase(text)
    assert words, f"no phrase in a {agent} session {session}"
    res = query.search(db, words, {"agent": agent, "session": session}, 50)
    return [h for h in res["hits"] if h["agent"] == agent and h["session"] == session]


def coverage_unknown(db: Path) -> dict[str, Any]:
    cov = query.coverage(db)
    got = cov.get("unknownRecordTypes") or {}
    return dict(got) if isinstance(got, dict) else {}
