"""Plain dates on the terminal: `--since 2026-01-01` is midnight local time."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest

from cli.services.dates import local_midnight
from tests.conftest import run_cli


def test_a_plain_date_is_local_midnight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        want = dt.datetime(2026, 1, 1, 5, tzinfo=dt.UTC).timestamp() * 1000  # EST = UTC-5
        assert local_midnight("2026-01-01") == str(int(want))
        assert local_midnight("2026-07-01") == str(int(
            dt.datetime(2026, 7, 1, 4, tzinfo=dt.UTC).timestamp() * 1000))  # EDT
    finally:
        monkeypatch.undo()
        time.tzset()
    for other in ("2026-01-01T00:00:00Z", "1767225600000", "2026-02-30", "yesterday", 5):
        assert local_midnight(other) == other


def test_search_and_history_take_plain_dates(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_cli(home, "demo", "--no-search").returncode == 0
    env = {"TZ": "UTC"}
    day = run_cli(home, "search", "tangerine", "--since", "2026-03-03", env=env)
    assert day.returncode == 0, day.stderr  # refused for "no timezone" before
    assert b"2 hit(s)" in day.stdout
    after = run_cli(home, "search", "tangerine", "--since", "2026-03-04", env=env)
    assert after.returncode == 0 and b"0 hit(s)" in after.stdout
    until = run_cli(home, "search", "tangerine", "--until", "2026-03-03", env=env)
    assert until.returncode == 0 and b"0 hit(s)" in until.stdout  # midnight: before the day
    hist = run_cli(home, "history", "-p", "/home/demo/webapp", "--since", "2026-03-05",
                   env=env)
    assert hist.returncode == 0 and b"saffron" in hist.stdout and b"tangerine" not in hist.stdout
    bad = run_cli(home, "search", "tangerine", "--since", "2026-02-30")
    assert bad.returncode == 2 and b"--since" in bad.stderr
    assert b"midnight local time" in run_cli(home, "search", "--help").stdout
