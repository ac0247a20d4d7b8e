"""End to end on the shared corpus: capture -> catch-up -> search (absent: skip; CI: fail).

Queries are derived at run time from what got indexed; no corpus text lives in this file.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from eventlog import EventLog
from projections import db, query
from projections.catchup import catch_up
from projections.drift import digests
from projections.rebuild import build

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EventLog]:
    from tests.capture_helpers import capture
    from tests.conftest import CORPUS, need
    from tests.test_capture_corpus import _layout

    need(CORPUS.is_dir(), f"shared corpus not present at {CORPUS}")
    tmp = tmp_path_factory.mktemp("corpus")
    roots, _, _ = _layout(CORPUS, tmp / "roots")
    log = EventLog(tmp / "log")
    capture(log, roots)
    path = tmp / "history.db"
    catch_up(path, log, batch=37)
    return path, log


def _sample(path: Path, sql: str) -> list[tuple[str, ...]]:
    con = sqlite3.connect(path)
    try:
        return [tuple(r) for r in con.execute(sql)]
    finally:
        con.close()


def test_every_agent_is_indexed_and_covered(indexed: tuple[Path, EventLog]) -> None:
    path, log = indexed
    agents = {r[0] for r in _sample(path, "SELECT DISTINCT agent FROM documents")}
    assert {"claude", "codex", "opencode"} <= agents
    cov = query.coverage(path)
    assert cov["events"] == log.head().seq
    assert cov["sources"] > 10 and cov["sourcesPending"] == 0 and cov["recordsParsed"] > 100


def test_documents_are_found_by_their_own_words(indexed: tuple[Path, EventLog]) -> None:
    path, _ = indexed
    rows = _sample(path, "SELECT id, agent, session, text FROM documents WHERE role = 'user'"
                         " AND kind = 'transcript' ORDER BY id")
    assert rows
    for doc_id, agent, session, text in rows[::max(1, len(rows) // 25)]:
        # whole words only: FTS matches words, the plain engine substrings
        words = sorted(re.findall(r"(?<![^\W_])[A-Za-z]{6,}(?![^\W_])", text), key=len,
                       reverse=True)
        if not words:
            continue
        flt = {"agent": agent, "session": session}
        # identical records (e.g. repeated subagent prompts) are one hit: any copy will do
        same = {r[0] for r in rows if r[3] == text}
        for engine in ("fts5", "plain"):
            res = query.search(path, words[0], flt, 50, engine=engine)
            assert same & {h["id"] for h in res["hits"]} or len(res["hits"]) == 50, (
                doc_id, engine)


def test_cjk_substring_from_the_corpus(indexed: tuple[Path, EventLog]) -> None:
    path, _ = indexed
    for doc_id, text in _sample(path, "SELECT id, text FROM documents ORDER BY id"):
        m = re.search(r"[\u4e00-\u9fff]{4,}", text)
        if m:
            pair = m.group(0)[1:3]
            fts = {h["id"] for h in query.search(path, pair, limit=50)["hits"]}
            plain = {h["id"] for h in query.search(path, pair, limit=50, engine="plain")["hits"]}
            assert fts and plain
            if len(fts) < 50:
                assert doc_id in fts or len(plain) == 50
            return
    raise AssertionError("no CJK text in the corpus")


def test_corpus_catch_up_equals_rebuild(indexed: tuple[Path, EventLog],
                                        tmp_path: Path) -> None:
    path, log = indexed
    fresh = tmp_path / "fresh.db"
    build(fresh, log)
    a, b = db.connect(path, readonly=True), db.connect(fresh, readonly=True)
    try:
        assert digests(a) == digests(b)
    finally:
        a.close()
        b.close()


def test_conversations_page_through_a_session(indexed: tuple[Path, EventLog]) -> None:
    path, _ = indexed
    conv = _sample(path, "SELECT conversation, count(*) AS n FROM documents"
                         " WHERE kind = 'transcript' GROUP BY conversation ORDER BY n DESC"
                         " LIMIT 1")[0]
    seen: list[str] = []
    after = None
    while True:
        page = query.get_conversation(path, conv[0], after, 7)
        seen += [i["id"] for i in page["items"]]
        after = page["next"]
        if after is None:
            break
    assert len(seen) == int(conv[1]) == len(set(seen))
