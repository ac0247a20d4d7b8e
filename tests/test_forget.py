"""`agentlog forget` (issue 26): gone for real, and the chain still proves the rest.

Real homes captured by the real CLI; every file under the home is searched byte for byte
(`grep -a`) after a forget; `verify` runs as users run it; a kill -9 storm checks that a
forget leaves the old state or the new one.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from eventlog import codec
from eventlog import forget as fg
from eventlog.events import MessageSent
from eventlog.store import EventLog
from eventlog.verify import scan
from tests.conftest import ROOT, run_cli

GONE = "aaaa1111-forget-me"
MARK = "zebrafishmarker"  # only in GONE's lines
PLANTED = "PLANTEDSTRINGX99"  # one line of bbbb


def _line(sid: str, uid: str, role: str, text: str, at: str) -> str:
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": role, "uuid": uid, "sessionId": sid, "timestamp": at,
                       "cwd": "/p/proj", "message": {"role": role, "content": content}})


def _sources(tmp: Path) -> Path:
    base = tmp / "claude" / "projects" / "-p-proj"
    base.mkdir(parents=True)
    for sid, word in ((GONE, MARK), ("bbbb2222-keep", "okapiword"),
                      ("cccc3333-keep", "lemurword")):
        lines = [_line(sid, f"{sid}-{i}", "user" if i % 2 == 0 else "assistant",
                       f"{word} message {i} about parsers sharedword",
                       f"2026-11-0{1 + i % 3}T09:00:0{i}Z") for i in range(6)]
        if sid.startswith("bbbb"):
            lines.append(_line(sid, "x", "user", f"the string {PLANTED} is here sharedword",
                               "2026-11-01T10:00:00Z"))
        (base / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp / "empty").mkdir()
    return base


def _capture(tmp: Path, home: Path) -> dict[str, Any]:
    proc = run_cli(home, "capture", "--claude-dir", str(tmp / "claude"), "--codex-dir",
                   str(tmp / "empty"), "--opencode-dir", str(tmp / "empty"), "--runs-dir",
                   str(tmp / "empty"), "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def _files_holding(home: Path, *needles: str) -> list[str]:
    """Every file under `home` whose bytes hold one of `needles` (grep -a -r -l)."""
    found = []
    for dirpath, _, names in os.walk(home):
        for n in names:
            path = os.path.join(dirpath, n)
            with open(path, "rb") as f:
                data = f.read()
            if any(x.encode() in data for x in needles):
                found.append(path)
    return found


def _hits(home: Path, query: str) -> int:
    proc = run_cli(home, "search", query, "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    return len(json.loads(proc.stdout)["hits"])


def test_forget_session_leaves_no_byte_and_verify_names_the_event(tmp_path: Path,
                                                                  home: Path) -> None:
    base = _sources(tmp_path)
    _capture(tmp_path, home)
    assert _hits(home, MARK) > 0
    assert run_cli(home, "backup").returncode == 0
    archived = run_cli(home, "archive", "--after-days", "1", "--now", "2027-06-01T00:00:00Z")
    assert archived.returncode == 0, archived.stderr.decode()
    assert len(list((home / "archive").rglob("*.json"))) == 3
    assert _files_holding(home, MARK, GONE)  # the log, the backup and an archive file hold it

    dry = run_cli(home, "forget", "--session", GONE, "--json")
    assert dry.returncode == 0, dry.stderr.decode()
    plan = json.loads(dry.stdout)
    assert plan["dryRun"] and plan["forgotten"] >= 2 and plan["sources"] == 1
    assert plan["sourceFilesOnDisk"] == [str(base / f"{GONE}.jsonl")]
    assert _hits(home, MARK) > 0  # a dry run writes nothing

    done = run_cli(home, "forget", "--session", GONE, "--apply", "--json")
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    assert got["backupsReplaced"] and got["scrubbedPages"] > 0
    assert len(got["archiveFilesRemoved"]) == 1
    assert len(list((home / "archive").rglob("*.json"))) == 2  # the others' stay
    assert _files_holding(home, MARK, GONE) == []
    assert _hits(home, MARK) == 0 and _hits(home, "lemurword") > 0

    ver = run_cli(home, "verify", "--json")
    assert ver.returncode == 0, ver.stdout.decode() + ver.stderr.decode()
    report = json.loads(ver.stdout)
    assert report["forgotten"] == got["forgotten"]
    assert [e["seq"] for e in report["forget_events"]] == [got["event"]]
    text = run_cli(home, "verify").stdout.decode()
    assert f"by the forget event at record {got['event']}" in text

    # the source still exists and grows: never captured again, its name kept nowhere
    with (base / f"{GONE}.jsonl").open("a") as f:
        f.write(_line(GONE, "late", "user", f"{MARK} came back", "2026-11-05T09:00:00Z") + "\n")
    again = _capture(tmp_path, home)
    assert again["appended"] == 0 and again["forgotten"] == 1
    _capture(tmp_path, home)
    assert _files_holding(home, MARK, GONE) == []
    assert _hits(home, MARK) == 0

    # the others restore byte for byte
    out = tmp_path / "restored"
    assert run_cli(home, "restore", "--to", str(out)).returncode == 0
    for sid in ("bbbb2222-keep", "cccc3333-keep"):
        assert ((out / "claude/projects/-p-proj" / f"{sid}.jsonl").read_bytes()
                == (base / f"{sid}.jsonl").read_bytes())
    assert not (out / "claude/projects/-p-proj" / f"{GONE}.jsonl").exists()


def _log_lines(home: Path, dest: Path) -> dict[int, dict[str, Any]]:
    assert run_cli(home, "export", "--log", str(dest)).returncode == 0
    rows = (json.loads(x) for x in dest.read_text().splitlines())
    return {r["seq"]: r for r in rows if "seq" in r}


def test_forget_text_changes_that_string_only(tmp_path: Path, home: Path) -> None:
    base = _sources(tmp_path)
    _capture(tmp_path, home)
    before = _log_lines(home, tmp_path / "before.jsonl")
    done = run_cli(home, "forget", "--text", PLANTED, "--apply", "--json")
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    assert got["amended"] == 1 and got["forgotten"] == 0
    after = _log_lines(home, tmp_path / "after.jsonl")
    changed = [s for s in before if before[s] != after[s]]
    assert len(changed) == 1 and "form" in after[changed[0]]
    # only the forget event (and its process's writer event) are new
    assert sorted(set(after) - set(before)) == [got["event"] - 1, got["event"]]
    assert _files_holding(home, PLANTED) == []
    assert run_cli(home, "verify").returncode == 0
    assert _hits(home, PLANTED) == 0 and _hits(home, "okapiword") > 0

    out = tmp_path / "restored"
    assert run_cli(home, "restore", "--to", str(out)).returncode == 0
    proj = out / "claude/projects/-p-proj"
    for sid in (GONE, "cccc3333-keep"):
        assert (proj / f"{sid}.jsonl").read_bytes() == (base / f"{sid}.jsonl").read_bytes()
    kept = (proj / "bbbb2222-keep.jsonl").read_bytes()
    orig = (base / "bbbb2222-keep.jsonl").read_bytes()
    assert kept == orig.replace(PLANTED.encode(), b"*" * len(PLANTED))


def test_forget_refuses_what_it_cannot_name(home: Path, tmp_path: Path) -> None:
    _sources(tmp_path)
    _capture(tmp_path, home)
    nothing = run_cli(home, "forget")
    assert nothing.returncode == 2 and b"exactly one of" in nothing.stderr
    unknown = run_cli(home, "forget", "--session", "no-such-session-id")
    assert unknown.returncode == 2 and b"no session" in unknown.stderr
    short = run_cli(home, "forget", "--text", "ab")
    assert short.returncode == 2


# --- the log alone --------------------------------------------------------------------------


def _log_with_messages(path: Path) -> EventLog:
    log = EventLog(path)
    log.append([(f"k{i}".encode(), MessageSent(
        id=str(i), sender="a", to=["b"], kind="message",
        body=(MARK if i in (3, 4) else "hello ") * 300, at=1)) for i in range(1, 20)])
    return log


def test_a_payload_dropped_without_a_forget_event_is_damage(tmp_path: Path) -> None:
    log = _log_with_messages(tmp_path / "log")
    done = fg.forget(log, {4: None, 5: None}, kind="session", by="t")
    assert scan(log).ok and scan(log).forgotten == 2
    events, skey = log.db(b"events"), (8).to_bytes(8, "big")
    with log.env.begin(write=True) as txn:
        v = bytes(txn.get(skey, db=events))
        key = codec.decode_envelope(codec.unpack_value(v)[2]).key
        txn.put(skey, codec.pack_tomb(codec.FORGOTTEN, v[1:33], done.event_seq, key), db=events)
    bad = scan(log)
    assert not bad.ok and bad.first_bad_seq == 8 and "does not name it" in (bad.reason or "")
    with log.env.begin(write=True) as txn:  # naming a record that is no forget event
        txn.put(skey, codec.pack_tomb(codec.FORGOTTEN, v[1:33], 12, key), db=events)
    assert not scan(log).ok
    with log.env.begin(write=True) as txn:  # a forgotten record's hash edited
        txn.put(skey, v, db=events)
        t = bytes(txn.get((4).to_bytes(8, "big"), db=events))
        txn.put((4).to_bytes(8, "big"), t[:1] + bytes(32) + t[33:], db=events)
    assert not scan(log).ok
    log.close()


def test_free_pages_are_scrubbed(tmp_path: Path) -> None:
    log = _log_with_messages(tmp_path / "log")
    fg.forget(log, {4: None, 5: None}, kind="session", by="t")
    log.close()
    assert MARK.encode() in (tmp_path / "log/data.mdb").read_bytes()  # LMDB kept the pages
    log = EventLog(tmp_path / "log")
    assert fg.pending_scrub(log)
    fg.scrub_free_pages(log)
    assert not fg.pending_scrub(log) and scan(log).ok
    log.close()
    assert MARK.encode() not in (tmp_path / "log/data.mdb").read_bytes()


def test_a_killed_forget_leaves_the_old_state_or_the_new(tmp_path: Path) -> None:
    """kill -9 at random moments of `forget --apply`: verify passes, and the session is
    either all there (old state) or gone from every front end once `forget --finish` or
    the next forget ran (new state)."""
    rng = random.Random(26)
    _sources(tmp_path)
    outcomes = set()
    for i in range(6):
        home = tmp_path / f"home{i}"
        home.mkdir()
        _capture(tmp_path, home)
        env = dict(os.environ)
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "--home", str(home), "forget", "--session",
             GONE, "--apply"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert run_cli(home, "verify").returncode == 0, i
        log = EventLog(home / "log", readonly=True)
        forgotten = log.forget_head() > 0
        log.close()
        if forgotten:
            outcomes.add("new")
            assert run_cli(home, "forget", "--finish").returncode == 0
            assert _hits(home, MARK) == 0
            assert _files_holding(home, MARK, GONE) == []
        else:
            outcomes.add("old")
            assert _hits(home, MARK) > 0
    assert outcomes, "no run"


def test_a_projection_built_before_a_forget_is_rebuilt(tmp_path: Path, home: Path) -> None:
    """A crash between the log's transaction and the rebuild: whoever reads next rebuilds."""
    _sources(tmp_path)
    _capture(tmp_path, home)
    from cli.services import forget as svc
    from cli.services.config import Home

    h = Home(home)
    p = svc.plan(h, session=GONE)
    log = h.log()
    fg.forget(log, p.targets, kind="session", by="t")  # step 1 only, as if killed after it
    log.close()
    assert _hits(home, MARK) == 0


