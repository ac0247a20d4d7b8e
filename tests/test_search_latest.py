"""`projections.query.search(latest=True)`: the bounded first page `agentlog browse` draws
while every match is ranked: NOT the ranking, the latest captured matches (highest rowid
first) among the newest `LATEST_SCAN` matches of the full-text expression, the filters and
the query's other conditions applied, duplicates dropped, the answer marked `unranked`."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections import db, query, search
from projections.rows import put_document


def _file(path: Path, n: int) -> Path:
    con = db.connect(path)
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for i in range(n):
        text = f"alpha {'beta ' * (i % 5 + 1)}n{i % 250}"  # repeats past 250: duplicates
        put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent":
                           "claude" if i % 3 else "codex", "at": 1000 + i, "session": "s",
                           "role": "user", "text": text if i % 4 else text + " gamma"})
    con.execute("COMMIT")
    con.close()
    return path


def _expected(path: Path, words: list[str], agent: str | None, scan: int,
              limit: int) -> list[str]:
    """The newest `scan` matches of every word, those of `agent`, texts seen once, newest
    first: computed plainly."""
    con = db.connect(path, readonly=True)
    rows = con.execute("SELECT rowid, id, agent, text FROM documents ORDER BY rowid DESC")
    matches = [r for r in rows if set(words) <= set(str(r[3]).split())][:scan]
    out: list[str] = []
    seen: set[str] = set()
    for _, ident, who, text in matches:
        if (agent is None or who == agent) and text not in seen:
            seen.add(text)
            out.append(str(ident))
    con.close()
    return out[:limit]


@pytest.mark.parametrize(("words", "agent", "scan"), [
    (["alpha", "beta"], None, 20_000), (["alpha", "beta"], "claude", 20_000),
    (["alpha", "gamma"], "codex", 20_000), (["alpha", "beta"], "claude", 90)])
def test_latest_is_the_newest_matches_filtered_and_marked_unranked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, words: list[str], agent: str | None,
        scan: int) -> None:
    path = _file(tmp_path / "h.db", 600)
    monkeypatch.setattr(search, "LATEST_SCAN", scan)
    flt = {"agent": agent} if agent else None
    got = query.search(path, " ".join(words), flt, 25, latest=True)
    assert got["unranked"] is True
    assert [h["id"] for h in got["hits"]] == _expected(path, words, agent, scan, 25)
    full = query.search(path, " ".join(words), flt, 25)
    assert "unranked" not in full
    query.close_connections()


def test_the_plain_engine_is_never_marked(tmp_path: Path) -> None:
    path = _file(tmp_path / "h.db", 50)
    got = query.search(path, "alpha", None, 5, engine="plain", latest=True)
    assert "unranked" not in got and got["hits"]
    query.close_connections()
