"""Every command against a damaged log, a damaged history.db, a full disk and hostile
arguments: no Python traceback, ever; and damaged logs never give exit 0 with wrong output.

Each command runs as a child process (a damaged LMDB page may abort a reader; it must not
take the test runner with it). The full-disk home lives on a 4 MiB tmpfs: mounting needs
root (CI runs as root); elsewhere the test says why it skips, and under CI=true it fails.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli, unavailable
from tests.webdata import FACTS, THREAD, capture_transcript

HUGE = str(2**64)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with broker facts, a captured transcript and a current history.db."""
    tmp = tmp_path_factory.mktemp("walk")
    home = tmp / "home"
    data = "".join(json.dumps(f) + "\n" for f in FACTS + THREAD).encode()
    assert run_cli(home, "record", input=data).returncode == 0
    capture_transcript(home, tmp / "src")
    assert run_cli(home, "reindex").returncode == 0
    return home


def _copy(base: Path, dest: Path) -> Path:
    shutil.copytree(base, dest, symlinks=True)
    return dest


def _commands(tmp: Path) -> list[tuple[list[str], bytes | None]]:
    none = str(tmp / "none")
    fact = json.dumps({"type": "message", "id": "walk-1", "from": "a", "to": ["b"],
                       "kind": "message", "body": "walk", "at": 1}).encode() + b"\n"
    roots = ["--claude-dir", str(tmp / "claude"), "--codex-dir", none, "--opencode-dir", none,
             "--runs-dir", none]
    (tmp / "claude" / "projects" / "-w").mkdir(parents=True, exist_ok=True)
    (tmp / "claude" / "projects" / "-w" / "s.jsonl").write_bytes(b'{"type":"user"}\n')
    return [
        (["record"], fact),
        (["verify"], None),
        (["audit"], None),
        (["backup"], None),
        (["capture", *roots], None),
        (["restore", "--to", str(tmp / "rv")], None),
        (["restore", "--to", str(tmp / "rv2"), "--skip-damaged"], None),
        (["search", "quokka"], None),
        (["search", "quokka", "--json"], None),
        (["show", "message:m1"], None),
        (["conversation", "t1"], None),
        (["history", "-p", "/p/alpha"], None),
        (["history", "quokka"], None),
        (["export", "-p", "/p/alpha", "-o", str(tmp / "exp.json")], None),
        (["export", "--log", str(tmp / "log.jsonl")], None),
        (["import", "--log", str(tmp / "log.jsonl")], None),
        (["archive", "--json"], None),
        (["reindex"], None),
    ]


HOSTILE: list[tuple[list[str], bytes | None]] = [
    (["search", "quokka", "--since", HUGE], None),
    (["search", "quokka", "--until", "9" * 500], None),
    (["search", "quokka", "--limit", HUGE], None),
    (["search", "\x01\x7f"], None),
    (["search", "a" * 100_000], None),
    (["show", "message:a\x01b"], None),
    (["show", "x" * 100_000], None),
    (["conversation", "\x01"], None),
    (["conversation", "t1", "--after", HUGE, "--limit", "-5"], None),
    (["history", "-p", "/p/alpha", "--since", HUGE, "--page", HUGE], None),
    (["export", "-p", "/p/alpha", "-o", "/proc/nonexistent/x.json"], None),
    (["import", "/nonexistent/file.json"], None),
    (["import", "-"], b"\xff\xfe not json"),
    (["import", "-"], b"[" * 100_000),
    (["import", "--log", "/dev/null"], None),
    (["restore", "--to", "/proc/self/nope"], None),
    (["record"], b"[" * 10_000 + b"]" * 10_000 + b"\n"),
    (["record"], b'{"type":"message","id":"a\\u0000","from":"x"}\n'),
    (["record"], b"\xff\xfe\n"),
    (["archive", "--after-days", HUGE], None),
    (["archive", "--now", HUGE], None),
    (["verify", "--log", "/"], None),
]


