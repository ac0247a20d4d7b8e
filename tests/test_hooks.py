"""`agentlog hooks` and `capture --path`: settings edits round-trip, the hooks capture one file."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import run_cli

CLAUDE_SETTINGS = """{
  "model": "opus",
  "cleanupPeriodDays": 365,
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "SessionEnd": [
      {"hooks": [{"type": "command", "command": "echo mine"}]}
    ]
  },
  "env": {"A": "\\u00e9"}
}
"""

CODEX_CONFIG = """# my codex config
model = "o9"   # keep this comment
notify = ["notify-send", "codex done"]

[mcp_servers.other]
command = "x"
args = ["--y"]
"""


def _user_home() -> Path:
    return Path(os.environ["HOME"])


def test_claude_hooks_round_trip_byte_identical(home: Path) -> None:
    settings = _user_home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(CLAUDE_SETTINGS)
    for _ in range(2):
        proc = run_cli(home, "hooks", "install", "claude")
        assert proc.returncode == 0, proc.stderr
    assert b"already installed" in proc.stdout
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == {"allow": ["Bash(ls)"]}
    assert data["env"] == {"A": "é"}
    for event in ("SessionEnd", "PreCompact"):
        commands = [h["command"] for g in data["hooks"][event] for h in g["hooks"]]
        ours = [c for c in commands if c.endswith("hooks run claude")]
        assert len(ours) == 1 and str(home) in ours[0]  # install twice = one entry
    assert "echo mine" in json.dumps(data["hooks"]["SessionEnd"])
    assert (settings.parent / "settings.json.agentlog.bak").read_text() == CLAUDE_SETTINGS
    # a new home replaces our entry instead of adding one
    other = home.parent / "other-home"
    assert run_cli(other, "hooks", "install", "claude").returncode == 0
    data = json.loads(settings.read_text())
    ours = [h["command"] for g in data["hooks"]["PreCompact"] for h in g["hooks"]]
    assert len(ours) == 1 and str(other) in ours[0]
    status = json.loads(run_cli(home, "hooks", "status", "--json").stdout)
    assert status["claude"]["installed"] is True and status["codex"]["installed"] is False
    proc = run_cli(home, "hooks", "uninstall", "claude")
    assert proc.returncode == 0, proc.stderr
    assert settings.read_text() == CLAUDE_SETTINGS  # byte-identical
    assert b"no agentlog" in run_cli(home, "hooks", "uninstall", "claude").stdout


def test_claude_hooks_into_missing_settings(home: Path) -> None:
    settings = _user_home() / ".claude" / "settings.json"
    assert run_cli(home, "hooks", "install", "claude").returncode == 0
    assert set(json.loads(settings.read_text())["hooks"]) == {"SessionEnd", "PreCompact"}
    assert run_cli(home, "hooks", "uninstall", "claude").returncode == 0
    # the install made the file: a clean uninstall leaves nothing behind
    assert not settings.exists() and list(settings.parent.iterdir()) == []


def test_bad_settings_are_never_overwritten(home: Path) -> None:
    settings = _user_home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"model": "opus",,}')
    proc = run_cli(home, "hooks", "install", "claude")
    assert proc.returncode != 0 and b"not valid JSON" in proc.stderr
    assert settings.read_text() == '{"model": "opus",,}'


def test_codex_notify_round_trip_keeps_the_users_program(home: Path) -> None:
    config = _user_home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(CODEX_CONFIG)
    for _ in range(2):
        proc = run_cli(home, "hooks", "install", "codex")
        assert proc.returncode == 0, proc.stderr
    text = config.read_text()
    assert "# keep this comment" in text and "# my codex config" in text
    notify = tomllib.loads(text)["notify"]
    assert notify[-6:] == ["hooks", "run", "codex", "--", "notify-send", "codex done"]
    assert str(home) in notify
    assert tomllib.loads(text)["mcp_servers"]["other"] == {"command": "x", "args": ["--y"]}
    assert run_cli(home, "hooks", "uninstall", "codex").returncode == 0
    assert config.read_text() == CODEX_CONFIG
    bare = CODEX_CONFIG.replace('notify = ["notify-send", "codex done"]\n', "")
    config.write_text(bare)
    assert run_cli(home, "hooks", "install", "codex").returncode == 0
    assert tomllib.loads(config.read_text())["notify"][-3:] == ["hooks", "run", "codex"]
    assert run_cli(home, "hooks", "uninstall", "codex").returncode == 0
    assert config.read_text() == bare


def _claude_tree(corpus: Path) -> tuple[Path, Path]:
    """Two real Claude Code sessions under the temp user's ~/.claude/projects."""
    found = sorted(p for p in (corpus / "claude-code").rglob("*.jsonl")
                   if "subagents" not in p.parts and p.stat().st_size > 4000)[:2]
    assert len(found) == 2
    folder = _user_home() / ".claude" / "projects" / "-tmp-app"
    folder.mkdir(parents=True)
    a, b = folder / "aaaa.jsonl", folder / "bbbb.jsonl"
    shutil.copyfile(found[0], a)
    shutil.copyfile(found[1], b)
    return a, b


