"""Releasing the log's mapped pages during long reads changes no byte that is read.

Whole-log reads (`iter_raw`, `verify.scan`, `copy_to`) drop their mapped pages as they go
(`eventlog.pages`); here they release after every chunk (or all the time) on a real LMDB
log, and must give exactly what they give without releasing. Memory figures are
bench/memory.py's, not these tests'.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eventlog import pages, store, verify
from eventlog.events import MessageSent
from eventlog.store import EventLog


def _log(path: Path, n: int = 600) -> EventLog:
    log = EventLog(path, command="test")
    for start in range(0, n, 200):
        log.append([
            (f"message\x1fm{i}".encode(),
             MessageSent(id=f"m{i}", sender="lead", to=["x"], kind="message",
                         body=f"body {i} " + "x" * (i * 37 % 5000), at=1_700_000_000_000 + i))
            for i in range(start, start + 200)
        ])
    return log


def test_iter_raw_releasing_after_every_chunk_reads_the_same_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path / "log")
    try:
        before = [(r.seq, r.value) for r in log.read_raw(1, 10_000)]
        monkeypatch.setattr(store, "RELEASE_BYTES", 1)
        after = [(r.seq, r.value) for r in log.iter_raw(1, batch=7, check=True)]
        assert after == before and len(before) == log.head().seq
        if sys.platform.startswith("linux"):  # the map was found and advised
            assert log.release_pages() > 0
        assert [(r.seq, r.value) for r in log.read_raw(1, 10_000)] == before
    finally:
        log.close()


def test_scan_releasing_all_the_time_gives_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path / "log")
    try:
        plain = verify.scan(log, batch=50)
        monkeypatch.setattr(verify, "RELEASE_BYTES", 1)
        released = verify.scan(log, batch=50)
        assert plain.ok and released.ok
        assert (released.records, released.head_hash, released.bytes, released.keys) == (
            plain.records, plain.head_hash, plain.bytes, plain.keys)
    finally:
        log.close()


def test_copy_while_releasing_is_a_sound_identical_log(tmp_path: Path) -> None:
    log = _log(tmp_path / "log", n=1000)
    try:
        with pages.releasing(log.path, every=0.0005):  # nested: releases even more often
            log.copy_to(tmp_path / "copy", compact=False)
        original = [(r.seq, r.value) for r in log.read_raw(1, 10_000)]
    finally:
        log.close()
    copy = EventLog(tmp_path / "copy", readonly=True, create=False)
    try:
        assert [(r.seq, r.value) for r in copy.read_raw(1, 10_000)] == original
        report = verify.scan(copy)
        assert report.ok and report.records == len(original)
    finally:
        copy.close()


def test_many_small_reads_add_up_to_a_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-running process catches up a little after each capture commit: the budget
    counts every read of the log object, not one call's."""
    log = _log(tmp_path / "log")
    try:
        released: list[int] = []
        real = log.release_pages

        def counted() -> int:
            released.append(1)
            return real()

        monkeypatch.setattr(log, "release_pages", counted)
        monkeypatch.setattr(store, "RELEASE_BYTES", 100_000)
        total = 0
        for seq in range(1, log.head().seq + 1):
            (rec,) = log.read_raw(seq, 1)
            assert len(rec.value) < 100_000
            total += len(rec.value)
        assert total > 200_000 and 2 <= len(released) <= total // 100_000
    finally:
        log.close()


def test_appends_add_up_to_a_release_and_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long capture reads the key index and the tree's edges through the map while it
    appends: its committed bytes count toward a release too (`APPEND_RELEASE_BYTES`, apart
    from reads), and appending on after a release (and re-reading what was released) changes
    no record."""
    monkeypatch.setattr(store, "APPEND_RELEASE_BYTES", 50_000)
    monkeypatch.setattr(store, "RELEASE_BYTES", 1 << 40)  # reads do not release here
    log = EventLog(tmp_path / "log", command="test")
    try:
        released: list[int] = []
        real = log.release_pages

        def counted() -> int:
            released.append(real())
            return released[-1]

        monkeypatch.setattr(log, "release_pages", counted)
        written = 0
        for start in range(0, 600, 50):
            batch = [(f"message\x1fm{i}".encode(),
                      MessageSent(id=f"m{i}", sender="lead", to=["x"], kind="message",
                                  body=f"body {i} " + "y" * (i * 53 % 4000), at=1 + i))
                     for i in range(start, start + 50)]
            written += sum(len(m.body) for _, m in batch)
            log.append(batch)
            log.append(batch[:10])  # duplicates: the key index is read through the map
        assert written > 500_000 and len(released) >= written // 50_000 // 2
        if sys.platform.startswith("linux"):
            assert all(n > 0 for n in released)
        report = verify.scan(log)
        assert report.ok and report.records == log.head().seq == 601  # + the writer event
        assert log.duplicates() == 120
    finally:
        log.close()
