"""Per-project history pages and the cross-project search."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from cli.services import archive_ops as ops
from cli.services.config import Home
from cli.services.errors import AgentlogError, NotFound
from tests.archive_fixtures import DAY, T0, home_at, import_turns, iso, rich_project, turn
from tests.conftest import run_cli


@pytest.fixture
def h(tmp_path: Path) -> Home:
    home = home_at(tmp_path / "h")
    import_turns(home, "proj-a", rich_project())
    return home


def _contents(res: dict[str, object]) -> list[str]:
    return [t["content"] for t in res["turns"]]  # type: ignore[attr-defined,index]


def test_pagination_100_a_page_oldest_first(tmp_path: Path) -> None:
    home = home_at(tmp_path / "h")
    # two interleaved sessions, inserted newest first, so order must come from time
    turns = [turn(f"s{i % 2}", i // 2, T0 + i * 1000, "user", f"turn {i:03d}")
             for i in reversed(range(250))]
    import_turns(home, "p", turns)
    pages = [ops.history(home, "p", {}, page) for page in (1, 2, 3)]
    assert [len(p["turns"]) for p in pages] == [100, 100, 50]
    assert [p["next"] for p in pages] == [2, 3, None]
    got = [c for p in pages for c in _contents(p)]
    assert got == [f"turn {i:03d}" for i in range(250)]
    assert ops.history(home, "p", {}, 4)["turns"] == []
    assert {s["sessionId"] for s in pages[0]["sessions"]} == {"s0", "s1"}


def test_filters(h: Home) -> None:
    def q(**f: object) -> list[str]:
        return _contents(ops.history(h, "proj-a", dict(f)))

    assert len(q()) == 9
    assert q(session="s2") == ["数据库迁移 needs a rollback plan", "explored the migration files",
                               "context compacted"]
    assert q(role="tool_use") == ["grep -r settings src/"]
    assert q(tool="Bash") == ["grep -r settings src/"]
    assert q(agent="@Explore") == ["explored the migration files"]
    assert "explored the migration files" not in q(agent="main")
    assert len(q(agent="main")) == 8
    assert q(since=iso(T0 + 2 * DAY)) == ["résumé of yesterday's café discussion"]
    assert q(until=T0 + 1000) == ["please fix the settings screen <script>alert(1)</script>",
                                  "I will look at the settings screen now"]
    assert q(text="settings screen") == ["please fix the settings screen <script>alert(1)</script>",
                                         "I will look at the settings screen now",
                                         "the screen is rendered by Settings"]
    assert q(text="screen now") == ["I will look at the settings screen now"]
    assert q(text="RESUME cafe") == ["résumé of yesterday's café discussion"]
    assert q(text="迁移") == ["数据库迁移 needs a rollback plan"]
    assert q(text='settings" OR NEAR(x') == []  # operators are literal words, never syntax
    assert ops.history(h, "other-project", {})["turns"] == []
    with pytest.raises(NotFound, match="unknown project 'other-project'"):
        ops.history(h, "other-project", {}, strict=True)


@pytest.mark.parametrize(("filters", "param"), [
    ({"role": "wizard"}, "role"), ({"agent": "some"}, "thread"),
    ({"agent_name": "gpt"}, "agent"), ({"since": "yesterday"}, "since"),
    ({"since": T0 + 10, "until": T0}, "since"),
])
def test_bad_filters_name_the_parameter(h: Home, filters: dict[str, object], param: str) -> None:
    with pytest.raises(AgentlogError, match=f"^{param}"):
        ops.history(h, "proj-a", filters)


def test_search_caps_at_200_newest_first(tmp_path: Path) -> None:
    home = home_at(tmp_path / "h")
    import_turns(home, "p1", [turn("a", i, T0 + 2 * i, "user", f"needle {i}") for i in range(150)])
    import_turns(home, "p2", [turn("b", i, T0 + 2 * i + 1, "assistant", f"needle {i}")
                              for i in range(150)])
    res = ops.search(home, "needle")
    hits = res["hits"]
    assert len(hits) == 200 and res["capped"] is True
    ats = [x["at"] for x in hits]
    assert ats == sorted(ats, reverse=True)
    assert ats[0] == T0 + 2 * 149 + 1
    assert {x["project"] for x in hits} == {"p1", "p2"}
    assert ops.search(home, "needle", role="user")["hits"][0]["project"] == "p1"
    small = ops.search(home, "needle 7")
    assert small["capped"] is False
    assert ops.search(home, "")["hits"] == [] and ops.search(home, "   ")["hits"] == []


def test_preview_marks_the_match_and_escapes_the_rest(h: Home) -> None:
    long_prefix = "x" * 300
    import_turns(h, "proj-x", [turn("z", 0, T0, "user", long_prefix + " the <b>needle</b> & "
                                    "<script>alert('hi')</script>" + "y" * 300)])
    (hit,) = ops.search(h, "needle")["hits"]
    p = hit["preview"]
    assert "<mark>needle</mark>" in p
    assert "<script" not in p and "&lt;script&gt;" in p and "&lt;b&gt;" in p
    assert "&amp;" in p
    # nothing but <mark> is markup
    assert re.sub(r"</?mark>", "", p).count("<") == 0
    # ±100 characters around the match
    assert p.startswith("…") and p.endswith("…")
    inner = p.replace("<mark>", "").replace("</mark>", "")
    assert 100 + len("needle") <= len(html.unescape(inner)) - 2 <= 2 * 100 + len("needle")
    hits = ops.search(h, "script alert")["hits"]
    assert [x["project"] for x in hits] == ["proj-x", "proj-a"]  # same time: later in the log first
    hit = hits[1]
    assert "&lt;<mark>script</mark>&gt;" in hit["preview"]


def test_diacritics_and_case_fold_in_preview(h: Home) -> None:
    (hit,) = ops.search(h, "CAFE")["hits"]
    assert "<mark>café</mark>" in hit["preview"]


def test_cli_history_and_search(tmp_path: Path) -> None:
    home = tmp_path / "h"
    import_turns(home_at(home), "proj-a", rich_project())
    r = run_cli(home, "history", "--project", "proj-a", "--role", "user", "--json")
    assert r.returncode == 0, r.stderr
    page = json.loads(r.stdout)
    assert [t["role"] for t in page["turns"]] == ["user"] * 3
    r = run_cli(home, "history", "settings", "--json")
    assert len(json.loads(r.stdout)["hits"]) == 5
    r = run_cli(home, "history", "settings")
    assert r.returncode == 0 and b"proj-a" in r.stdout and b"5 hits" in r.stderr
    r = run_cli(home, "history", "--project", "proj-a", "--thread", "bogus")
    assert r.returncode == 2 and b"thread" in r.stderr
    r = run_cli(home, "history", "--project", "proj-a", "--agent", "bogus")
    assert r.returncode == 2 and b"agent: must be one of" in r.stderr
    r = run_cli(home, "history", "--json")
    assert json.loads(r.stdout)["projects"][0]["project"] == "proj-a"
    r = run_cli(home, "history", "-p", "proj-a", "--sessions", "--json")
    assert [s["sessionId"] for s in json.loads(r.stdout)["sessions"]] == ["s3", "s2", "s1"]


def test_dense_and_sparse_search_plans_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projections import history as hist

    home = home_at(tmp_path / "h")
    # out of log order in time, with ties, archived turns and two roles
    import_turns(home, "p1", [turn("a", i, T0 + (i * 7919) % 500, "user", f"common word {i}")
                              for i in range(300)])
    import_turns(home, "p2", [turn("b", i, T0 + (i * 104729) % 450, "assistant", f"common {i}")
                              for i in range(100)])
    ops.archive(home, now=T0 + 10 * DAY, after_days=0)
    import_turns(home, "p3", [turn("c", i, T0 + 5 * DAY + i, "user", f"common late {i}")
                              for i in range(50)])
    for kwargs in ({}, {"role": "assistant"}, {"include_archived": True}):
        monkeypatch.setattr(hist, "DENSE", 10**9)
        sparse = ops.search(home, "common", **kwargs)  # type: ignore[arg-type]
        monkeypatch.setattr(hist, "DENSE", 10)
        dense = ops.search(home, "common", **kwargs)  # type: ignore[arg-type]
        assert dense == sparse, kwargs
    assert len(ops.search(home, "common", include_archived=True)["hits"]) == 200


@pytest.mark.corpus
def test_session_titles_are_the_sessions_own(corpus: Path, tmp_path: Path) -> None:
    """QA: opencode sessions were listed under an arbitrary turn title (max() of tool titles)."""
    import sqlite3

    db = corpus / "opencode" / "richardaiand-aiand-portfolio-web" / "opencode.db"
    assert db.is_file(), f"corpus opencode.db absent: {db}"
    root = tmp_path / "oc"
    root.mkdir()
    shutil.copyfile(db, root / "opencode.db")  # capture never follows links
    con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    titles = dict(con.execute("SELECT id, title FROM session").fetchall())
    project = con.execute("SELECT directory FROM session LIMIT 1").fetchone()[0]
    con.close()
    home = tmp_path / "h"
    out = run_cli(home, "capture", "--opencode-dir", str(root), "--claude-dir",
                  str(tmp_path / "nx"), "--codex-dir", str(tmp_path / "nx"), "--json")
    assert out.returncode == 0, out.stderr
    r = run_cli(home, "history", "-p", project, "--sessions", "--json")
    assert r.returncode == 0, r.stderr
    listed = {s["sessionId"]: s["title"] for s in json.loads(r.stdout)["sessions"]}
    assert listed and listed == {k: v for k, v in titles.items() if k in listed}
