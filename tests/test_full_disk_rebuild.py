"""A disk that fills during a rebuild's full-text build is said as a full disk.

Found in issue 31's third round on a 3 MiB tmpfs with room for the log and history.db but
not for a rebuild beside them: `reindex` and `verify` said "internal error (RuntimeError)"
(the full-text build's failure wrapped), and `verify` then marked history.db as drifted.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cli.services.audit import projection
from cli.services.config import Home
from cli.services.errors import from_exception
from eventlog import EventLog
from eventlog.events import MessageSent
from projections import drift, fts_bulk, stale
from projections.catchup import catch_up

FULL = "database or disk is full"


def _failed_feed(error: Exception) -> fts_bulk.BulkFeed:
    """A feed whose indexer failed with `error` (what `_put`, `_write` or `_reap` recorded)."""
    feed = object.__new__(fts_bulk.BulkFeed)
    feed.error = error
    return feed


@pytest.mark.parametrize("said", [
    sqlite3.OperationalError(FULL),  # inline: the indexer's own error
    RuntimeError(f"the full-text process said 'OperationalError: {FULL}' (exit code 1)"),
])
def test_a_full_disk_in_the_full_text_build_is_a_full_disk(said: Exception) -> None:
    feed = _failed_feed(said)
    with pytest.raises(sqlite3.OperationalError) as caught:
        feed._raise()
    shown = from_exception(caught.value)
    assert shown.message.startswith("disk full") and "free space" in shown.message


def test_another_failure_of_the_full_text_build_stays_an_internal_error() -> None:
    feed = _failed_feed(RuntimeError("the full-text process said 'ValueError: x' (exit code 1)"))
    with pytest.raises(RuntimeError):
        feed._raise()


def test_verify_on_a_full_disk_says_unchecked_not_drift(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home = Home(tmp_path / "home")
    with EventLog(home.root / "log") as log:
        log.append([(b"m1", MessageSent(id="m1", sender="s", to=[], kind="message",
                                        body="hello", at=1))])
        catch_up(home.history_db, log)

        def no_room(*_: object, **__: object) -> dict[str, object]:
            raise sqlite3.OperationalError(FULL)

        monkeypatch.setattr(drift, "check", no_room)
        section = projection.verify_section(home, log)
    assert section["ok"] is False and section.get("unchecked") is True
    assert "disk is full" in section["detail"] and "drift" not in section["detail"].lower()
    assert stale.stale_note(home.history_db) is None  # searches are not told it drifted
