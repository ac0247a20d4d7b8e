"""Team search (PostgreSQL) ranks every match: an old document that is the best match comes
first however many newer documents also match."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import EventLog
from eventlog.events import MessageSent
from projections.pg import query as pgq
from projections.pg.project import project
from projections.pg.sync import sync
from tests.test_projections_support import append

pytestmark = pytest.mark.postgres

NEWER = 30


def _msg(i: int, body: str) -> MessageSent:
    return MessageSent(id=f"m{i}", sender="peer", to=["x"], kind="message", body=body,
                       at=1_700_000_000_000 + i * 1000, project="/p")


def test_an_old_best_match_outranks_many_newer_matches(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the team search once ranked only the newest CANDIDATES (5,000) matches: with it
    # lowered below the number of newer matches, the old best document never ranked
    monkeypatch.setattr(pgq, "CANDIDATES", 10, raising=False)
    log = EventLog(tmp_path / "log")
    append(log, [_msg(0, "okapi okapi okapi okapi okapi and more okapi")]
           + [_msg(i, f"one okapi among other words {i}") for i in range(1, NEWER + 1)])
    sync(log, pg_url, "alpha")
    project(pg_url, tmp_path / "scratch")
    hits = pgq.search(pg_url, "okapi", limit=5)["hits"]
    assert [h["id"] for h in hits] == ["message:m0"] + [
        f"message:m{i}" for i in range(NEWER, NEWER - 4, -1)]  # then ties, newest first
    assert pgq.search(pg_url, "okapi words", limit=50)["hits"][-1]["id"] == "message:m1"
