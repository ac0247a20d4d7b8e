"""Searches in flight in this process, so a catch-up in another thread lets them go first.

A capturing `mcp` or `serve` catches history.db up in a thread of the process that answers
tool calls: their Python work shares one interpreter lock, and a search then runs at about
half speed while a burst is caught up (bench/burst.py, mode `same`). Promises:
- `searching()` marks one search for as long as its block runs (any thread, nested fine;
  `marked` for a whole function: `projections.query.search`);
- `give_way()` (the catch-up, between two pieces of a batch, outside SQLite) returns at
  once when no search is in flight, else sleeps in 0.5 ms steps until none is or `limit_s`
  passed: a search never waits for it, and it never waits long for a search (a stream of
  searches still lets it on every `limit_s`).
Only this process's searches count: another process's search does not share the lock.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

STEP_S = 0.0005
LIMIT_S = 0.05

_count = 0
_lock = threading.Lock()


@contextmanager
def searching() -> Iterator[None]:
    global _count
    with _lock:
        _count += 1
    try:
        yield
    finally:
        with _lock:
            _count -= 1


P = ParamSpec("P")
R = TypeVar("R")


def marked(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` runs as a search (`searching`)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with searching():
            return fn(*args, **kwargs)

    return run


def give_way(limit_s: float = LIMIT_S) -> None:
    if not _count:
        return
    end = time.monotonic() + limit_s
    while _count and time.monotonic() < end:
        time.sleep(STEP_S)
