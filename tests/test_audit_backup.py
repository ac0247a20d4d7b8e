"""`agentlog audit` and `agentlog backup` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli


def fact(i: int, at: str = "2026-11-01T10:00:00Z") -> dict[str, object]:
    return {"type": "question", "id": f"q{i}", "from": "lead", "body": f"q {i}?", "at": at}


def record(home: Path, *facts: dict[str, object]) -> dict[str, int]:
    data = "".join(json.dumps(f) + "\n" for f in facts).encode()
    res = run_cli(home, "record", input=data)
    assert res.returncode == 0, res.stderr
    out: dict[str, int] = json.loads(res.stdout)
    return out


def test_audit_counts_writers_and_duplicates(home: Path) -> None:
    record(home, fact(1), fact(2))
    record(home, fact(2), fact(3), {"type": "alias", "alias": "a", "session": "s",
                                    "agent": "codex", "at": 0})
    res = run_cli(home, "audit", "--json")
    assert res.returncode == 0, res.stderr
    a = json.loads(res.stdout)
    assert a["events"] == 6
    assert a["by_tag"] == {"alias.bound": 1, "question.asked": 3, "writer.started": 2}
    assert a["duplicates_skipped"] == 1
    assert a["head"]["seq"] == 6 and len(a["head"]["hash"]) == 64
    assert [w["command"] for w in a["writers"]] == ["agentlog record"] * 2
    assert [w["seq"] for w in a["writers"]] == [1, 4]
    assert sum(a["by_day"].values()) == 6
    assert a["first_capture"] <= a["last_capture"]
    assert a["log_bytes"] > 0
    text = run_cli(home, "audit")
    assert text.returncode == 0 and b"question.asked" in text.stdout


def test_audit_text_summarises_the_capture_and_archive_sections(home: Path,
                                                                  tmp_path: Path) -> None:
    """QA: the text audit printed these two sections as pages of raw JSON."""
    claude = tmp_path / "claude"
    (claude / "projects" / "-p").mkdir(parents=True)
    (claude / "projects" / "-p" / "s1.jsonl").write_bytes(b'{"type":"user"}\n')
    cap = run_cli(home, "capture", "--claude-dir", str(claude), "--codex-dir",
                  str(tmp_path / "nx"), "--opencode-dir", str(tmp_path / "ny"))
    assert cap.returncode == 0, cap.stderr
    res = run_cli(home, "audit", env={"COLUMNS": "200"})
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    assert "captured by layout" in out and "claude.session" in out
    assert "archive:" in out
    assert '"by_layout"' not in out and '"archive_ticks"' not in out


def test_audit_without_a_log_is_a_clear_error(home: Path) -> None:
    res = run_cli(home, "audit")
    assert res.returncode == 1 and b"no event log" in res.stderr


def test_backup_without_a_log_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    """QA: `--home <typo> backup` created a new empty log and backed it up, exit 0."""
    typo = tmp_path / "no-such-home"
    res = run_cli(typo, "backup")
    assert res.returncode == 2 and f"home {typo} does not exist".encode() in res.stderr
    assert not typo.exists()


def test_backup_is_verified_and_verifiable(home: Path) -> None:
    record(home, *(fact(i) for i in range(50)))
    res = run_cli(home, "backup", "--json")
    assert res.returncode == 0, res.stderr
    m = json.loads(res.stdout)
    path = Path(m["path"])
    assert path.parent == home / "backups" and (path / "data.mdb").is_file()
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["head_seq"] == m["head_seq"] == 51
    audit = json.loads(run_cli(home, "audit", "--json").stdout)
    assert manifest["head_hash"] == audit["head"]["hash"]
    v = run_cli(home, "verify", "--log", str(path), "--json")
    assert v.returncode == 0, v.stderr
    rep = json.loads(v.stdout)
    assert rep["head_hash"] == manifest["head_hash"] and rep["records"] == 51
    assert not list((home / "backups").glob(".*.tmp"))


def test_verify_names_a_plain_history_db_from_before_generations(home: Path) -> None:
    """A plain history.db (an older agentlog's, rollback journal) verifies, and verify says
    that `reindex` moves it to WAL; after the reindex it is a generation and says nothing."""
    from tests.test_projections_support import plain_file

    record(home, fact(1))
    assert run_cli(home, "search", "q").returncode == 0
    plain_file(home / "history.db")
    res = run_cli(home, "verify", "--json")
    assert res.returncode == 0, res.stderr
    section = next(s for s in json.loads(res.stdout)["checks"] if s["name"] == "history.db")
    assert section["ok"] and "`agentlog reindex` moves it to WAL" in section["detail"]
    assert run_cli(home, "reindex").returncode == 0
    assert (home / "history.db").is_symlink()
    res = run_cli(home, "verify", "--json")
    section = next(s for s in json.loads(res.stdout)["checks"] if s["name"] == "history.db")
    assert section["ok"] and "WAL" not in section["detail"]
