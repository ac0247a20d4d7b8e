"""Builders shared by the projection and search tests: hand-made events in a real log."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from eventlog import EventLog
from eventlog.events import (
    AliasBound,
    AnswerGiven,
    ChunkCaptured,
    DecisionRevised,
    Event,
    MessageSent,
    QuestionAsked,
    RunStarted,
    SourceRewound,
    SourceSeen,
)

CLAUDE_SRC = "claude:r1:projects/-proj/s1.jsonl"
CODEX_SRC = "codex:r2:sessions/2026/11/01/rollout-cs1.jsonl"


def claude_line(uid: str, role: str, text: str, at: str = "2026-11-01T10:00:00Z",
                session: str = "s1", cwd: str = "/proj") -> bytes:
    obj: dict[str, Any] = {"type": role, "uuid": uid, "sessionId": session, "timestamp": at,
                           "cwd": cwd, "message": {"role": role, "content": text}}
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


def codex_lines(session: str, texts: Iterable[str]) -> list[bytes]:
    out = [json.dumps({"timestamp": "2026-11-01T09:00:00Z", "type": "session_meta",
                       "payload": {"id": session, "cwd": "/cproj"}}).encode() + b"\n"]
    for i, t in enumerate(texts):
        out.append(json.dumps({
            "timestamp": f"2026-11-01T09:00:{i % 60:02d}Z", "type": "response_item",
            "payload": {"type": "message", "role": "user" if i % 2 == 0 else "assistant",
                        "content": [{"type": "input_text", "text": t}]}}).encode() + b"\n")
    return out


def seen(source: str, agent: str, layout: str, at: int = 1) -> SourceSeen:
    return SourceSeen(source=source, agent=agent, root="/roots/" + agent,
                      path=source.split(":", 2)[2], layout=layout, at=at)


def chunks_of(source: str, data: bytes, cuts: Iterable[int], generation: int = 0,
              start: int = 0, at: int = 5) -> list[ChunkCaptured]:
    """`data` (which starts at byte `start`) cut at the given relative positions."""
    pos = 0
    out = []
    for cut in [*sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]:
        piece = data[pos:cut]
        out.append(ChunkCaptured(source=source, generation=generation, offset=start + pos,
                                 size=len(piece), data=piece, at=at))
        pos = cut
    return out


def broker_events() -> list[Event]:
    return [
        AliasBound(alias="peer-a", session="S1", agent="claude-code", at=10),
        MessageSent(id="m1", sender="peer-a", to=["peer-b"], kind="message",
                    body="Hello wörld, the café opens", at=1_000, project="/p", session="S1",
                    job="deploy"),
        MessageSent(id="m2", sender="peer-b", to=["peer-a"], kind="report",
                    body="report: 我们使用中文搜索 works", at=2_000, project="/q"),
        MessageSent(id="m3", sender="peer-b", to=["peer-a"], kind="approval",
                    body="approve the migration plan", at=2_500, project="/q"),
        MessageSent(id="m4", sender="peer-b", to=["peer-a"], kind="progress",
                    body="progress on the migration: half done", at=2_600, project="/q",
                    thread="t1"),
        DecisionRevised(topic="storage engine", revision=1, body="use lmdb for the log",
                        author="lead", at=3_000),
        DecisionRevised(topic="storage engine", revision=2,
                        body="use lmdb for the log, sqlite for projections", author="lead",
                        at=4_000),
        RunStarted(job="nightly", run="run-7", started_at=5_000, agent="codex", session="S2",
                   metadata={"cwd": "/p", "note": "xyzzy marker"}),
        QuestionAsked(id="q1", sender="peer-a", body="Which database should we pick?",
                      at=6_000),
        AnswerGiven(question="q1", body="SQLite database, with FTS5", by="owner", at=7_000),
    ]


def append(log: EventLog, events: Iterable[Event], prefix: str = "k") -> None:
    items = []
    for ev in events:
        items.append((f"{prefix}:{len(items)}:{log.head().seq}:{id(ev)}".encode(), ev))
    log.append(items)


def mixed_events() -> list[Event]:
    """Broker facts plus Claude/Codex transcripts and a run log, with awkward chunking."""
    evs: list[Event] = list(broker_events())
    evs.append(seen(CLAUDE_SRC, "claude", "claude.session"))
    data = (claude_line("u1", "user", "find the zebra in the code")
            + claude_line("u2", "assistant", "the zebra lives in zoo.py, café included")
            + claude_line("u3", "user", "中文 输入 测试"))
    evs += chunks_of(CLAUDE_SRC, data, [10, 100, len(data) - 5])
    evs.append(seen(CODEX_SRC, "codex", "codex.rollout"))
    cdata = b"".join(codex_lines("cs1", ["codex finds the zebra", "quartz answer", "more"]))
    evs += chunks_of(CODEX_SRC, cdata, [50, 51, 300])
    run_src = "runs:r3:run-7.log"
    evs.append(seen(run_src, "other", "runs.log"))
    evs += chunks_of(run_src, b"starting plugh\nstep two\n", [15])
    evs.append(SourceRewound(source=CLAUDE_SRC, generation=1, reason="shrank",
                             old_size=len(data), new_size=10, at=9))
    evs += chunks_of(CLAUDE_SRC, claude_line("u9", "user", "after rewind okapi"), [7],
                     generation=1)
    return evs


def make_log(path: Path, events: Iterable[Event]) -> EventLog:
    log = EventLog(path)
    append(log, events)
    return log


def plain_file(path: Path) -> None:
    """Make `path` (a published generation's link) the plain file in rollback-journal mode an
    agentlog from before generations left: read and written as it is until a rebuild."""
    import os
    import sqlite3

    real = path.resolve()
    con = sqlite3.connect(real, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode = DELETE")
    finally:
        con.close()
    os.replace(real, path)


def listed(folder: Path, prefix: str = "") -> list[str]:
    """The names in `folder` starting with `prefix`, sorted, with a published generation
    of history.db named `history.db.g*` (its token differs every time) and the WAL side
    files of any file (`-wal`, `-shm`: there while a connection is open) left out."""
    import re

    names = {re.sub(r"^history\.db\.g[0-9a-f]+", "history.db.g*", p.name)
             for p in folder.iterdir()
             if p.name.startswith(prefix) and not p.name.endswith(("-wal", "-shm"))}
    return sorted(names)
