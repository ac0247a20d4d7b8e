"""A rewritten file over the snapshot bound is named and counted, never dropped silently;
`capture.snapshotMaxMiB` raises (or lowers) the bound."""

from __future__ import annotations

import json
from pathlib import Path

from eventlog import EventLog
from eventlog.events import FileSnapshotted
from readers.capture import Capturer, Options
from tests.capture_helpers import roots_of, write
from tests.conftest import run_cli

CHAT = "tmp/p/chats/session-2026-01-01T00-00-abcd1234.json"


def _chat(n: int) -> bytes:
    msg = {"id": "m1", "type": "user", "timestamp": "2026-01-01T00:00:00Z",
           "content": "needle " + "x" * n}
    return json.dumps({"sessionId": "s1", "projectHash": "h", "messages": [msg]}).encode()


def _snapshots(log: EventLog) -> int:
    return sum(isinstance(se.event, FileSnapshotted) for se in log.iter_events())


def test_an_oversized_snapshot_is_named_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "gemini"
    path = write(root / CHAT, _chat(5000))
    with EventLog(tmp_path / "log") as log:
        for _ in range(2):  # every capture says it, not only the first
            stats = Capturer(log, roots_of(gemini=root),
                             Options(settle_s=0, snapshot_max=4096)).run_once()
            out = stats.to_dict()
            assert out["oversized"] == 1, out
            assert any(s.startswith(f"{path}: ") and "oversized" in s
                       and "capture.snapshotMaxMiB" in s for s in out["skipped"]), out
            assert _snapshots(log) == 0
        stats = Capturer(log, roots_of(gemini=root),  # the bound raised: taken, unchanged
                         Options(settle_s=0, snapshot_max=8192)).run_once()
        assert stats.to_dict()["oversized"] == 0 and _snapshots(log) == 1


def test_capture_audit_and_config_name_the_oversized_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "gemini"
    path = write(root / CHAT, _chat(1_200_000))  # over a 1 MiB bound
    config = home / "config.json"
    config.write_text(json.dumps({"gemini_dir": str(root), "capture": {"snapshotMaxMiB": 1}}))
    env = {"HOME": str(tmp_path / "user")}
    out = run_cli(home, "capture", "--json", env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["oversized"] == 1 and any(str(path) in s for s in got["skipped"]), got
    audit = json.loads(run_cli(home, "audit", "--json", env=env).stdout)["capture"]
    assert audit["oversized"] == [{"path": str(path), "bytes": path.stat().st_size}], audit
    assert audit["by_layout"]["gemini.chat"]["oversized"] == 1
    config.write_text(json.dumps({"gemini_dir": str(root), "capture": {"snapshotMaxMiB": 2}}))
    got = json.loads(run_cli(home, "capture", "--json", env=env).stdout)
    assert got["oversized"] == 0 and got["bytes"] == path.stat().st_size, got
    audit = json.loads(run_cli(home, "audit", "--json", env=env).stdout)["capture"]
    assert audit["oversized"] == [] and audit["by_layout"]["gemini.chat"]["oversized"] == 0
    hits = json.loads(run_cli(home, "search", "needle", "--json", env=env).stdout)["hits"]
    assert hits, "the chat was not indexed"
    config.write_text(json.dumps({"capture": {"snapshotMaxMiB": "big"}}))
    bad = run_cli(home, "capture", "--json", env=env)
    assert bad.returncode == 1 and b"snapshotMaxMiB" in bad.stderr, bad.stderr


def test_capture_reports_files_its_parsers_could_not_read(tmp_path: Path) -> None:
    """Damage in a reader's files (truncated, garbage, wrong types) is in capture's own
    report, where the user looks, not only in `audit`."""
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "gemini"
    good = write(root / "tmp/p/chats/session-2026-01-01T00-00-aaaa1111.json", _chat(10))
    truncated = write(root / "tmp/p/chats/session-2026-01-01T00-00-bbbb2222.json",
                      _chat(10)[:-7])
    garbage = write(root / "tmp/p/chats/session-2026-01-01T00-00-cccc3333.json",
                    b"\x00\xffnot json at all")
    wrong = write(root / "tmp/p/chats/session-2026-01-01T00-00-dddd4444.json",
                  json.dumps({"sessionId": 5, "messages": "nope"}).encode())
    env = {"HOME": str(tmp_path / "user")}
    args = ("capture", "--gemini-dir", str(root))
    got = json.loads(run_cli(home, *args, "--json", env=env).stdout)
    unreadable = {u["path"]: u for u in got["unreadable"]}
    assert set(unreadable) == {str(truncated), str(garbage), str(wrong)}, got["unreadable"]
    assert all(sum(u["types"].values()) >= 1 for u in unreadable.values())
    assert str(good) not in unreadable
    write(truncated, _chat(10)[:-3])  # changed again: said again
    text = run_cli(home, *args, env=env)
    assert text.returncode == 0, text.stderr
    err = text.stderr.decode()
    assert f"unreadable: {truncated}" in err and str(garbage) not in err, err
    assert json.loads(run_cli(home, *args, "--json", env=env).stdout)["unreadable"] == []