def _walk(home: Path, cmds: list[tuple[list[str], bytes | None]]) -> list[str]:
    """Run every command; the ones that printed a traceback (or crashed)."""
    bad = []
    for args, stdin in cmds:
        res = run_cli(home, *args, input=stdin if stdin is not None else b"", timeout=300)
        err = res.stderr.decode(errors="replace")
        if "Traceback" in err or res.returncode < 0:
            bad.append(f"{args[:3]} rc={res.returncode}: {err[-600:]}")
    return bad


def _damage_record(home: Path) -> None:
    """Flip one byte inside every stored copy of a record's text (not LMDB's structure)."""
    path = home / "log" / "data.mdb"
    data = bytearray(path.read_bytes())
    needle = b"halfway through the zebra"
    at = data.find(needle)
    assert at > 0
    while at > 0:
        data[at + 3] ^= 0x20
        at = data.find(needle, at + 1)
    path.write_bytes(bytes(data))


def test_walk_with_a_damaged_log(base: Path, tmp_path: Path) -> None:
    home = _copy(base, tmp_path / "home")
    _damage_record(home)
    (home / "history.db").unlink()  # everything that reads must meet the damage
    assert _walk(home, _commands(tmp_path)) == []
    for args in (["verify"], ["restore", "--to", str(tmp_path / "r3")], ["reindex"],
                 ["audit"], ["export", "--log", str(tmp_path / "l2.jsonl")]):
        res = run_cli(home, *args)
        assert res.returncode == 1, (args, res.stderr)
        assert b"record " in res.stderr + res.stdout, (args, res.stderr)


def test_walk_with_a_damaged_history_db(base: Path, tmp_path: Path) -> None:
    for n, damage in enumerate((b"\x00" * 4096, b"garbage" * 100)):
        home = _copy(base, tmp_path / f"home{n}")
        db = home / "history.db"
        raw = bytearray(db.read_bytes())
        raw[: len(damage)] = damage if n else raw[:16] + damage[16:]
        if n == 0:
            raw[20] = (raw[20] + 7) % 256
        db.write_bytes(bytes(raw))
        assert _walk(home, _commands(tmp_path / f"w{n}")) == []