def _sources(home: Path) -> list[str]:
    audit = json.loads(run_cli(home, "audit", "--json").stdout)
    cov = audit.get("capture") or audit.get("coverage") or {}
    return [str(s) for s in cov.get("sources", [])] if isinstance(cov, dict) else []


def test_claude_hook_captures_the_named_transcript_only(home: Path, corpus: Path,
                                                         tmp_path: Path) -> None:
    a, _ = _claude_tree(corpus)
    payload = json.dumps({"session_id": "aaaa", "transcript_path": str(a),
                          "hook_event_name": "SessionEnd", "reason": "exit"})
    proc = run_cli(home, "hooks", "run", "claude", input=payload.encode())
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    out = tmp_path / "restored"
    assert run_cli(home, "restore", "--to", str(out)).returncode == 0
    restored = sorted(p for p in out.rglob("*.jsonl"))
    assert [p.name for p in restored] == ["aaaa.jsonl"]  # b was not touched
    assert restored[0].read_bytes() == a.read_bytes()
    # a full capture afterwards finds the hook's cursor current and adds only b
    full = json.loads(run_cli(home, "capture", "--json").stdout)
    assert full["new_files"] == 1 and full["pending"] == 0
    # bad input never fails the agent: exit 0, one line on stderr
    for bad in (b"not json", b"{}", json.dumps({"transcript_path": "/etc/hostname"}).encode()):
        proc = run_cli(home, "hooks", "run", "claude", input=bad)
        assert proc.returncode == 0 and proc.stderr.count(b"\n") == 1, proc.stderr


