"""Aider, Amp, Crush, Goose and Kiro end to end on ../shared/corpus-more: each sample folder
is the user's HOME (read in place, never copied); the default roots find its files; capture,
catch-up and search find a phrase of every non-empty session under the right agent, session
and project; restore gives the files back byte for byte (databases: every row); the source
files, SQLite databases and WALs included, have the same SHA-256 after capture.

The phrases and sessions are read from the sample files at run time. SQLite's `-shm` file
is a shared-memory index that every reader of a WAL database (even `mode=ro`) writes to, by
design; it holds no data and is not compared.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from eventlog import EventLog
from projections import query
from projections.catchup import catch_up
from readers import registry
from readers.discovery import classify
from readers.restore import restore
from readers.roots import resolve_roots
from tests.capture_helpers import capture

AGENTS = ("aider", "amp", "crush", "goose", "kiro")


def _digests(home: Path) -> dict[str, str]:
    return {p.relative_to(home).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and not p.name.endswith("-shm")}


def _db_copy(db: Path, tmp: Path) -> sqlite3.Connection:
    copy = tmp / "expect.db"
    for suffix in ("", "-wal"):
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", f"{copy}{suffix}")
    return sqlite3.connect(copy)


def _phrases(agent: str, home: Path, tmp: Path) -> dict[str, tuple[str, str]]:
    """session -> (a phrase typed in it, its project), read from the sample itself."""
    out: dict[str, tuple[str, str]] = {}
    if agent == "aider":
        chat = (home / ".aider.chat.history.md").read_text()
        for block in chat.split("# aider chat started at ")[1:]:
            day, clock = block.split()[:2]
            prompt = re.search(r"^#### (.{12,})$", block, re.M)
            if prompt:
                out[f"aider-{day.replace('-', '')}T{clock.replace(':', '')}-"] = (
                    prompt.group(1).strip(), str(home))
    elif agent == "amp":
        for path in (home / ".local/share/amp/threads").glob("T-*.json"):
            thread = json.loads(path.read_bytes())
            text = next(b["text"] for m in thread["messages"] if m["role"] == "assistant"
                        for b in m["content"] if b["type"] == "text")
            out[thread["id"]] = (text, thread["env"]["initial"]["trees"][0]["uri"][7:])
    elif agent == "kiro":
        for path in (home / ".kiro/sessions/cli").glob("*.jsonl"):
            lines = path.read_bytes().splitlines()
            if lines:
                meta = json.loads(path.with_suffix(".json").read_bytes())
                prompt = json.loads(lines[0])["data"]["content"][-1]["data"]
                out[meta["session_id"]] = (prompt, meta["cwd"])
    elif agent in ("crush", "goose"):
        db = (home / ".crush/crush.db" if agent == "crush"
              else home / ".local/share/goose/sessions/sessions.db")
        con = _db_copy(db, tmp)
        try:
            if agent == "crush":
                for session, parts in con.execute(
                        "SELECT session_id, parts FROM messages WHERE role = 'user'"
                        " ORDER BY created_at, id"):
                    text = next((p["data"]["text"] for p in json.loads(parts)
                                 if p["type"] == "text"), "")
                    if len(text) > 20:
                        out.setdefault(session, (text, str(home)))
            else:
                for session, content, cwd in con.execute(
                        "SELECT m.session_id, m.content_json, s.working_dir FROM messages m"
                        " JOIN sessions s ON s.id = m.session_id"):
                    text = next((c["text"] for c in json.loads(content)
                                 if c.get("type") == "text"), "")
                    if text:
                        out.setdefault(session, (text, cwd))
        finally:
            con.close()
    return out


def _words(text: str) -> str:
    words = re.findall(r"(?<![^\W_])[^\W\d_]{5,}(?![^\W_])", text)
    return " ".join(sorted(words, key=len, reverse=True)[:3])


@pytest.mark.parametrize("agent", AGENTS)
def test_capture_search_restore_readonly(agent: str, corpus_more: Path, tmp_path: Path) -> None:
    homes = sorted(p for p in (corpus_more / agent).iterdir() if p.is_dir())
    assert homes
    home = homes[0]
    before = _digests(home)
    roots = resolve_roots(flags={}, config={}, env={}, user_home=home, agents=[agent])
    assert roots and all(r.exists for r in roots)
    log = EventLog(tmp_path / "log")
    try:
        stats = capture(log, roots)
        assert stats.errors == [] and stats.files >= 1
        assert capture(log, roots).appended == 0  # idempotent
        db_path = tmp_path / "history.db"
        catch_up(db_path, log)
        phrases = _phrases(agent, home, tmp_path)
        cov = query.coverage(db_path)
        assert cov["unknownRecordTypes"] == {}, cov["unknownRecordTypes"]
        if agent == "goose":
            assert phrases == {}  # the sample has sessions but no messages
        else:
            assert phrases
        for session, (phrase, project) in phrases.items():
            words = _words(phrase)
            hits = query.search(db_path, words, {"agent": agent}, 50)["hits"]
            found = [h for h in hits if (h["session"] or "").startswith(session)]
            assert found, (agent, session, words)
            assert {h["agent"] for h in found} == {agent}
            assert {h["project"] for h in found} == {project}
        report = restore(log, tmp_path / "out", agent=agent)
    finally:
        log.close()
    out = tmp_path / "out" / agent
    (root,) = roots
    restored = rows = 0
    for rel in before:
        path = home / rel
        inside = path.is_relative_to(root.path)
        layout = classify(agent, path.relative_to(root.path).as_posix()) if inside else None
        target = out / path.relative_to(root.path) if inside else None
        if layout is None or target is None:
            assert target is None or not target.exists(), rel  # not history: not captured
        elif registry.mode_of(layout) == registry.ROWS:
            con = _db_copy(path, tmp_path)
            try:
                for table in (t.name for t in registry.get(agent).tables):
                    lines = Path(f"{target}.rows/{table}.jsonl")
                    got = ({str(json.loads(x)["id"]): json.loads(x) for x in
                            lines.read_bytes().splitlines()} if lines.exists() else {})
                    cur = con.execute(f'SELECT * FROM "{table}"')
                    names = [c[0] for c in cur.description]
                    want = {str(r[0]): dict(zip(names, r, strict=True)) for r in cur}
                    assert got == want, table
                    rows += len(want)
            finally:
                con.close()
        else:
            assert target.read_bytes() == path.read_bytes(), rel
            restored += 1
    assert restored + rows > 0 and report.rows == rows
    assert _digests(home) == before  # sources (databases and WALs too) unchanged
