"""history.db stores each text once (compressed body, contentless FTS5): same answers as before.

- The shared corpora (read in place), captured and indexed, give the fingerprint recorded
  with the schema-8 code (every document through the `documents` view, and a fixed query set
  in both engines: CJK substrings, single CJK characters, mixed tokens, diacritics); catch-up
  in small batches gives it too, and the drift check is clean.
- Bodies round-trip; the contentless indexes follow insert/update/delete walks exactly (their
  terms equal a fresh index of the final rows; FTS5 'integrity-check' passes).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventlog import EventLog
from projections import db, query
from projections.body import MIN_PACK, pack, pack_many, unpack
from projections.catchup import catch_up
from projections.drift import check, digests
from projections.rebuild import rebuild
from projections.rows import put_document
from tests.conftest import CORPUS, CORPUS_MORE, need
from tests.corpus_home import capture_all, corpus_roots, fingerprint, normalizer

pytestmark = pytest.mark.corpus

GOLDEN = Path(__file__).parent / "fixtures" / "corpus_fingerprint.json"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EventLog, dict[str, str]]:
    need(CORPUS.is_dir(), f"shared corpus not present at {CORPUS}")
    need(CORPUS_MORE.is_dir(), f"shared corpus-more not present at {CORPUS_MORE}")
    tmp = tmp_path_factory.mktemp("corpora")
    roots = corpus_roots(CORPUS, CORPUS_MORE, tmp / "stage")
    log = EventLog(tmp / "log")
    capture_all(log, roots)
    rebuild(tmp / "history.db", log)
    return tmp / "history.db", log, normalizer(roots, [CORPUS.parent, tmp / "stage"])


def _differences(got: dict[str, tuple[int, str]]) -> list[str]:
    want = {k: tuple(v) for k, v in json.loads(GOLDEN.read_text(encoding="utf-8")).items()}
    return [f"{k}: {want.get(k)} recorded, {got.get(k)} now"
            for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]


def test_corpus_answers_are_what_schema_8_gave(
    corpora: tuple[Path, EventLog, dict[str, str]],
) -> None:
    path, _, names = corpora
    # A failure lists what changed; a deliberate change (parser, query semantics) records the
    # new fingerprint with `bench/size.py --fingerprint`.
    assert _differences(fingerprint(path, names)) == []
    assert db.read_checkpoint(db.connect(path, readonly=True)).schema_version == db.SCHEMA_VERSION


def test_catch_up_in_batches_equals_rebuild_and_drift_is_clean(
    corpora: tuple[Path, EventLog, dict[str, str]], tmp_path: Path,
) -> None:
    _, log, names = corpora
    inc = tmp_path / "history.db"
    con = db.connect(inc)
    db.create_schema(con)  # an empty current file: catch-up applies batches through triggers
    con.close()
    while catch_up(inc, log, batch=23, max_events=200).events:
        pass
    assert not catch_up(inc, log).rebuilt
    assert _differences(fingerprint(inc, names)) == []
    report = check(inc, log)
    assert report["ok"], report["detail"]
    assert report["tables"]["documents_fts"]["same"] and report["tables"]["documents_cjk"]["same"]


def test_bodies_are_stored_once_and_compressed(
    corpora: tuple[Path, EventLog, dict[str, str]],
) -> None:
    path, _, _ = corpora
    con = db.connect(path, readonly=True)
    try:
        kinds = dict(con.execute("SELECT typeof(body), count(*) FROM document_rows GROUP BY 1"))
        assert kinds.get("blob", 0) > 100 and kinds.get("text", 0) > 100
        stored, text = con.execute(
            "SELECT sum(length(body)), sum(length(CAST(doc_text(body) AS BLOB)))"
            " FROM document_rows WHERE typeof(body) = 'blob'").fetchone()
        assert stored * 2 < text  # transcript text compresses well
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        assert "documents_fts" in tables and "documents_fts_content" not in tables
    finally:
        con.close()


@given(st.text(max_size=300) | st.text(alphabet="ab中文é ", min_size=60, max_size=400))
def test_body_round_trips(text: str) -> None:
    body = pack(text)
    assert unpack(body) == text
    if isinstance(body, bytes):
        assert len(body) < len(text.encode("utf-8"))
    else:
        assert body == text


_BODY_TEXTS = (st.text(max_size=300) | st.text(alphabet="ab中文é ", min_size=60, max_size=400)
               | st.text(alphabet="xyz\ud800", min_size=100, max_size=200))


@given(st.lists(_BODY_TEXTS, max_size=8))
def test_bodies_packed_together_are_the_ones_packed_alone(texts: list[str]) -> None:
    assert pack_many(texts) == [pack(t) for t in texts]


def _terms(con: sqlite3.Connection, table: str) -> list[tuple[str, int, int]]:
    return [tuple(r) for r in con.execute(f"SELECT term, doc, cnt FROM {table}_terms")]


LONG_CJK = "我们使用中文搜索引擎来查找历史记录，" * 12 + " pelican café"
LONG_LATIN = "the quick brown fox jumps over the lazy dog naïve résumé " * 10
SHORT = "日本語のテキスト"


@pytest.mark.parametrize("bulk", [False, True])
def test_contentless_indexes_follow_every_write(tmp_path: Path, bulk: bool) -> None:
    assert len(LONG_LATIN.encode()) > MIN_PACK and len(SHORT.encode()) < MIN_PACK
    con = db.connect(tmp_path / "h.db")
    engine = db.create_schema(con, engine="fts5", bulk=bulk)
    docs = {f"message:{i}": text for i, text in
            enumerate([LONG_CJK, LONG_LATIN, SHORT, "plain words", LONG_CJK + " twice"])}
    sources = dict.fromkeys(docs, "src:a")
    for doc_id, text in docs.items():
        put_document(con, {"id": doc_id, "kind": "message", "agent": "other", "at": 1,
                           "source": "src:a", "text": text})
    if bulk:
        db.finish_bulk(con, engine)
    assert isinstance(con.execute("SELECT body FROM document_rows WHERE id = 'message:0'")
                      .fetchone()[0], bytes)
    # updates: compressed -> other compressed, compressed -> short, short -> compressed,
    # same text again; then deletes
    walk = [("message:0", LONG_LATIN + " 中文 again"), ("message:1", SHORT),
            ("message:2", LONG_CJK), ("message:3", "plain words")]
    for doc_id, text in walk:
        put_document(con, {"id": doc_id, "kind": "message", "agent": "other", "at": 2,
                           "source": "src:b", "text": text})
        docs[doc_id], sources[doc_id] = text, "src:b"
    con.execute("DELETE FROM document_rows WHERE id = 'message:4'")
    del docs["message:4"], sources["message:4"]
    for table in ("documents_fts", "documents_cjk"):
        con.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    got = {r[0]: (r[1], r[2]) for r in con.execute("SELECT id, text, source FROM documents")}
    assert got == {k: (v, sources[k]) for k, v in docs.items()}
    # the same final rows indexed from scratch give exactly the same terms
    fresh = db.connect(tmp_path / "fresh.db")
    db.create_schema(fresh, engine="fts5")
    for doc_id, text in docs.items():
        put_document(fresh, {"id": doc_id, "kind": "message", "agent": "other", "at": 2,
                             "text": text})
    for table in ("documents_fts", "documents_cjk"):
        assert _terms(con, table) == _terms(fresh, table), table
    con.close()
    fresh.close()
    for q, want in (("中文", {"message:0", "message:2"}), ("pelican", {"message:2"}),
                    ("naive", {"message:0"}), ("日本", {"message:1"}), ("fox", {"message:0"})):
        for engine_name in ("fts5", "plain"):
            hits = query.search(tmp_path / "h.db", q, engine=engine_name)["hits"]
            assert {h["id"] for h in hits} == want, (q, engine_name)


def test_drift_check_sees_a_stale_full_text_entry(tmp_path: Path) -> None:
    from eventlog.events import MessageSent

    log = EventLog(tmp_path / "log")
    log.append([(f"k{i}".encode(), MessageSent(id=f"m{i}", sender="a", to=[], kind="message",
                                               body=f"{LONG_LATIN} unique{i}", at=i))
                for i in range(3)])
    path = tmp_path / "history.db"
    catch_up(path, log)
    assert check(path, log)["ok"]
    con = db.connect(path)
    con.execute("INSERT INTO documents_fts(rowid, text) VALUES (999, 'phantom words')")
    con.close()
    report = check(path, log)
    assert not report["ok"] and "documents_fts" in report["detail"]
    assert digests(db.connect(path, readonly=True))["documents"][0] == 3