def test_walk_with_hostile_arguments(base: Path, tmp_path: Path) -> None:
    home = _copy(base, tmp_path / "home")
    bad = _walk(home, HOSTILE)
    assert bad == []
    for i in (0, 1, 2, 5, 6, 8, 9):  # bad input, named as such
        args, stdin = HOSTILE[i]
        res = run_cli(home, *args, input=stdin or b"")
        assert res.returncode in (1, 2), (args, res.returncode)


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "fs"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        why = (res.stderr.strip() or f"mount exited {res.returncode}")[:200]
        unavailable(f"cannot mount a 4 MiB tmpfs to simulate a full disk (needs root; CI runs "
                    f"as root): {why}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(mnt: Path) -> None:
    filler = mnt / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_walk_on_a_full_disk(base: Path, tmp_path: Path, tiny_fs: Path) -> None:
    home = _copy(base, tiny_fs / "home")
    _fill(tiny_fs)
    assert _walk(home, _commands(tmp_path)) == []


def test_record_counts_the_log_write_when_history_db_is_full(
    base: Path, tmp_path: Path, tiny_fs: Path
) -> None:
    """The log's disk has room, history.db's is full (history.db lives on the tmpfs)."""
    home = _copy(base, tmp_path / "home")
    live = (home / "history.db").resolve()  # the generation the link names, moved there
    shutil.move(live, tiny_fs / live.name)
    (home / "history.db").unlink()
    (home / "history.db").symlink_to(tiny_fs / live.name)
    _fill(tiny_fs)
    facts = "".join(json.dumps({"type": "message", "id": f"full{i}", "from": "a", "to": ["b"],
                                "kind": "message", "body": f"word{i} " * 300, "at": 1 + i}) + "\n"
                    for i in range(100)).encode()
    res = run_cli(home, "record", input=facts)
    err = res.stderr.decode()
    assert res.returncode == 0, err
    assert json.loads(res.stdout)["appended"] == 100
    assert "history.db could not be updated" in err and "needed" in err
    assert "Traceback" not in err
    search = run_cli(home, "search", "word1")
    assert search.returncode == 0 and b"Traceback" not in search.stderr
    (tiny_fs / "filler").unlink()  # space again: the next search catches up
    res = run_cli(home, "search", "word99", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["hits"]


# --- 10 randomly damaged copies ---------------------------------------------------------

_DIGEST = r"""
import hashlib, sys
from pathlib import Path
from eventlog import EventLog
h = hashlib.sha256()
with EventLog(Path(sys.argv[1]), readonly=True) as log:
    for r in log.iter_raw(1, 1000):
        h.update(r.seq.to_bytes(8, "big") + len(r.value).to_bytes(4, "big") + r.value)
print(h.hexdigest())
"""


def _log_digest(log_dir: Path) -> str | None:
    res = subprocess.run([sys.executable, "-c", _DIGEST, str(log_dir)], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    return res.stdout.strip() if res.returncode == 0 else None


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _documents(db: Path) -> list[tuple[object, ...]]:
    import sqlite3

    from projections import db as hdb

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    hdb.register_functions(con)  # the `documents` view decodes text with `doc_text`
    try:
        return con.execute("SELECT id, text FROM documents ORDER BY id").fetchall()
    finally:
        con.close()


def test_ten_randomly_damaged_copies_never_pass_with_wrong_output(
    base: Path, tmp_path: Path
) -> None:
    good_digest = _log_digest(base / "log")
    assert good_digest is not None
    good_restore = tmp_path / "good-restore"
    assert run_cli(base, "restore", "--to", str(good_restore)).returncode == 0
    good_tree = _tree(good_restore)
    good_docs = _documents(base / "history.db")
    size = (base / "log" / "data.mdb").stat().st_size
    from eventlog import EventLog

    with EventLog(base / "log", readonly=True) as lg:
        values = [r.value for r in lg.iter_raw(1, 1000)]
    detected = 0
    for seed in range(10):
        rng = random.Random(seed)
        home = _copy(base, tmp_path / f"d{seed}")
        (home / "history.db").unlink()
        path = home / "log" / "data.mdb"
        data = bytearray(path.read_bytes())
        bit = 1 << rng.randrange(8)
        if seed < 7:  # a random byte of a random record (every stored copy of it)
            value = rng.choice(values)
            rel = rng.randrange(len(value))
            at = data.find(value)
            assert at >= 0
            while at >= 0:
                data[at + rel] ^= bit
                at = data.find(value, at + 1)
            at = rel
        else:  # anywhere past the two meta pages: damage, not a lost log
            at = rng.randrange(8192, size)
            data[at] ^= bit
        path.write_bytes(bytes(data))
        intact = _log_digest(home / "log") == good_digest
        ver = run_cli(home, "verify")
        out = tmp_path / f"r{seed}"
        rest = run_cli(home, "restore", "--to", str(out))
        rein = run_cli(home, "reindex")
        for res in (ver, rest, rein):
            assert b"Traceback" not in res.stderr, res.stderr.decode()[-800:]
        if ver.returncode == 0:
            assert intact, f"seed {seed}: verify passed a damaged log (byte {at})"
        else:
            detected += 1
        if rest.returncode == 0:
            assert _tree(out) == good_tree, f"seed {seed}: restore wrote wrong bytes"
        if rein.returncode == 0:
            assert _documents(home / "history.db") == good_docs, f"seed {seed}: wrong rebuild"
    assert detected >= 7  # every flip inside a record is caught (the test can fail)
