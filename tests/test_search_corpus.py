"""End to end on the shared corpus: capture -> catch-up -> search (absent: skip; CI: fail).

Queries are derived at run time from the raw corpus files (read with json alone, not with our
parsers), so text a parser drops is missed by the test; no corpus text lives in this file.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

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
    db.register_functions(con)  # the `documents` view decodes text with `doc_text`
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


WORD = re.compile(r"(?<![^\W_])[A-Za-z]{7,}(?![^\W_])")


def _raw_prompts(corpus: Path) -> list[tuple[str, str, str]]:
    """(agent, session, word): a word of a typed user prompt per session, read from the raw
    files with json alone, so a parser that drops text cannot also drop the query."""
    out: list[tuple[str, str, str]] = []
    for f in sorted((corpus / "claude-code").rglob("*.jsonl")):
        if f.name.startswith("agent-") or "subagent" in f.name or f.parent.name == "subagents":
            continue
        for line in f.read_bytes().splitlines():
            obj = _json(line)
            message = obj.get("message")
            if obj.get("type") != "user" or obj.get("isSidechain") or obj.get("isMeta") \
                    or not isinstance(message, dict) or not isinstance(obj.get("sessionId"), str):
                continue
            content = message.get("content")
            words = WORD.findall(content[:2000]) if isinstance(content, str) else []
            if words and not content.lstrip().startswith("<"):
                out.append(("claude", obj["sessionId"], max(words, key=len)))
                break
    for f in sorted((corpus / "codex").rglob("*rollout-*.jsonl")):
        session = None
        for line in f.read_bytes().splitlines():
            obj = _json(line)
            payload = obj.get("payload") if isinstance(obj.get("payload"), dict) else {}
            if obj.get("type") == "session_meta" and session is None:  # the file's own id
                session = payload.get("id")
            if obj.get("type") == "event_msg" and payload.get("type") == "user_message":
                words = WORD.findall(str(payload.get("message", ""))[:2000])
                if words and isinstance(session, str):
                    out.append(("codex", session, max(words, key=len)))
                    break
    return out


def _json(line: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def test_sessions_are_found_by_words_of_their_raw_prompts(
    indexed: tuple[Path, EventLog], corpus: Path
) -> None:
    path, _ = indexed
    prompts = _raw_prompts(corpus)
    assert len({a for a, _, _ in prompts}) == 2 and len(prompts) >= 8, prompts
    for agent, session, word in prompts:
        flt = {"agent": agent, "session": session}
        for engine in ("fts5", "plain"):
            res = query.search(path, word, flt, 50, engine=engine)
            assert res["hits"], (agent, session, word, engine)
            assert all(h["session"] == session and h["agent"] == agent for h in res["hits"])


def test_cjk_substring_from_the_corpus(indexed: tuple[Path, EventLog]) -> None:
    path, _ = indexed
    rows = _sample(path, "SELECT id, agent, session, text FROM documents ORDER BY id")
    for doc_id, agent, session, text in rows:
        m = re.search(r"[\u4e00-\u9fff]{4,}", text)
        if m:
            pair = m.group(0)[1:3]  # a substring inside a run of CJK, not a word of its own
            flt = {"agent": agent, "session": session}
            for engine in ("fts5", "plain"):
                found = query.search(path, pair, flt, limit=50, engine=engine)["hits"]
                same = {r[0] for r in rows if r[2] == session and pair in r[3]}
                assert same & {h["id"] for h in found}, (doc_id, engine)
                assert all(pair in h["snippet"] or h["id"] in same for h in found)
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


def test_corpus_parallel_build_answers_as_catch_up(indexed: tuple[Path, EventLog],
                                                   corpus: Path, tmp_path: Path) -> None:
    """The parse-process build (projections.pipeline) over the real corpus: every table and
    the answers to the raw-prompt queries are those of incremental catch-up."""
    path, log = indexed
    fresh = tmp_path / "parallel.db"
    build(fresh, log, parallel=True)
    a, b = db.connect(path, readonly=True), db.connect(fresh, readonly=True)
    try:
        assert digests(a) == digests(b)
    finally:
        a.close()
        b.close()
    for _, _, word in _raw_prompts(corpus):
        assert query.search(path, word, None, 50) == query.search(fresh, word, None, 50)


def test_corpus_capture_with_a_following_build(tmp_path: Path, corpus: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`capture` into a home without history.db starts the follow build
    (cli.services.catchup.Follower) once it has read FOLLOW_BYTES: the file it swaps in is
    the rebuild of the whole log."""
    from cli.services import catchup
    from cli.services.config import Home
    from readers.capture import Capturer, Options
    from tests.test_capture_corpus import _layout

    monkeypatch.setattr(catchup, "FOLLOW_BYTES", 1)
    roots, _, _ = _layout(corpus, tmp_path / "roots")
    home = Home(tmp_path / "home")
    follower = catchup.Follower(home)
    engine = Capturer(home.log(), roots, Options(settle_s=0.0))
    step = engine.tick

    def tick() -> None:  # the progress callback runs every 0.1 s: here after every tick
        step()
        follower.tick(engine)

    engine.tick = tick  # type: ignore[method-assign]
    stats = engine.run_once(follower.tick)
    assert follower.builder is not None, "the follow build never started"
    follower.finish()
    assert stats.appended > 100
    log = home.log(readonly=True)
    fresh = tmp_path / "fresh.db"
    build(fresh, log, parallel=False)
    a, b = db.connect(home.history_db, readonly=True), db.connect(fresh, readonly=True)
    try:
        assert digests(a) == digests(b)
    finally:
        a.close()
        b.close()
    for _, _, word in _raw_prompts(corpus)[:5]:
        assert query.search(home.history_db, word, None, 20) == query.search(fresh, word, None, 20)
