"""Around literal search (issue 28): the terminal's prefix search (`zebra*`), "did you mean"
suggestions from the index's own words, and one hit per conversation — in the query API, the
ranking door (`rank.top`), and the three front ends (terminal, MCP, HTTP)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cli.mcp.server import call_tool
from cli.services.config import Home
from eventlog import EventLog
from eventlog.events import Event, MessageSent
from projections import db, query, rank, ranking, search, suggest
from projections.catchup import catch_up
from projections.errors import QueryError
from projections.rank import champions
from projections.rows import put_document
from projections.text import query_prefixes
from tests.conftest import run_cli
from tests.test_projections_support import append

# (id, thread, body): conversation `thread:<thread>`; t1's messages rank above t2's
MESSAGES = [
    ("m1", "t1", "zebrafish zebrafish tank"),
    ("m2", "t1", "the zebrafish tank again"),
    ("m3", "t1", "zebrafish notes zebrafish"),
    ("m4", "t2", "a long note that mentions one zebrafish among many other words here"),
    ("m5", "t3", "zebra crossing near the office"),
    ("m6", "t4", "zebras at the zoo"),
    ("m7", "t5", "a tank of goldfish"),
    ("m8", "t6", "goldfish goldfish goldfish"),
    ("m9", "t7", "我们使用中文搜索"),
]


def _events() -> list[Event]:
    return [MessageSent(id=mid, sender="peer-a", to=["peer-b"], kind="message", body=body,
                        at=1000 + i, project="/p", thread=thread)
            for i, (mid, thread, body) in enumerate(MESSAGES)]


@pytest.fixture(scope="module")
def hhome(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("around") / "home"
    home.mkdir()
    log = EventLog(home / "log")
    append(log, _events())
    catch_up(home / "history.db", log)
    log.close()
    return home


def ids(res: dict[str, Any]) -> list[str]:
    return [h["id"] for h in res["hits"]]


# -- prefix ----------------------------------------------------------------------------------

def test_query_prefixes_reads_only_a_trailing_star_on_two_characters() -> None:
    assert query_prefixes("zebra*") == {"zebra"}
    assert query_prefixes("zebra* tank") == {"zebra"}
    assert query_prefixes("ze*") == {"ze"}
    assert query_prefixes("z* *") == set()  # one character: the word "z"; `*` alone: nothing
    assert query_prefixes("foo*bar") == set()  # not trailing: two words
    assert query_prefixes("zebra zebra*") == set()  # the word implies the prefix
    assert query_prefixes("zebra**") == {"zebra"}


def test_prefix_matches_words_starting_with_it(hhome: Path) -> None:
    db_path = hhome / "history.db"
    got = set(ids(query.search(db_path, "zebra*", limit=50, prefix=True)))
    assert got == {"message:m1", "message:m2", "message:m3", "message:m4", "message:m5",
                   "message:m6"}
    # literal by default (MCP, HTTP): `*` is punctuation, the word "zebra" only
    assert ids(query.search(db_path, "zebra*", limit=50)) == ["message:m5"]
    # AND with a word; the plain engine matches substrings anyway
    assert set(ids(query.search(db_path, "zebra* tank", prefix=True))) == {
        "message:m1", "message:m2"}
    plain = query.search(db_path, "zebra*", limit=50, prefix=True, engine="plain")
    assert set(ids(plain)) == got
    # one character: the word itself; a CJK run matches as a substring with or without `*`
    assert ids(query.search(db_path, "a*", limit=50, prefix=True)) == ["message:m7",
                                                                       "message:m4"]
    for text in ("中文*", "中文", "中*", "文搜*"):
        assert ids(query.search(db_path, text, prefix=True)) == ["message:m9"], text


def test_prefix_is_ranked_by_the_reference(hhome: Path) -> None:
    con = db.connect(hhome / "history.db", readonly=True)
    try:
        ref = [int(r) for r, _ in con.execute(
            ranking.statement("documents_fts", "1"), ['"zebra" *', -1, 0])]
        got = query.search(hhome / "history.db", "zebra*", limit=50, prefix=True)
        rowid = {str(i): int(r) for r, i in con.execute("SELECT rowid, id FROM documents")}
        assert [rowid[i] for i in ids(got)] == ref
    finally:
        con.close()


def test_rank_top_never_answers_a_prefix_from_the_lists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"zebra" has a champion list; `zebra*` must not be answered from it (it would miss
    every zebrafish)."""
    monkeypatch.setattr(champions, "CHAMPIONS", 4)
    monkeypatch.setattr(champions, "HOT_DF", 6)
    monkeypatch.setattr("projections.rank.SMALL_HOME", 0)  # lists at any size
    path = tmp_path / "history.db"
    con = db.connect(path)
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for i in range(40):
        text = "zebra " * (i // 2 + 1) if i % 2 else f"zebrafish {'x ' * (i % 5)}"
        put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent": "claude",
                           "at": 1000 + i, "session": "s", "role": "user", "text": text})
    con.execute("COMMIT")
    rank.build(con)
    assert champions.candidates(con, "zebra") is not None  # a list the door could use
    word = rank.Match("documents_fts", '"zebra"', "1", [], ["zebra"])
    assert rank.certified(con, ["zebra"], 2, search.take(con, 2, "1", [])) is not None
    assert rank.top(con, word, 2, 40, search.take(con, 2, "1", [])) is not None
    match = word._replace(expr='"zebra" *', prefix=True)
    assert rank.top(con, match, 2, 40, search.take(con, 2, "1", [])) is None
    con.close()
    query.close_connections()
    got = query.search(path, "zebra*", limit=20, prefix=True)
    assert any(h["snippet"].startswith("zebrafish") for h in got["hits"])


