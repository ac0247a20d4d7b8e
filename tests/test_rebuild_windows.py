"""A rebuild's memory settings change no row: read windows, page releases, cache sizes and
heap trims are invisible in history.db.

The same real log (broker facts, Claude and Codex chunks, CJK text) is built with the
defaults and with the smallest windows possible (one event per read, the log's pages
released after every read, tiny SQLite caches, no heap trim), sequentially and through the
parse process of `projections.pipeline`; every table's canonical rows
(projections.drift.digests, which also covers the FTS terms) must be equal.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eventlog import store
from projections import db, drift, heap, pipeline, query, rebuild
from tests.test_projections_support import (
    CLAUDE_SRC,
    CODEX_SRC,
    chunks_of,
    claude_line,
    codex_lines,
    make_log,
    mixed_events,
    seen,
)


def _events() -> list[object]:
    lines = b"".join(claude_line(f"u{i}", "user" if i % 2 else "assistant",
                                 f"window {i} 検索の窓 text" * (1 + i % 7)) for i in range(300))
    codex = b"".join(codex_lines("cs1", (f"codex turn {i} ranked" for i in range(200))))
    return [*mixed_events(), seen(CLAUDE_SRC, "claude", "claude.session"),
            *chunks_of(CLAUDE_SRC, lines, range(997, len(lines), 997)),
            seen(CODEX_SRC, "codex", "codex.rollout"),
            *chunks_of(CODEX_SRC, codex, range(4001, len(codex), 4001))]


def _digests(path: Path) -> dict[str, tuple[int, str]]:
    con = db.connect(path, readonly=True)
    try:
        return drift.digests(con)
    finally:
        con.close()


@pytest.mark.parametrize("parallel", [False, True], ids=["sequential", "pipeline"])
def test_smallest_windows_build_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool
) -> None:
    log = make_log(tmp_path / "log", _events())  # type: ignore[arg-type]
    try:
        wide = tmp_path / "wide.db"
        rebuild.build(wide, log, parallel=False)
        monkeypatch.setattr(rebuild, "BATCH_BYTES", 1)
        monkeypatch.setattr(rebuild, "RELEASE_BYTES", 1)
        monkeypatch.setattr(store, "RELEASE_BYTES", 1)
        monkeypatch.setattr(rebuild, "LOAD_CACHE_KIB", 64)
        monkeypatch.setattr(rebuild, "INDEX_CACHE_KIB", 64)
        monkeypatch.setattr(rebuild, "TEMP_STORE", "MEMORY")
        monkeypatch.setattr(rebuild, "THREADS", 0)
        monkeypatch.setattr(db, "BULK_HASHSIZE", 4096)
        monkeypatch.setattr(heap, "ENABLED", False)
        monkeypatch.setattr(pipeline, "STATE_BYTES", 1)  # a batch per parser state touched
        monkeypatch.setattr(pipeline, "RELEASE_BYTES", 1)  # pages dropped after every read
        narrow = tmp_path / "narrow.db"
        rebuild.build(narrow, log, parallel=parallel)
    finally:
        log.close()
    wide_d = _digests(wide)
    assert wide_d["documents"][0] > 150  # the log really holds rows in many windows
    assert _digests(narrow) == wide_d
    for q in ("window", "検索", "ranked turn"):
        assert query.search(narrow, q)["hits"] == query.search(wide, q)["hits"]
    assert heap.trim() in (True, False)  # callable again after being switched back on
