"""The no-change capture with and without the readers added by issue 14 (bench/capture.py).

A synthetic user home (`HOME`) holds Aider, Amp, Crush, Goose and Kiro files and 40 project
folders (with `.git/` and `node_modules/`) that the project-folder scan walks; every new
agent uses its default roots there. The baseline is the same capture with every new agent's
root pointed at a missing folder. Runs alternate, so load on a shared machine hits both
alike (goal: the no-change time grows by at most 20 %).
"""

from __future__ import annotations

import functools
import json
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _text(rng: random.Random, n: int) -> str:
    words = ("capture", "session", "refactor", "parser", "the", "a", "to", "test", "error")
    return " ".join(rng.choice(words) for _ in range(n))


@functools.cache
def new_agents() -> tuple[str, ...]:
    """Every registered agent but the original four (issue 14's eleven)."""
    from readers import registry

    return tuple(n for n in registry.names() if n not in ("claude", "codex", "opencode", "runs"))



def write_user_home(user: Path, rng: random.Random) -> int:
    """A home with 40 projects (some with Aider or Crush files) and Amp, Goose and Kiro data;
    returns the number of history files written."""
    import sqlite3

    n = 0
    for i in range(40):
        proj = user / "code" / f"proj{i}"
        for sub in ("src/app", "tests/unit", "docs/guide", ".git/objects/ab"):
            (proj / sub).mkdir(parents=True, exist_ok=True)
            (proj / sub / "file.txt").write_text(_text(rng, 20))
        for j in range(30):
            (proj / "node_modules" / f"pkg{j}" / "lib").mkdir(parents=True, exist_ok=True)
        if i % 4 == 0:
            chat = "".join(f"# aider chat started at 2026-01-{1 + k:02d} 10:00:00\n\n"
                           f"#### {_text(rng, 12)}\n\n{_text(rng, 200)}\n\n> Tokens: 1k\n\n"
                           for k in range(20))
            (proj / ".aider.chat.history.md").write_text(chat)
            (proj / ".aider.input.history").write_text(
                f"\n# 2026-01-01 10:00:00.1\n+{_text(rng, 9)}\n")
            n += 2
        if i % 13 == 0:
            (proj / ".crush").mkdir()
            con = sqlite3.connect(proj / ".crush" / "crush.db")
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(
                "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT,"
                " updated_at INTEGER, created_at INTEGER);"
                "CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT, role TEXT,"
                " parts TEXT, created_at INTEGER, updated_at INTEGER);"
                "INSERT INTO sessions VALUES ('s', NULL, 't', 1754457380, 1754457380);")
            con.executemany(
                "INSERT INTO messages VALUES (?, 's', 'user', ?, 1754457380, 1754457380)",
                [(f"m{k}", json.dumps([{"type": "text", "data": {"text": _text(rng, 80)}}]))
                 for k in range(200)])
            con.commit()
            con.close()
            n += 1
    for d in ("Documents/notes/2025", "Downloads/archive/x", "Pictures/2025/trip"):
        (user / d).mkdir(parents=True, exist_ok=True)
    amp = user / ".local" / "share" / "amp" / "threads"
    amp.mkdir(parents=True)
    for i in range(10):
        thread = {"v": 3, "id": f"T-{i:08d}-0000-0000-0000-000000000000",
                  "created": 1761596096076,
                  "title": _text(rng, 4), "env": {"initial": {"trees": [{"uri": "file:///w/p"}]}},
                  "messages": [{"role": "user", "messageId": k, "meta": {"sentAt": 1761596096076},
                                "content": [{"type": "text", "text": _text(rng, 60)}]}
                               for k in range(20)]}
        (amp / f"{thread['id']}.json").write_text(json.dumps(thread))
        n += 1
    kiro = user / ".kiro" / "sessions" / "cli"
    kiro.mkdir(parents=True)
    for i in range(10):
        sid = f"{i:08d}-0000-0000-0000-000000000000"
        (kiro / f"{sid}.json").write_text(json.dumps({"session_id": sid, "cwd": "/w/p"}))
        (kiro / f"{sid}.jsonl").write_text("".join(json.dumps(
            {"version": "v1", "kind": "Prompt", "data": {"message_id": f"m{k}", "content": [
                {"kind": "text", "data": _text(rng, 40)}]}}) + "\n" for k in range(20)))
        n += 2
    goose = user / ".local" / "share" / "goose" / "sessions"
    goose.mkdir(parents=True)
    con = sqlite3.connect(goose / "sessions.db")
    con.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT, working_dir TEXT,"
        " updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT,"
        " role TEXT, content_json TEXT, created_timestamp INTEGER);"
        "INSERT INTO sessions (id, name, working_dir) VALUES ('20251202_1', 'n', '/w/p');")
    con.executemany("INSERT INTO messages (session_id, role, content_json, created_timestamp)"
                    " VALUES ('20251202_1', 'user', ?, 1764694735)",
                    [(json.dumps([{"type": "text", "text": _text(rng, 50)}]),)
                     for _ in range(100)])
    con.commit()
    con.close()
    return n + 1


def figure(run: Callable[..., Any], home: Path, roots: dict[str, Path], tmp: Path,
           user: Path) -> None:
    """Print the no-change time with and without the new readers; `run` = run_capture."""
    n_new = write_user_home(user, random.Random(3))
    home_b = tmp / "home-new-readers"
    run(home_b, roots, new_agents=True)  # cold
    without: list[float] = []
    with_new: list[float] = []
    for _ in range(9):
        for with_them, into in ((False, without), (True, with_new)):
            w, _, s = run(home_b if with_them else home, roots, new_agents=with_them)
            assert s["appended"] == 0, s
            into.append(w)
    base_nc, new_nc = statistics.median(without), statistics.median(with_new)
    print(f"no-change re-capture with the {len(new_agents())} new readers ({n_new} more files "
          f"of aider, amp, crush, goose, kiro; 40 project folders scanned): median "
          f"{new_nc:.3f} s vs {base_nc:.3f} s without them "
          f"({(new_nc / base_nc - 1) * 100:+.0f} %, goal <= +20 %; best "
          f"{min(with_new):.3f} vs {min(without):.3f} s)")


def env_vars() -> list[tuple[str, str]]:
    """The environment variables of the new agents' roots (cleared for the benchmark)."""
    from readers import registry

    return [e for name in new_agents() for e in registry.get(name).env]