# -- did you mean ----------------------------------------------------------------------------

def test_suggestions_when_a_word_matches_nothing(hhome: Path) -> None:
    db_path = hhome / "history.db"
    res = query.search(db_path, "zebrafsh")
    assert res["hits"] == [] and res["suggestions"] == {"zebrafsh": ["zebrafish", "zebras"]}
    # best by distance, then by documents (goldfish is in 2, goldfsh → goldfish)
    assert query.search(db_path, "goldfsh")["suggestions"] == {"goldfsh": ["goldfish"]}
    # a word the index holds gets none, though the AND found nothing
    res = query.search(db_path, "goldfish zebrafsh")
    assert res["hits"] == [] and res["suggestions"] == {"zebrafsh": ["zebrafish", "zebras"]}
    assert query.search(db_path, "goldfish crossing")["suggestions"] == {}
    # hits: no suggestions; nothing near: none; the plain engine has no vocabulary
    assert "suggestions" not in query.search(db_path, "zebrafish")
    assert query.search(db_path, "qqqqqqq")["suggestions"] == {}
    assert query.search(db_path, "zebrafsh", engine="plain")["suggestions"] == {}
    assert query.search(db_path, "zebrafsh*", prefix=True)["suggestions"] == {}


def test_nearest_skips_common_words_by_range(tmp_path: Path) -> None:
    """Words with a list (`rank_terms`) come with their counts and are never walked; the
    terms between them are read from fts5vocab, bounds included."""
    path = tmp_path / "history.db"
    con = db.connect(path)
    db.create_schema(con, engine="fts5")
    words = ["tank", "tanks", "tanker", "tan", "tango", "tank1", "tanka", "tb", "t"]
    con.execute("BEGIN")
    for i, w in enumerate(words):
        put_document(con, {"id": f"message:{i}", "kind": "message", "agent": "other",
                           "at": i, "text": w})
    con.execute("INSERT INTO rank_terms(term, df) VALUES ('tank', 9000), ('tanker', 7000)")
    con.execute("COMMIT")
    assert suggest._terms(con, "t") == {
        "t": 1, "tan": 1, "tango": 1, "tank": 9000, "tank1": 1, "tanka": 1, "tanker": 7000,
        "tanks": 1, "tb": 1}
    assert suggest.nearest(con, "tanx") == ["tank", "tan"]  # distance 1, tank in more docs
    con.close()


def test_suggest_is_fast_on_a_large_vocabulary(tmp_path: Path) -> None:
    """200,000 distinct words: the suggestion reads the terms starting as the word does
    (here about a sixteenth of them), in well under the bound."""
    path = tmp_path / "history.db"
    con = db.connect(path)
    con.execute("PRAGMA journal_mode = OFF")
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    con.executemany("INSERT INTO documents_fts(rowid, text) VALUES (?, ?)",
                    ((i, " ".join(f"w{i * 10 + j:x}q" for j in range(10)))
                     for i in range(1, 20_001)))
    con.execute("COMMIT")
    import time

    start = time.perf_counter()
    assert suggest.suggest(con, ["w1234z"])["w1234z"][0] == "w1234q"  # 1 edit, then 2
    assert time.perf_counter() - start < 2.0  # measured: see docs/search.md
    con.close()


# -- one hit per conversation ----------------------------------------------------------------

def test_group_gives_the_best_hit_of_each_conversation(hhome: Path) -> None:
    db_path = hhome / "history.db"
    every = query.search(db_path, "zebrafish", limit=50)
    best: dict[str, str] = {}
    for h in every["hits"]:
        best.setdefault(h["conversation"], h["id"])
    got = query.search(db_path, "zebrafish", limit=50, group="conversation")
    assert ids(got) == list(best.values()) and len(best) == 2
    assert ids(query.search(db_path, "zebrafish", limit=1, group="conversation")) == ids(
        every)[:1]
    plain = query.search(db_path, "zebrafish", limit=50, group="conversation", engine="plain")
    assert len({h["conversation"] for h in plain["hits"]}) == len(plain["hits"]) == 2
    with pytest.raises(QueryError) as err:
        query.search(db_path, "zebrafish", group="session")
    assert err.value.param == "group"


