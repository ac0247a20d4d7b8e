"""Cursor agent transcripts on ../shared/corpus-more (.txt and <id>/<id>.jsonl generations),
and one session written as both .txt and .jsonl being ONE session in results."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from projections.project_key import project_key
from tests.agents_corpus import capture_home, coverage_unknown, found, homes

pytestmark = [pytest.mark.corpus, pytest.mark.real_data("cursor")]

_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)


def _expected(tree: Path) -> list[tuple[str, str | None, str]]:
    out = []
    for path in sorted((tree / "projects").glob("*/agent-transcripts/**/*")):
        if path.suffix not in (".txt", ".jsonl") or "subagents" in path.parts:
            continue
        raw = path.read_text(encoding="utf-8")
        queries = [q for q in _QUERY.findall(raw) if 20 < len(q) < 3000]
        if path.suffix == ".jsonl":
            lines = [json.loads(x) for x in raw.splitlines()]
            queries = [m.group(1) for x in lines for b in x["message"]["content"]
                       if b["type"] == "text" and (m := _QUERY.search(b["text"]))
                       and 20 < len(m.group(1)) < 3000]
        # the project: the workspace folder spelled as the session's own tool inputs do
        slug = path.relative_to(tree / "projects").parts[0]
        project = None
        if not slug.isdigit():
            for found_path in re.findall(r'"(?:path|target_directory)":"([^"]+)"', raw):
                p = found_path.replace("\\\\", "\\")
                for end in range(len(p), 0, -1):
                    enc = re.sub(r"[/\\:]+", "-", p[:end]).strip("-").lower()
                    if enc == slug.lower() and (end == len(p) or p[end] in "/\\"):
                        project = p[:end]
                        break
                if project:
                    break
        out.append((path.stem, project, queries[0]))
    return out


def test_capture_finds_every_session(tmp_path: Path) -> None:
    sessions = 0
    for i, home in enumerate(homes("cursor")):
        cap = capture_home("cursor", home, tmp_path / str(i))
        for session, project, text in _expected(home / ".cursor"):
            hits = found(cap.db, "cursor", session, text)
            assert hits, (home.name, session)
            assert {h["project"] for h in hits} == {project_key(project) if project else project}, (
                home.name, session)
            sessions += 1
        assert coverage_unknown(cap.db) == {}
    assert sessions == 3


def test_txt_and_jsonl_of_one_session_are_one_session(tmp_path: Path) -> None:
    sid = "0f0e0d0c-1111-4222-8333-444455556666"
    folder = tmp_path / "home" / ".cursor" / "projects" / "Users-kim-orchard" / "agent-transcripts"
    folder.mkdir(parents=True)
    (folder / f"{sid}.txt").write_text(
        "user:\n<user_query>\nplease prune the marmalade cache\n</user_query>\n\n"
        "assistant:\n[Thinking] looking at the cache\nPruning the marmalade cache now.\n"
        "[Tool call] Shell\n  command: rm -rf /Users/kim/orchard/cache\n\n"
        "[Tool result] Shell\n\nassistant:\nDone with the marmalade pruning.\n")
    lines = [
        {"role": "user", "message": {"content": [
            {"type": "text",
             "text": "<user_query>\nplease prune the marmalade cache\n</user_query>"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "text", "text": "Pruning the marmalade cache now."},
            {"type": "tool_use", "name": "Shell",
             "input": {"command": "rm -rf /Users/kim/orchard/cache"}}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "text", "text": "Done with the marmalade pruning."}]}},
    ]
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    cap = capture_home("cursor", tmp_path / "home", tmp_path / "cap")
    hits = found(cap.db, "cursor", sid, "marmalade cache please prune")
    assert len(hits) == 1 and hits[0]["session"] == sid
    assert hits[0]["project"] == "/Users/kim/orchard"
    import sqlite3

    from projections import db

    con = sqlite3.connect(cap.db)
    db.register_functions(con)  # the `documents` view decodes text with `doc_text`
    try:
        rows = con.execute("SELECT DISTINCT session FROM documents WHERE agent = 'cursor'")
        assert [r[0] for r in rows] == [sid]
        n = con.execute("SELECT count(*) FROM documents WHERE agent = 'cursor' AND text LIKE "
                        "'%marmalade pruning%'").fetchone()[0]
        assert n == 1  # the .txt and .jsonl copies of a turn collapse
        n = con.execute("SELECT count(*) FROM documents WHERE agent = 'cursor' AND role = "
                        "'tool_use'").fetchone()[0]
        assert n == 1
    finally:
        con.close()
