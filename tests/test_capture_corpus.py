"""The real corpus: capture everything, restore, and every file's SHA-256 matches PROVENANCE.

Corpus files are copied into temporary agent roots (one root per source repository, at the
path the file had under its agent's folder; 7.5 MB): capture never follows a symbolic link
under a root, so links into the corpus would be skipped.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog
from readers.restore import restore
from readers.roots import Root, root_id
from tests.capture_helpers import assert_contiguous, capture

pytestmark = pytest.mark.corpus

_PREFIX = {"claude-code": ("claude", ".claude/"), "codex": ("codex", ".codex/")}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _layout(corpus: Path, base: Path) -> tuple[list[Root], list[dict[str, Any]], Path | None]:
    """Copy every PROVENANCE file into per-repo roots; the older growth snapshot of a
    path that appears twice is returned separately (captured first, then replaced)."""
    entries = json.loads((corpus / "PROVENANCE.json").read_text())
    roots: dict[tuple[str, str], Path] = {}
    placed: list[dict[str, Any]] = []
    older: Path | None = None
    by_target: dict[Path, list[dict[str, Any]]] = {}
    for e in entries:
        top, repo = e["dest"].split("/")[:2]
        if top not in _PREFIX:
            continue  # opencode prompt-history lives in the state dir: not a capture root
        agent, prefix = _PREFIX[top]
        rel = e["path"][e["path"].index(prefix) + len(prefix):]
        root = roots.setdefault((agent, repo), base / agent / repo)
        target = root / rel
        by_target.setdefault(target, []).append(e)
        e = dict(e, agent=agent, root=root, rel=rel)
        placed.append(e)
    for target, es in by_target.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        es.sort(key=lambda x: x["size"])
        shutil.copyfile(corpus / es[0]["dest"], target)
        if len(es) > 1:
            older = target
    db = next(corpus.glob("opencode/*/opencode.db"))
    oc = base / "opencode" / "root"
    oc.mkdir(parents=True)
    shutil.copyfile(db, oc / "opencode.db")
    all_roots = [Root(a, p, "flag", True) for (a, _), p in sorted(roots.items())]
    all_roots.append(Root("opencode", oc, "flag", True))
    return all_roots, placed, older


def test_corpus_capture_restore_is_byte_exact(corpus: Path, tmp_path: Path) -> None:
    roots, placed, older = _layout(corpus, tmp_path / "roots")
    log = EventLog(tmp_path / "log")
    try:
        first = capture(log, roots)
        assert first.errors == []
        if older is not None:  # the newer growth snapshot replaces the older file
            bigger = max((e for e in placed if e["root"] / e["rel"] == older),
                         key=lambda e: e["size"])
            older.unlink()
            shutil.copyfile(corpus / bigger["dest"], older)
            second = capture(log, roots)
            assert second.rewound == 0
            assert second.bytes == bigger["size"] - min(
                e["size"] for e in placed if e["root"] / e["rel"] == older)
        assert capture(log, roots).appended == 0
        assert_contiguous(log)
        out = tmp_path / "out"
        report = restore(log, out)
    finally:
        log.close()
    checked = 0
    for e in placed:
        agent_roots = [r for r in roots if r.agent == e["agent"]]
        base = out / e["agent"]
        if len(agent_roots) > 1:
            base = base / root_id(e["root"])
        data = (base / e["rel"]).read_bytes()
        if len(data) != e["size"]:  # the older growth snapshot: a prefix of the newer
            data = data[: e["size"]]
        assert _sha(data) == e["sha256"], e["dest"]
        checked += 1
    assert checked == len(placed) >= 30
    db = next(corpus.glob("opencode/*/opencode.db"))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for table in ("session", "message", "part", "project"):
            (n,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            rows = (out / "opencode" / "opencode.db.rows" / f"{table}.jsonl").read_bytes()
            lines = rows.splitlines()
            assert len(lines) == n
            assert {json.loads(x)["id"] for x in lines} == {
                r[0] for r in conn.execute(f"SELECT id FROM {table}")}
    finally:
        conn.close()
    assert report.rows >= 400
    assert not list((tmp_path / "roots" / "opencode" / "root").glob("opencode.db-*"))
