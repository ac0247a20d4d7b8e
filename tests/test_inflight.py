"""projections.inflight: a catch-up in a search's process lets the search go first."""

from __future__ import annotations

import threading

import pytest

from projections import inflight


def test_no_search_no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(inflight.time, "sleep", slept.append)
    inflight.give_way()
    assert slept == []


def test_gives_way_until_the_search_ends() -> None:
    entered, release, left = threading.Event(), threading.Event(), threading.Event()

    def search() -> None:
        with inflight.searching():
            entered.set()
            release.wait(30)
            left.set()  # (set inside the block: the count drops right after)

    t = threading.Thread(target=search)
    t.start()
    entered.wait(30)
    threading.Timer(0.02, release.set).start()
    inflight.give_way(limit_s=30)
    assert left.is_set()  # it returned only once the search was over
    t.join()


def test_never_waits_past_its_limit_and_nests() -> None:
    with inflight.searching(), inflight.searching():
        inflight.give_way(limit_s=0.01)  # returns although the searches go on
    assert inflight._count == 0  # both ended


def test_a_search_is_marked_while_it_runs(tmp_path: object, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    from pathlib import Path

    from projections import query

    seen: list[int] = []
    real = query._open

    def opened(path: Path) -> object:
        seen.append(inflight._count)
        return real(path)

    monkeypatch.setattr(query, "_open", opened)
    query.search(Path(str(tmp_path)) / "history.db", "anything")
    assert seen == [1] and inflight._count == 0
