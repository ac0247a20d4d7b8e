"""Both shared corpora captured in place into one temp home, and a path-free fingerprint of it.

Used by tests/test_size.py (the before/after regression test of the history.db schema) and by
bench/size.py (history.db and log bytes against the source bytes). The corpus files are read
where they are, never copied: the Claude and Codex files of ../shared/corpus are hard-linked
(same inode, no copy) into a staging folder at the paths their PROVENANCE gives
(`projects/<project>/<session>.jsonl`…, which the corpus folders do not have; of the two
growth snapshots of one rollout, the newer), every opencode folder is a root as it is, every
sample home of ../shared/corpus-more is resolved with the registry's defaults. Only when a
hard link is refused (another file system) is the file copied into the staging folder.

`fingerprint` hashes what a user can see — every document through the `documents` view and
the hits of a fixed query set in both engines — after replacing the root ids (a hash of the
absolute root path, part of source ids and of some document ids) by the root's path relative
to the corpus parent, and leaving out what depends on capture order (rowids, seq, ord).
`at` is left out too: agents whose files hold no time are dated by their capture (mtime).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from eventlog import EventLog
from readers.capture import Capturer, Options
from readers.roots import Root, resolve_roots, root_id

_STAGED = {"claude-code": ("claude", ".claude/"), "codex": ("codex", ".codex/")}

# Selective queries (fewer than 50 hits each on the shared corpora, so the hit set does not
# depend on ranking): CJK substrings, single CJK characters, mixed tokens, diacritics,
# Cyrillic, punctuation, several tokens.
QUERIES = (
    "npm install", "café", "cafe", "resume", "résumé", "über", "数据", "测试",
    "文件", "代码", "用户", "使用python", "игра", "ошибка", "データ", "TODO",
    "crème", "São", "e2e", "v2.0", "中文 test", "问题", "实现", "uber", "Ärger",
    "dépendance", "测", "据", "配置文件", "python3", "pytest", "docker", "TypeError",
    "localhost:3000", "İstanbul",
)


def corpus_files(corpus: Path) -> dict[tuple[str, str, str], Path]:
    """The Claude and Codex files of `corpus` at the paths their PROVENANCE gives: (agent,
    repository, path under the agent's folder, e.g. `projects/<project>/<session>.jsonl`)
    -> the file; of the growth snapshots of one file, the newest (the largest). Also
    bench/cold.py's `--corpus` home."""
    newest: dict[tuple[str, str, str], tuple[int, Path]] = {}
    prov = corpus / "PROVENANCE.json"
    for e in json.loads(prov.read_text(encoding="utf-8")) if prov.is_file() else []:
        top, repo = e["dest"].split("/")[:2]
        if top not in _STAGED:
            continue
        agent, prefix = _STAGED[top]
        key = (agent, repo, e["path"][e["path"].index(prefix) + len(prefix):])
        if key not in newest or newest[key][0] < e["size"]:
            newest[key] = (e["size"], corpus / e["dest"])
    return {key: path for key, (_, path) in newest.items()}


def corpus_roots(corpus: Path, corpus_more: Path, stage: Path) -> list[Root]:
    """Every capture root of both corpora (Claude and Codex files linked under `stage`)."""
    roots: dict[tuple[str, str], Path] = {}
    for (agent, repo, rel), src in corpus_files(corpus).items():
        target = roots.setdefault((agent, repo), stage / agent / repo) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, target)
        except OSError:
            shutil.copyfile(src, target)
    out = [Root(agent, path, "flag", True) for (agent, _), path in sorted(roots.items())]
    if (corpus / "opencode").is_dir():
        out += [Root("opencode", p, "flag", True)
                for p in sorted((corpus / "opencode").iterdir()) if (p / "opencode.db").is_file()]
    if corpus_more.is_dir():
        for folder in sorted(p for p in corpus_more.iterdir() if p.is_dir()):
            for home in sorted(p for p in folder.iterdir() if p.is_dir()):
                found = resolve_roots(flags={}, config={}, env={}, user_home=home)
                out += [r for r in found if r.exists]
    return out


def capture_all(log: EventLog, roots: list[Root]) -> int:
    """Capture until a pass appends nothing (ticks are bounded); returns events appended."""
    total = 0
    while True:
        appended = Capturer(log, roots, Options(settle_s=0.0)).run_once().appended
        total += appended
        if appended == 0:
            return total


def source_bytes(db_path: Path) -> int:
    """Bytes captured from every source (files, snapshots, rows) per history.db's `sources`."""
    con = sqlite3.connect(db_path)
    try:
        return int(con.execute("SELECT coalesce(sum(bytes_captured), 0) FROM sources")
                   .fetchone()[0])
    finally:
        con.close()


def normalizer(roots: list[Root], bases: list[Path]) -> dict[str, str]:
    """Root id -> the root's path relative to the first of `bases` holding it, and each base
    itself -> "<base N>" (project paths of agents that write into project folders are the
    sample's path; aider's session tag hashes its project folder)."""
    from readers.parse_common import digest

    out: dict[str, str] = {str(base): f"<base {i}>" for i, base in enumerate(bases)}
    for r in roots:
        label = r.path.name
        for base in bases:
            if r.path.is_relative_to(base):
                label = r.path.relative_to(base).as_posix()
                break
        out[root_id(r.path)] = f"R<{label}>"
        out[digest(str(r.path))[:10]] = f"P<{label}>"
    return out


def _norm(value: Any, names: dict[str, str]) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    for rid, label in names.items():
        if rid in text:
            text = text.replace(rid, label)
    return text


def _digest(lines: list[str]) -> tuple[int, str]:
    h = hashlib.sha256()
    for line in sorted(lines):
        h.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return len(lines), h.hexdigest()[:16]


_DOC_COLS = (
    "id, kind, agent, project, session, job, run, message, cursor, conversation, role,"
    " tool, subagent, subagent_name, title, archived, source, sender, extra, text"
)


def fingerprint(db_path: Path, names: dict[str, str]) -> dict[str, tuple[int, str]]:
    """(count, digest) of every document and of each query's hits in each engine."""
    from projections import query

    out: dict[str, tuple[int, str]] = {}
    con = sqlite3.connect(db_path)
    try:
        from projections import db

        db.register_functions(con)
        out["documents"] = _digest([_norm(list(r), names) for r in con.execute(
            f"SELECT {_DOC_COLS} FROM documents")])
    finally:
        con.close()
    for q in QUERIES:
        for engine in ("fts5", "plain"):
            hits = query.search(db_path, q, limit=50, engine=engine)["hits"]
            if engine == "fts5":  # which copy of a duplicated text is kept follows the ranking
                keep = [_norm([h["kind"], h["snippet"]], names) for h in hits]
            else:
                keep = [_norm(dict(h, at=None), names) for h in hits]
            out[f"{engine}:{q}"] = _digest(keep)
    return out