def test_capture_path_json(home: Path, corpus: Path) -> None:
    a, _ = _claude_tree(corpus)
    proc = run_cli(home, "capture", "--path", str(a), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["files"] == 1 and out["appended"] > 0 and out["outside_roots"] == []
    again = json.loads(run_cli(home, "capture", "--path", str(a), "--json").stdout)
    assert again["appended"] == 0
    proc = run_cli(home, "capture", "--path", "/etc/hostname")
    assert proc.returncode == 1 and b"under no capture root" in proc.stderr


def test_codex_notify_captures_the_thread_and_chains(home: Path, corpus: Path,
                                                     tmp_path: Path) -> None:
    rollout = sorted((corpus / "codex").rglob("sessions/*/*/*/rollout-*.jsonl"))[0]
    day = _user_home() / ".codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    target = day / rollout.name
    shutil.copyfile(rollout, target)
    thread = rollout.name[len("rollout-2025-09-16T14-12-31-"):-len(".jsonl")]
    seen = tmp_path / "chained.txt"
    chained = [sys.executable, "-c",
               f"import sys; open({str(seen)!r}, 'w').write(sys.argv[1])"]
    payload = json.dumps({"type": "agent-turn-complete", "thread-id": thread,
                          "turn-id": "1", "cwd": "/tmp", "input-messages": ["hi"]})
    proc = run_cli(home, "hooks", "run", "codex", "--", *chained, payload)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert json.loads(seen.read_text())["thread-id"] == thread
    out = tmp_path / "restored"
    assert run_cli(home, "restore", "--to", str(out)).returncode == 0
    restored = list(out.rglob("rollout-*.jsonl"))
    assert len(restored) == 1 and restored[0].read_bytes() == target.read_bytes()
    proc = run_cli(home, "hooks", "run", "codex", json.dumps({"thread-id": "nope"}))
    assert proc.returncode == 0 and b"no Codex rollout" in proc.stderr


def test_claude_hook_refuses_what_is_not_a_regular_file(home: Path, tmp_path: Path) -> None:
    """A link, a FIFO, a folder or a missing transcript: one line on stderr each, exit 0,
    nothing recorded (no source pending forever, no empty file from restore)."""
    folder = _user_home() / ".claude" / "projects" / "-tmp-odd"
    folder.mkdir(parents=True)
    real = folder / "real.jsonl"
    real.write_bytes(b'{"type":"user","message":{"role":"user","content":"hi"}}\n')
    os.symlink(real, folder / "link.jsonl")
    os.mkfifo(folder / "fifo.jsonl")
    (folder / "dir.jsonl").mkdir()
    cases = {"link.jsonl": "symbolic link", "fifo.jsonl": "not a regular file",
             "dir.jsonl": "folder", "gone.jsonl": "does not exist"}
    for name, words in cases.items():
        payload = json.dumps({"session_id": "x", "transcript_path": str(folder / name),
                              "hook_event_name": "Stop"})
        proc = run_cli(home, "hooks", "run", "claude", input=payload.encode(), timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 0 and err.count("\n") == 1, (name, err)
        assert words in err and name in err, (name, err)
        assert "Error" not in err, err  # the reason, not an exception's class name
    assert not (home / "log" / "data.mdb").exists() or json.loads(
        run_cli(home, "audit", "--json").stdout)["events"] == 0
    proc = run_cli(home, "capture", "--path", str(folder / "fifo.jsonl"), timeout=60)
    assert proc.returncode == 1 and b"not a regular file" in proc.stderr, proc.stderr
    proc = run_cli(home, "capture", "--path", str(folder / "fifo.jsonl"), "--json", timeout=60)
    assert json.loads(proc.stdout)["refused"] == [
        {"path": str(folder / "fifo.jsonl"),
         "reason": "is not a regular file (a FIFO, socket or device)"}]


def _search_ids(home: Path, word: str) -> list[str]:
    out = run_cli(home, "search", word, "--json")
    assert out.returncode == 0, out.stderr
    return [h["id"] for h in json.loads(out.stdout)["hits"]]


def _turn(uuid: str, text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": uuid, "sessionId": "s1", "cwd": "/tmp/app",
                       "timestamp": "2026-11-01T10:00:00Z",
                       "message": {"role": "user", "content": text}}).encode()


def test_session_end_makes_an_unfinished_last_line_searchable(home: Path) -> None:
    """At SessionEnd the agent writes no more: its unterminated last line is final. Before
    that, capture keeps holding it back (its newline may still come)."""
    folder = _user_home() / ".claude" / "projects" / "-tmp-app"
    folder.mkdir(parents=True)
    cases = {"hookonly": "zanzibar", "watched": "quixotic"}
    for name, word in cases.items():
        (folder / f"{name}.jsonl").write_bytes(
            _turn(f"{name}-1", "first turn") + b"\n" + _turn(f"{name}-2", word))
    # `watched`: a capture of the quiet file took its tail already (held back from search)
    assert run_cli(home, "capture", "--path", str(folder / "watched.jsonl")).returncode == 0
    assert _search_ids(home, "quixotic") == []
    for name, word in cases.items():
        payload = json.dumps({"session_id": name, "transcript_path": str(folder / f"{name}.jsonl"),
                              "hook_event_name": "SessionEnd", "reason": "exit"})
        proc = run_cli(home, "hooks", "run", "claude", input=payload.encode())
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        assert _search_ids(home, word) == [f"transcript:claude:{name}-2"], name
    # the bytes are still the file's exactly
    assert run_cli(home, "restore", "--to", str(home.parent / "rv")).returncode == 0
    for name in cases:
        got = next((home.parent / "rv").rglob(f"{name}.jsonl")).read_bytes()
        assert got == (folder / f"{name}.jsonl").read_bytes()
    # a rebuild gives the same answer
    assert run_cli(home, "reindex").returncode == 0
    assert _search_ids(home, "zanzibar") == ["transcript:claude:hookonly-2"]
    assert _search_ids(home, "quixotic") == ["transcript:claude:watched-2"]


@pytest.mark.parametrize(("rest", "client", "args"), [
    (["claude"], "claude", []), (["claude", "extra"], "claude", ["extra"]),
    (["codex"], "codex", []), (["codex", "{}"], "codex", ["{}"]),
    (["codex", "--", "notify-send", "-u", "low", "{}"], "codex",
     ["notify-send", "-u", "low", "{}"]),
    (["codex", "--", "prog", "--", "x", "{}"], "codex", ["prog", "--", "x", "{}"]),
    (["codex", "prog", "--", "-x", "{}"], "codex", ["prog", "-x", "{}"]),
])
def test_hooks_run_hands_the_agents_arguments_to_the_hook(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rest: list[str], client: str,
        args: list[str]) -> None:
    """What `hooks run CLIENT …` passes on: the first `--` (before the user's chained notify
    program) is dropped, the program's own options and a later `--` are kept."""
    from click.testing import CliRunner

    from cli.group import cli
    from cli.services.capture import hook

    calls: list[object] = []
    monkeypatch.setattr(hook, "run", lambda home, c, a: calls.append((home.root, c, a)))
    result = CliRunner().invoke(cli, ["--home", str(tmp_path), "hooks", "run", *rest])
    assert result.exit_code == 0, result.output
    assert calls == [(tmp_path, client, args)]


def test_a_hook_for_a_file_under_no_root_says_so_in_one_line(home: Path,
                                                               tmp_path: Path) -> None:
    payload = json.dumps({"transcript_path": str(tmp_path / "nowhere.jsonl")})
    proc = run_cli(home, "hooks", "run", "claude", input=payload.encode())
    assert proc.returncode == 0 and proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and b"under no capture root" in proc.stderr
