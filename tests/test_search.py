"""The search_history contract of projections.query: fields, filters, limits, times, errors,
injection safety, both engines, CJK, ranking, dedupe, archived documents."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from eventlog import EventLog
from eventlog.events import AliasBound, Event, FileSnapshotted, MessageSent
from projections import query
from projections.catchup import catch_up
from projections.errors import BadId, NotFound, QueryError
from tests.test_projections_support import append, chunks_of, mixed_events, seen

HIT_FIELDS = {"id", "kind", "agent", "at", "snippet", "link", "sourceLink", "message", "job",
              "run", "session", "cursor", "conversation", "project", "archived"}


@pytest.fixture(scope="module")
def hdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("search")
    log = EventLog(tmp / "log")
    append(log, mixed_events())
    path = tmp / "history.db"
    catch_up(path, log)
    log.close()
    return path


def ids(res: dict[str, Any]) -> set[str]:
    return {h["id"] for h in res["hits"]}


def test_hit_shape_and_links(hdb: Path) -> None:
    res = query.search(hdb, "café")
    assert set(res) == {"engine", "mode", "hits", "coverage"} and res["engine"] == "fts5"
    assert ids(res) == {"message:m1", "transcript:claude:u2"}
    for hit in res["hits"]:
        assert set(hit) == HIT_FIELDS
        assert len(hit["snippet"]) <= 320 and "café" in hit["snippet"]
        assert hit["sourceLink"] == "/api/history/" + hit["id"].replace(":", "%3A")
    m1 = next(h for h in res["hits"] if h["id"] == "message:m1")
    assert m1["link"] == "/?message=m1" and m1["message"] == "m1" and m1["job"] == "deploy"
    t = next(h for h in res["hits"] if h["kind"] == "transcript")
    assert t["link"] == f"/?session=s1&agent=claude&from={t['cursor'].replace(':', '%3A')}"
    assert t["conversation"] == "claude:s1" and t["project"] == "/proj"
    run = query.search(hdb, "plugh")["hits"][0]
    assert run["kind"] == "run" and run["link"] == "/api/runs/run-7?from=0"
    assert run["run"] == "run-7.log" and run["job"] == "nightly"
    dec = query.search(hdb, "lmdb", {"kind": "decision"})["hits"][0]
    assert dec["link"] == "/api/decisions/storage%20engine/history"
    cov = res["coverage"]
    assert cov["events"] > 20 and cov["sources"] == 3 and cov["lastCaptureAt"] == 5


def test_diacritics_and_case_fold(hdb: Path) -> None:
    assert ids(query.search(hdb, "CAFE")) == ids(query.search(hdb, "café"))
    assert ids(query.search(hdb, "world")) == {"message:m1"}


@pytest.mark.parametrize(("filters", "expected"), [
    ({"project": "/q"}, {"message:m2", "message:m3", "message:m4"}),
    ({"project": "/q/"}, {"message:m2", "message:m3", "message:m4"}),  # QA: trailing slash
    ({"kind": "approval"}, {"message:m3"}),
    ({"kind": "progress"}, {"message:m4"}),
    ({"kind": "report"}, {"message:m2"}),
    ({"agent": "claude"}, {"message:m1", "transcript:claude:u2"}),
    ({"session": "S1"}, {"message:m1"}),
    # a peer identity: what it sent (through its alias binding) and what was addressed to it
    ({"session": "peer-a"}, {"message:m1", "message:m2", "message:m3", "message:m4"}),
    ({"session": "peer-b"}, {"message:m1", "message:m2", "message:m3", "message:m4"}),
    ({"job": "deploy"}, {"message:m1"}),
    ({"since": 2_000, "until": 2_500}, {"message:m2", "message:m3"}),
    ({"since": "2000", "until": "2500"}, {"message:m2", "message:m3"}),
    ({"until": "1970-01-01T00:00:02.500Z"}, {"message:m1", "message:m2", "message:m3"}),
    ({"since": "1970-01-01T02:00:02.600+02:00"}, "not-m1"),
])
def test_filters(hdb: Path, filters: dict[str, Any], expected: Any) -> None:
    got: set[str] = set()
    for word in ("the", "migration", "report", "café"):
        got |= ids(query.search(hdb, word, filters, 50))
    if expected == "not-m1":
        assert "message:m1" not in got and "message:m4" in got
    else:
        assert {g for g in got if g.startswith("message:")} | (
            got & {"transcript:claude:u2"}) == expected


def test_run_metadata_connects_transcripts_to_jobs(tmp_path: Path) -> None:
    from eventlog.events import RunStarted

    log = EventLog(tmp_path / "log")
    append(log, [*mixed_events(), RunStarted(job="zebra-job", run="r9", started_at=1,
                                             session="s1")])
    catch_up(tmp_path / "h.db", log)
    got = ids(query.search(tmp_path / "h.db", "zebra", {"job": "zebra-job"}))
    assert "transcript:claude:u1" in got and not any("codex" in g for g in got)


@pytest.mark.parametrize(("limit", "n"), [(None, 10), (1, 1), ("3", 3), (50, 12), ("50", 12)])
def test_limit(tmp_path: Path, limit: Any, n: int) -> None:
    log = EventLog(tmp_path / "log")
    append(log, [MessageSent(id=f"x{i}", sender="s", to=[], kind="message",
                             body=f"lemur number {i}", at=i) for i in range(12)])
    catch_up(tmp_path / "h.db", log)
    assert len(query.search(tmp_path / "h.db", "lemur", None, limit)["hits"]) == n


@pytest.mark.parametrize("limit", [0, 51, -1, "0", "abc", "5.0", True, 2.5, " ", [], "٣"])
def test_bad_limit(hdb: Path, limit: Any) -> None:
    with pytest.raises(QueryError) as info:
        query.search(hdb, "café", None, limit)
    assert info.value.param == "limit" and str(info.value).startswith("limit:")


@pytest.mark.parametrize(("filters", "param"), [
    ({"color": "red"}, "color"),
    ({"agent": "gpt"}, "agent"),
    ({"kind": "email"}, "kind"),
    ({"since": "yesterday"}, "since"),
    ({"since": "2026-11-01T10:00:00"}, "since"),  # no timezone
    ({"until": -5}, "until"),
    ({"until": True}, "until"),
    ({"since": 10, "until": 5}, "since"),
    ({"project": ""}, "project"),
    ({"session": 7}, "session"),
    ({"include_archived": "yes"}, "include_archived"),
])
def test_bad_filters(hdb: Path, filters: dict[str, Any], param: str) -> None:
    with pytest.raises(QueryError) as info:
        query.search(hdb, "café", filters)
    assert info.value.param == param


@pytest.mark.parametrize("q", ["", "   ", "x" * 1001, " ".join(f"w{i}" for i in range(33))])
def test_bad_query(hdb: Path, q: str) -> None:
    with pytest.raises(QueryError) as info:
        query.search(hdb, q)
    assert info.value.param == "query"


def test_query_bounds_accepted(hdb: Path) -> None:
    assert query.search(hdb, "x" * 1000)["hits"] == []
    assert query.search(hdb, " ".join(f"w{i}" for i in range(32)))["hits"] == []
    assert ids(query.search(hdb, "  café  " + " " * 1000)) == CAFE  # trimmed before measuring


CAFE = {"message:m1", "transcript:claude:u2"}
NONE: set[str] = set()
# (query, fts5 hits, plain hits) over mixed_events(): every FTS5 operator, column filter and
# LIKE wildcard is a literal word (FTS5: whole words; plain: substrings), never syntax.
INJECTION_CASES: list[tuple[str, set[str], set[str]]] = [
    ('"', NONE, NONE),
    ('""', NONE, NONE),
    ('café"', CAFE, CAFE),
    ('"café', CAFE, CAFE),
    ('a"b', NONE, {'answer:q1:6e78b634507928eb', 'question:q1', 'transcript:claude:u1',
                   'transcript:claude:u2', 'transcript:codex:9d3cc74bc11422ba:0'}),
    ("'", NONE, NONE),
    ('café OR zebra', NONE, NONE),
    ('café AND', NONE, NONE),
    ('NOT café', NONE, NONE),
    ('NOT', NONE, {'run:run-7.log'}),
    ('AND', NONE, NONE),
    ('OR', NONE, {'decision:storage engine#1', 'decision:storage engine#2', 'message:m1',
                  'message:m2', 'transcript:codex:780080b79a1d1613:0'}),
    ('NEAR(café zebra)', NONE, NONE),
    ('NEAR(', NONE, NONE),
    ('text:café', NONE, NONE),
    ('title:secret', NONE, NONE),
    ('*', NONE, NONE),
    ('café*', CAFE, CAFE),
    ('^café', CAFE, CAFE),
    ('+café', CAFE, CAFE),
    ('-café', CAFE, CAFE),
    ('(café', CAFE, CAFE),
    ('café)', CAFE, CAFE),
    ('((', NONE, NONE),
    (')', NONE, NONE),
    ('{text}: café', NONE, NONE),
    ('col:*', NONE, NONE),
    ('\\', NONE, NONE),
    ('%', NONE, NONE),
    ('_', NONE, NONE),
    ('; DROP TABLE documents; --', NONE, NONE),
    ('\x00', NONE, NONE),
    ('café\x00zebra', {'transcript:claude:u2'}, {'transcript:claude:u2'}),
    ('!!!', NONE, NONE),
    ('...', NONE, NONE),
    ('🙂', NONE, NONE),
    ('🙂 café', CAFE, CAFE),
    ('מזל טוב', NONE, NONE),
    ('مرحبا بالعالم', NONE, NONE),
    ('\u202ecafé', CAFE, CAFE),
    ('ǆ', NONE, NONE),
    ('ﬁle', NONE, NONE),
    ('ß', NONE, NONE),
    ('İstanbul', NONE, NONE),
    ('中', {'message:m2', 'transcript:claude:u3'}, {'message:m2', 'transcript:claude:u3'}),
    ('中文', {'message:m2', 'transcript:claude:u3'}, {'message:m2', 'transcript:claude:u3'}),
    ('我们使用中文搜索', {'message:m2'}, {'message:m2'}),
    ("a" * 1000, NONE, NONE),
]


@pytest.mark.parametrize(("q", "fts", "plain"), INJECTION_CASES)
def test_injection_is_literal(hdb: Path, q: str, fts: set[str], plain: set[str]) -> None:
    res = query.search(hdb, q, engine="fts5")
    assert res["engine"] == "fts5" and ids(res) == fts
    res = query.search(hdb, q, engine="plain")
    assert res["engine"] == "plain" and ids(res) == plain


ENGINE_QUERIES = ["café", "zebra", "migration", "lmdb sqlite", "中文", "文搜", "使用中文",
                  "database", "xyzzy", "plugh", "okapi", "quartz", "report", "progress half"]


@pytest.mark.parametrize("q", ENGINE_QUERIES)
def test_engines_agree(hdb: Path, q: str) -> None:
    fts = query.search(hdb, q, limit=50)
    plain = query.search(hdb, q, limit=50, engine="plain")
    assert (fts["engine"], plain["engine"]) == ("fts5", "plain")
    assert ids(fts) == ids(plain) and ids(fts)


def test_cjk_two_characters(hdb: Path) -> None:
    assert ids(query.search(hdb, "中文")) == {"message:m2", "transcript:claude:u3"}
    assert ids(query.search(hdb, "搜索")) == {"message:m2"}
    assert ids(query.search(hdb, "中文 works")) == {"message:m2"}
    assert ids(query.search(hdb, "文中")) == set()


def test_ranking_user_above_assistant_above_tool(tmp_path: Path) -> None:
    from eventlog.events import SourceSeen
    from tests.test_projections_support import CLAUDE_SRC, chunks_of, claude_line

    data = (claude_line("t1", "assistant", "gnu gnu appears here")
            + claude_line("t2", "user", "gnu gnu appears here too"))
    log = EventLog(tmp_path / "log")
    append(log, [SourceSeen(source=CLAUDE_SRC, agent="claude", root="/r",
                            path="projects/-proj/s1.jsonl", layout="claude.session", at=1),
                 *chunks_of(CLAUDE_SRC, data, [])])
    catch_up(tmp_path / "h.db", log)
    hits = query.search(tmp_path / "h.db", "gnu")["hits"]
    assert [h["id"] for h in hits] == ["transcript:claude:t2", "transcript:claude:t1"]


def test_duplicates_are_dropped_and_common_terms_bounded(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, [MessageSent(id=f"d{i}", sender="s", to=[], kind="message",
                             body="identical body of text", at=i) for i in range(3)])
    append(log, [MessageSent(id=f"c{i}", sender="s", to=[], kind="message",
                             body=f"wombat {i}", at=100 + i) for i in range(6000)], prefix="c")
    catch_up(tmp_path / "h.db", log)
    assert len(query.search(tmp_path / "h.db", "identical")["hits"]) == 1
    assert len(query.search(tmp_path / "h.db", "identical", engine="plain")["hits"]) == 1
    assert len(query.search(tmp_path / "h.db", "wombat", limit=50)["hits"]) == 50


def test_archived_documents_are_searched_and_flagged(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    path = tmp_path / "h.db"
    catch_up(path, log)
    con = sqlite3.connect(path)
    con.execute("UPDATE document_rows SET archived = 1"
                " WHERE thread IN (SELECT thread FROM threads WHERE session = 's1')")
    con.commit()
    con.close()
    hits = {h["id"]: h for h in query.search(path, "zebra")["hits"]}
    assert hits["transcript:claude:u1"]["archived"] is True
    assert not any(h["archived"] for k, h in hits.items() if k != "transcript:claude:u1"
                   and h["session"] != "s1")
    hot = ids(query.search(path, "zebra", {"include_archived": False}))
    assert "transcript:claude:u1" not in hot


def test_missing_db_answers_empty(tmp_path: Path) -> None:
    res = query.search(tmp_path / "none.db", "anything")
    assert res["hits"] == [] and res["coverage"]["events"] == 0
    assert query.get_document(tmp_path / "none.db", "message:x") is None


def test_get_document(hdb: Path) -> None:
    doc = query.get_document(hdb, "message:m1")
    assert doc is not None
    assert set(doc) == {"id", "kind", "agent", "at", "body", "link", "message", "job", "run",
                        "session", "cursor"}
    assert doc["body"] == "Hello wörld, the café opens"
    assert query.get_document(hdb, "message:nope") is None
    for bad in ["", "m1", "message:", ":x", "MESSAGE:x", "message:a\nb", "x" * 5000]:
        with pytest.raises(BadId):
            query.get_document(hdb, bad)


def test_conversation_pages(hdb: Path) -> None:
    first = query.get_conversation(hdb, "claude:s1", limit=2)
    assert [i["id"] for i in first["items"]] == ["transcript:claude:u1", "transcript:claude:u2"]
    assert first["next"] is not None
    rest = query.get_conversation(hdb, "claude:s1", after=first["next"], limit="20")
    assert [i["id"] for i in rest["items"]] == ["transcript:claude:u3", "transcript:claude:u9"]
    assert rest["next"] is None
    assert query.get_conversation(hdb, "s1")["id"] == "claude:s1"  # a bare session id
    with pytest.raises(NotFound):
        query.get_conversation(hdb, "claude:nope")
    with pytest.raises(QueryError) as info:
        query.get_conversation(hdb, "claude:s1", after="abc")
    assert info.value.param == "after"
    with pytest.raises(QueryError):
        query.get_conversation(hdb, "claude:s1", limit=0)
    with pytest.raises(BadId):
        query.get_conversation(hdb, "")


def test_decision_history_and_run_log(hdb: Path) -> None:
    hist = query.decision_history(hdb, "storage engine")
    assert hist is not None
    assert [r["revision"] for r in hist["revisions"]] == [1, 2]
    assert query.decision_history(hdb, "nothing") is None
    log = query.run_log(hdb, "run-7")
    assert log is not None and log["text"] == "starting plugh\nstep two\n"
    assert log["job"] == "nightly" and log["next"] is None
    assert query.run_log(hdb, "run-7.log", "9")["text"] == "plugh\nstep two\n"  # type: ignore[index]
    assert query.run_log(hdb, "nope") is None
    with pytest.raises(QueryError):
        query.run_log(hdb, "run-7", -1)


def test_run_log_without_run_started_names_its_job_agent_and_time(tmp_path: Path) -> None:
    """QA: /api/runs answered job/agent/at null for a run known only from its files."""
    from eventlog.events import FileSnapshotted

    log = EventLog(tmp_path / "log")
    meta = json.dumps({"job": "j9", "agent": "codex", "session": "S5"}).encode()
    append(log, [seen("runs:r3:2026-11-21T00-00-00Z-a.json", "runs", "runs.meta"),
                 FileSnapshotted(source="runs:r3:2026-11-21T00-00-00Z-a.json", blake3="b",
                                 size=len(meta), data=meta, at=7),
                 seen("runs:r3:2026-11-21T00-00-00Z-a.log", "runs", "runs.log"),
                 seen("runs:r3:2026-11-22T00-00-00Z-b.log", "runs", "runs.log"),
                 *chunks_of("runs:r3:2026-11-21T00-00-00Z-a.log", b"hello\n", []),
                 *chunks_of("runs:r3:2026-11-22T00-00-00Z-b.log", b"bye\n", [])])
    path = tmp_path / "h.db"
    catch_up(path, log)
    a = query.run_log(path, "2026-11-21T00-00-00Z-a")
    assert a is not None and a["text"] == "hello\n"
    assert (a["job"], a["session"], a["agent"], a["at"]) == ("j9", "S5", "codex",
                                                              1_795_219_200_000)
    b = query.run_log(path, "2026-11-22T00-00-00Z-b")
    assert b is not None and (b["job"], b["agent"], b["at"]) == (None, "other",
                                                                 1_795_305_600_000)


def test_session_filter_by_peer_identity_finds_what_it_sent(tmp_path: Path) -> None:
    """QA: a peer's own messages without a session field were not found by its identity;
    what was addressed to it is found too (schema 8: recipients)."""
    log = EventLog(tmp_path / "log")
    append(log, [AliasBound(alias="peer-z", session="S7", agent="codex", at=1),
                 MessageSent(id="z1", sender="peer-z", to=["lead"], kind="report",
                             body="ibex report", at=2),
                 MessageSent(id="z2", sender="lead", to=["peer-z"], kind="message",
                             body="ibex request", at=3)])
    catch_up(tmp_path / "h.db", log)
    assert ids(query.search(tmp_path / "h.db", "ibex", {"session": "peer-z"})) == {
        "message:z1", "message:z2"}
    assert ids(query.search(tmp_path / "h.db", "ibex", {"session": "S7"})) == set()


def test_alias_of_unknown_agent_is_other(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log")
    append(log, [AliasBound(alias="bot", session="S9", agent="windsurf", at=1),
                 MessageSent(id="b1", sender="bot", to=[], kind="message", body="narwhal",
                             at=2, session="S9")])
    catch_up(tmp_path / "h.db", log)
    hit = query.search(tmp_path / "h.db", "narwhal", {"agent": "other", "session": "bot"})
    assert ids(hit) == {"message:b1"}


VOCAB = ["alpha", "bravo", "charlie", "delta", "café", "naïve", "zulu", "中文", "搜索引擎",
         "データ", "Straße", "x9"]


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6), min_size=1,
                     max_size=25),
       q=st.lists(st.sampled_from([*VOCAB, "cafe", "NAIVE", "文搜", "索引", "strasse", "ALPHA"]),
                  min_size=1, max_size=3))
@example(docs=[["Straße"]], q=["strasse"])
@example(docs=[["搜索引擎 中文"]], q=["文搜"])
def test_engines_agree_on_random_corpora(tmp_path_factory: pytest.TempPathFactory,
                                         docs: list[list[str]], q: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("eng")
    log = EventLog(tmp / "log")
    append(log, [MessageSent(id=f"r{i}", sender="s", to=[], kind="message", body=" ".join(d),
                             at=i) for i, d in enumerate(docs)])
    catch_up(tmp / "h.db", log)
    text = " ".join(q)
    fts = query.search(tmp / "h.db", text, limit=50)
    plain = query.search(tmp / "h.db", text, limit=50, engine="plain")
    assert ids(fts) == ids(plain)
    log.close()
    query.close_connections()


def test_plain_only_database(tmp_path: Path) -> None:
    from projections.drift import check
    from projections.rebuild import rebuild

    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    path = tmp_path / "h.db"
    rebuild(path, log, engine="plain")  # what a SQLite without FTS5 builds
    res = query.search(path, "café")
    assert res["engine"] == "plain" and ids(res) == {"message:m1", "transcript:claude:u2"}
    assert query.search(path, "café", engine="fts5")["engine"] == "plain"
    append(log, [MessageSent(id="late", sender="s", to=[], kind="message", body="late café",
                             at=99)], prefix="late")
    catch_up(path, log)
    assert "message:late" in ids(query.search(path, "cafe"))
    assert check(path, log)["ok"]


@pytest.mark.parametrize("filler", ["plain ascii words ", "日本語のテキスト café naïve ",
                                    "한국어 검색 ", "İstanbul ǆungla ß "])
def test_snippets_are_bounded_and_centred_on_the_match(filler: str) -> None:
    from projections.text import snippet

    text = filler * (60_000 // len(filler)) + " the Naïve NEEDLE sits here " + filler * 50
    for tokens in (["needle"], ["sits", "needle"]):
        snip = snippet(text, tokens)
        assert len(snip) <= 320 and "NEEDLE" in snip
    assert snippet("short text", ["absent"]) == "short text"


def test_transcript_hits_carry_no_broker_message(tmp_path: Path) -> None:
    """An agent's own message id (opencode msg_…) is not a broker message: `message` is null,
    so nothing navigates to /?message=<msg_…> and finds nothing."""
    import blake3

    root = Path(__file__).parent / "fixtures" / "opencode" / "json-storage" / "input"
    events: list[Event] = []
    for f in sorted(root.rglob("*.json")):
        rel = f.relative_to(root).as_posix()
        src = f"opencode:r9:{rel}"
        data = f.read_bytes()
        events.append(seen(src, "opencode", "opencode.json"))
        events.append(FileSnapshotted(source=src, blake3=blake3.blake3(data).hexdigest(),
                                      size=len(data), data=data, at=5))
    log = EventLog(tmp_path / "log")
    append(log, events)
    catch_up(tmp_path / "h.db", log)
    log.close()
    res = query.search(tmp_path / "h.db", "presentation scripts")
    assert res["hits"], "the opencode part was not indexed"
    for hit in res["hits"]:
        assert hit["kind"] == "transcript" and hit["agent"] == "opencode"
        assert hit["message"] is None
        assert hit["link"].startswith("/?session=")
        doc = query.get_document(tmp_path / "h.db", hit["id"])
        assert doc is not None and doc["message"] is None


@pytest.mark.parametrize("alias_first", [True, False])
def test_sender_agent_does_not_depend_on_fact_order(tmp_path: Path, alias_first: bool) -> None:
    """A peer bound to a codex session is a codex sender, whether the binding was recorded
    before or after its messages; an explicit `agent` in the message's extra still wins."""
    msg = MessageSent(id="x1", sender="peer-z", to=["lead"], kind="message", body="ibex one",
                      at=1000)
    own = MessageSent(id="x2", sender="peer-z", to=["lead"], kind="message", body="ibex two",
                      at=1001, extra={"agent": "claude"})
    alias = AliasBound(alias="peer-z", session="S1", agent="codex", at=500)
    events: list[Event] = [alias, msg, own] if alias_first else [msg, own, alias]
    log = EventLog(tmp_path / "log")
    append(log, events)
    catch_up(tmp_path / "h.db", log)
    log.close()
    agents = {h["id"]: h["agent"] for h in query.search(tmp_path / "h.db", "ibex")["hits"]}
    assert agents == {"message:x1": "codex", "message:x2": "claude"}