def test_group_reads_more_pages_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 matches of one conversation rank above the next conversation's only match: a
    second page is read to find it, up to `GROUP_ROWS` ranked matches."""
    path = tmp_path / "history.db"
    con = db.connect(path)
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for i in range(300):
        put_document(con, {"id": f"message:a{i}", "kind": "message", "agent": "other",
                           "at": i, "conversation": "thread:a", "role": "user",
                           "text": f"okapi okapi {i}"})
    put_document(con, {"id": "message:b", "kind": "message", "agent": "other", "at": 0,
                       "conversation": "thread:b", "role": "tool_result",
                       "text": "okapi " + "filler " * 50})
    con.execute("COMMIT")
    con.close()
    got = query.search(path, "okapi", limit=2, group="conversation")
    assert [h["conversation"] for h in got["hits"]] == ["thread:a", "thread:b"]
    monkeypatch.setattr(search, "GROUP_ROWS", 100)
    got = query.search(path, "okapi", limit=2, group="conversation")
    assert [h["conversation"] for h in got["hits"]] == ["thread:a"]


# -- the front ends --------------------------------------------------------------------------

def _json(out: Any) -> dict[str, Any]:
    assert out.returncode == 0, out.stderr.decode()
    res: dict[str, Any] = json.loads(out.stdout)
    return res


def test_terminal(hhome: Path) -> None:
    res = _json(run_cli(hhome, "search", "zebra*", "--limit", "50", "--json"))
    assert len(res["hits"]) == 6
    res = _json(run_cli(hhome, "search", "zebrafish", "--per-conversation", "--json"))
    assert [h["conversation"] for h in res["hits"]] == ["thread:t1", "thread:t2"]
    out = run_cli(hhome, "search", "zebrafsh")
    assert out.returncode == 0
    assert "no hits — did you mean: zebrafish or zebras?" in out.stdout.decode()
    out = run_cli(hhome, "search", "*")
    assert out.returncode == 2 and b"no searchable word" in out.stderr


def test_mcp(hhome: Path) -> None:
    home = Home(hhome)
    full = {"detail": "full"}
    obj, text = call_tool(home, "search_history", {"query": "zebra*", "limit": 50, **full})
    assert obj is not None and [h["id"] for h in obj["hits"]] == ["message:m5"]  # literal
    obj, _ = call_tool(home, "search_history", {"query": "zebrafish", "group": "conversation",
                                                **full})
    assert obj is not None and len(obj["hits"]) == 2
    obj, text = call_tool(home, "search_history", {"query": "zebrafsh"})
    assert obj is None and "did you mean: zebrafish or zebras?" in text
    obj, _ = call_tool(home, "search_history", {"query": "zebrafsh", "detail": "full"})
    assert obj["suggestions"] == {"zebrafsh": ["zebrafish", "zebras"]}
    with pytest.raises(Exception, match="group"):
        call_tool(home, "search_history", {"query": "zebrafish", "group": "session"})


def test_http(hhome: Path) -> None:
    from cli.web.app import create_app
    from cli.web.guard import loopback_hosts

    token = "t" * 43
    app = create_app(Home(hhome), token=token, session="s" * 43, port=8125,
                     allowed_hosts=loopback_hosts(8125))
    client = TestClient(app, base_url="http://127.0.0.1:8125")
    client.headers["Authorization"] = f"Bearer {token}"

    def get(**params: str) -> Any:
        return client.get("/api/search", params=params)

    assert [h["id"] for h in get(q="zebra*", limit="50").json()["hits"]] == ["message:m5"]
    hits = get(q="zebrafish", group="conversation").json()["hits"]
    assert [h["conversation"] for h in hits] == ["thread:t1", "thread:t2"]
    assert len(get(q="zebrafish", group="").json()["hits"]) == 4  # empty: no grouping
    assert get(q="zebrafsh").json()["suggestions"] == {"zebrafsh": ["zebrafish", "zebras"]}
    bad = get(q="zebrafish", group="session")
    assert bad.status_code == 400 and "group" in bad.json()["error"]


def test_sqlite_vocab_reads_le_as_inclusive(tmp_path: Path) -> None:
    """What `suggest._terms` relies on: fts5vocab takes `term <= x` (and `<`) as a bound it
    stops after, and `term >= x`."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(t)")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, row)")
    con.execute("INSERT INTO f(t) VALUES ('ab abc abd b')")
    assert [r[0] for r in con.execute(
        "SELECT term FROM v WHERE term >= 'ab' AND term <= 'abc'")] == ["ab", "abc"]
    assert [r[0] for r in con.execute(
        "SELECT term FROM v WHERE term >= 'abc\x01' AND term <= 'b'")] == ["abd", "b"]