# --- the team store -------------------------------------------------------------------------


@pytest.mark.postgres
def test_the_team_store_follows_a_forget(tmp_path: Path, home: Path, pg_url: str) -> None:
    """A writer role (SELECT only: the owner's functions write) syncs, forgets, syncs
    again: the server's raw records and documents hold nothing of the session, its chain
    check and `verify --postgres` pass, and the other sessions are still found there."""
    import psycopg

    tag = pg_url.rsplit("/", 1)[1]
    init = run_cli(home, "team", "init", pg_url, "--writer", f"{tag}_f", "--json")
    assert init.returncode == 0, init.stderr.decode()
    writer = json.loads(init.stdout)["roles"][0]["url"]
    _sources(tmp_path)
    _capture(tmp_path, home)
    assert run_cli(home, "sync", "--to", writer).returncode == 0

    def server_holds(needle: str) -> tuple[int, int]:
        with psycopg.connect(pg_url) as con:
            raw = con.execute("SELECT count(*) FROM agentlog.records WHERE position(%s IN"
                              " value) > 0", (needle.encode(),)).fetchone()
            docs = con.execute("SELECT count(*) FROM agentlog.documents WHERE text LIKE %s OR"
                               " session = %s", (f"%{needle}%", needle)).fetchone()
        assert raw is not None and docs is not None
        return int(raw[0]), int(docs[0])

    assert server_holds(MARK) != (0, 0)
    done = run_cli(home, "forget", "--session", GONE, "--apply")
    assert done.returncode == 0, done.stderr.decode()
    synced = run_cli(home, "sync", "--to", writer, "--json")
    assert synced.returncode == 0, synced.stderr.decode()
    assert json.loads(synced.stdout)["forgotten"] >= 2
    assert server_holds(MARK) == (0, 0) and server_holds(GONE)[0] == 0
    assert server_holds("lemurword")[1] > 0
    ver = run_cli(home, "verify", "--postgres", pg_url, "--json")
    assert ver.returncode == 0, ver.stdout.decode() + ver.stderr.decode()
    again = run_cli(home, "sync", "--to", writer, "--json")  # nothing more to replace
    assert json.loads(again.stdout)["forgotten"] == 0


