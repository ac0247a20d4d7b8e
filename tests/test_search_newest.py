"""`projections.query.search(newest=N)`: the bounded first page `agentlog browse` draws while
every match is ranked: SQLite's own ranking (the reference) of the newest N matches of the
full-text expression, in the reference's order, labelled `partial`; with no more matches
than N it is the full answer, unlabelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections import db, query, ranking
from projections.errors import QueryError
from projections.rows import put_document


def _file(path: Path, n: int) -> Path:
    con = db.connect(path)
    db.create_schema(con, engine="fts5")
    con.execute("BEGIN")
    for i in range(n):  # distinct texts (no duplicates dropped); varied lengths and roles
        put_document(con, {"id": f"transcript:{i}", "kind": "transcript", "agent":
                           "claude" if i % 3 else "codex", "at": 1000 + i, "session": "s",
                           "role": ("user", "assistant", "tool_result")[i % 3],
                           "text": f"alpha {'beta ' * (i % 5 + 1)}filler {'x ' * (i % 7)} n{i}"})
    con.execute("COMMIT")
    con.close()
    return path


@pytest.mark.parametrize("agent", [None, "claude"])
def test_newest_ranks_the_newest_matches_in_the_references_order(
        tmp_path: Path, agent: str | None) -> None:
    path = _file(tmp_path / "h.db", 300)
    flt = {"agent": agent} if agent else None
    got = query.search(path, "alpha beta", flt, 10, newest=100)
    assert got["partial"] == {"newest": 100}
    con = db.connect(path, readonly=True)
    newest = {int(r[0]) for r in con.execute(
        "SELECT rowid FROM documents_fts WHERE documents_fts MATCH '\"alpha\" AND \"beta\"'"
        " ORDER BY rowid DESC LIMIT 100")}
    conds = "d.agent = 'claude'" if agent else "1"
    every = [r for page in ranking.pages(con, "documents_fts", '"alpha" AND "beta"', conds, [],
                                         1000) for r in page]
    want = [r for r in every if r in newest][:10]
    by_id = {str(i): int(r) for i, r in con.execute(
        f"SELECT id, rowid FROM documents WHERE id IN ({','.join('?' * len(got['hits']))})",
        [h["id"] for h in got["hits"]])}
    assert [by_id[h["id"]] for h in got["hits"]] == want
    con.close()
    query.close_connections()


def test_few_matches_give_the_full_answer_unlabelled(tmp_path: Path) -> None:
    path = _file(tmp_path / "h.db", 50)
    got = query.search(path, "alpha beta", None, 10, newest=100)
    full = query.search(path, "alpha beta", None, 10)
    assert "partial" not in got and got["hits"] == full["hits"]
    with pytest.raises(QueryError, match="newest"):
        query.search(path, "alpha", None, 10, newest=0)
    query.close_connections()