def test_forget_a_session_of_a_shared_database(tmp_path: Path, home: Path) -> None:
    """opencode keeps every session in one SQLite file: the forgotten session's rows go,
    the other sessions of the same file stay, and its rows are not taken again."""
    import sqlite3

    from tests.test_secrets import _opencode

    db = tmp_path / "opencode" / "opencode.db"
    _opencode(db)
    con = sqlite3.connect(db)
    t = 1_793_000_100_000
    con.execute("INSERT INTO session VALUES ('ses_keep', 'other', '/p/other', ?, ?)", (t, t))
    con.execute("INSERT INTO message VALUES ('msg_k', 'ses_keep', ?, ?, ?)",
                (t, t, json.dumps({"role": "user"})))
    con.execute("INSERT INTO part VALUES ('prt_k', 'msg_k', 'ses_keep', ?, ?, ?)",
                (t, t, json.dumps({"type": "text", "text": "gecko keeps this one"})))
    con.commit()
    (tmp_path / "empty").mkdir()
    args = ("capture", "--claude-dir", str(tmp_path / "empty"), "--codex-dir",
            str(tmp_path / "empty"), "--opencode-dir", str(tmp_path / "opencode"),
            "--runs-dir", str(tmp_path / "empty"), "--json")
    assert run_cli(home, *args).returncode == 0
    assert _hits(home, "jackal") > 0 and _hits(home, "gecko") > 0
    done = run_cli(home, "forget", "--session", "ses_sec", "--apply", "--json")
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    assert got["sources"] == 0 and got["sharedSources"] == 1 and got["forgotten"] >= 3
    assert _files_holding(home, "jackal", "ses_sec") == []
    assert _hits(home, "jackal") == 0 and _hits(home, "gecko") > 0
    # the agent updates the forgotten session: its rows are still not taken
    con.execute("UPDATE part SET data = ?, time_updated = ? WHERE id = 'prt_0'",
                (json.dumps({"type": "text", "text": "jackal again"}), t + 5))
    con.commit()
    con.close()
    assert run_cli(home, *args).returncode == 0
    assert _hits(home, "jackal") == 0 and _files_holding(home, "jackal", "ses_sec") == []
    assert run_cli(home, "verify").returncode == 0
