"""Hostile logs against restore: untrusted path fields, symlinks under --to, damage."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog import CorruptRecord, EventLog
from eventlog.events import ChunkCaptured, RowSnapshotted, SourceSeen
from readers.restore import restore
from tests.conftest import run_cli


@pytest.fixture
def log(tmp_path: Path) -> Iterator[EventLog]:
    lg = EventLog(tmp_path / "home" / "log")
    yield lg
    lg.close()


def _file(log: EventLog, source: str, agent: str, path: str, data: bytes,
          layout: str = "claude.session") -> None:
    seen = SourceSeen(source=source, agent=agent, root="/r", path=path, layout=layout, at=1)
    chunk = ChunkCaptured(source=source, generation=0, offset=0, size=len(data), data=data)
    log.append([(b"seen" + source.encode("utf-8", "surrogatepass"), seen),
                (b"chunk" + source.encode("utf-8", "surrogatepass"), chunk)])


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("agent,source,path", [
    ("/tmp/x", "/tmp/x:r1:victim.txt", "victim.txt"),  # an absolute agent
    ("../../..", "../../..:r1:victim.txt", "victim.txt"),  # climbing agent
    ("claude", "claude:..:victim.txt", "victim.txt"),  # climbing root id
    ("claude", "claude:r1:a/../../../victim.txt", "a/../../../victim.txt"),
    ("claude", "claude:r1:/abs/victim.txt", "/abs/victim.txt"),
    ("claude", "claude:r1:nul\x00victim.txt", "nul\x00victim.txt"),
    ("claude", "claude:r1:ctl\x1bvictim.txt", "ctl\x1bvictim.txt"),
    ("cla\nude", "cla\nude:r1:victim.txt", "victim.txt"),
])
def test_untrusted_components_never_leave_to(
    log: EventLog, tmp_path: Path, agent: str, source: str, path: str
) -> None:
    outside = tmp_path / "outside"
    dest = outside / "a" / "b" / "rv"
    victim = outside / "victim.txt"
    outside.mkdir()
    victim.write_bytes(b"precious")
    _file(log, "claude:r1:projects/-p/ok.jsonl", "claude", "projects/-p/ok.jsonl", b"good\n")
    _file(log, source, agent, path, b"EVIL\n")
    report = restore(log, dest)
    assert victim.read_bytes() == b"precious"
    assert source in report.skipped
    assert [r["source"] for r in report.refused] == [source]
    assert (dest / "claude" / "projects/-p/ok.jsonl").read_bytes() == b"good\n"
    for p in tmp_path.rglob("*"):
        if p.is_file() and p.read_bytes() == b"EVIL\n":
            pytest.fail(f"hostile bytes written to {p}")


def test_absolute_agent_cli_after_import(tmp_path: Path) -> None:
    """The reported attack end to end: `import --log --apply` of a log whose agent is an
    absolute path, then `restore --to` beside the victim."""
    src_home, home = tmp_path / "src", tmp_path / "home"
    victim_dir = tmp_path / "x"
    victim_dir.mkdir()
    (victim_dir / "victim.txt").write_bytes(b"precious")
    with EventLog(src_home / "log") as lg:
        _file(lg, f"{victim_dir}:r1:victim.txt", str(victim_dir), "victim.txt", b"EVIL\n")
    exported = tmp_path / "log.jsonl"
    assert run_cli(src_home, "export", "--log", str(exported)).returncode == 0
    imp = run_cli(home, "import", "--log", str(exported), "--apply")
    assert imp.returncode == 2, imp.stderr  # bad input: nothing imported
    assert b"agent" in imp.stderr and b"Traceback" not in imp.stderr
    assert not (home / "log" / "data.mdb").exists() or json.loads(
        run_cli(home, "audit", "--json").stdout)["events"] == 0
    # a log that got there anyway (a backup, a copy) is refused at restore time too
    os.makedirs(home / "log", exist_ok=True)
    with EventLog(home / "log") as lg2:
        _file(lg2, f"{victim_dir}:r1:victim.txt", str(victim_dir), "victim.txt", b"EVIL\n")
    out = run_cli(home, "restore", "--to", str(victim_dir / "rv"))
    assert (victim_dir / "victim.txt").read_bytes() == b"precious"
    assert b"skipped unsafe path" in out.stderr and b"Traceback" not in out.stderr


def test_symlink_under_to_is_not_followed(log: EventLog, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "s.jsonl"
    victim.write_bytes(b"precious")
    dest = tmp_path / "rv"
    (dest / "claude" / "projects").mkdir(parents=True)
    os.symlink(outside, dest / "claude" / "projects" / "-p")  # a folder link
    os.symlink(victim, dest / "claude" / "top.jsonl")  # a file link
    _file(log, "claude:r1:projects/-p/s.jsonl", "claude", "projects/-p/s.jsonl", b"EVIL\n")
    _file(log, "claude:r1:top.jsonl", "claude", "top.jsonl", b"EVIL\n")
    report = restore(log, dest)
    assert victim.read_bytes() == b"precious"
    assert sorted(report.skipped) == ["claude:r1:projects/-p/s.jsonl", "claude:r1:top.jsonl"]
    assert all("symbolic link" in r["reason"] for r in report.refused)


def test_hostile_table_name(log: EventLog, tmp_path: Path) -> None:
    source = "opencode:r1:opencode.db"
    seen = SourceSeen(source=source, agent="opencode", root="/r", path="opencode.db",
                      layout="opencode.db", at=1)
    row = RowSnapshotted(source=source, table="../../../../evil", row_id="1",
                         time_updated=1, data=b'{"id":"1"}')
    log.append([(b"s", seen), (b"r", row)])
    dest = tmp_path / "rv"
    report = restore(log, dest)
    assert not any(p.name.startswith("evil") for p in tmp_path.rglob("*"))
    assert report.skipped == [source] and "table" in report.refused[0]["reason"]


def _flip(log_dir: Path, needle: bytes) -> None:
    """Flip one byte inside every stored copy of `needle` in data.mdb (LMDB keeps stale
    copies on free pages)."""
    path = log_dir / "data.mdb"
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at > 0
    while at > 0:
        data[at + len(needle) // 2] ^= 0x01
        at = data.find(needle, at + 1)
    path.write_bytes(bytes(data))


def test_flipped_byte_stops_restore(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with EventLog(home / "log") as lg:
        for i in range(3):
            src = f"claude:r1:projects/-p/s{i}.jsonl"
            _file(lg, src, "claude", f"projects/-p/s{i}.jsonl", b"payload-%d-ABCDEFGH\n" % i)
    _flip(home / "log", b"payload-1-ABCDEFGH")
    dest = tmp_path / "rv"
    out = run_cli(home, "restore", "--to", str(dest))
    assert out.returncode == 1
    err = out.stderr.decode()
    assert "checksum mismatch" in err and "verify" in err and "backup" in err
    assert "Traceback" not in err
    assert not dest.exists() or not any(p.is_file() for p in dest.rglob("*"))
    with EventLog(home / "log", readonly=True) as lg, pytest.raises(CorruptRecord):
        restore(lg, tmp_path / "rv2")
    skip = run_cli(home, "restore", "--to", str(dest), "--skip-damaged", "--json")
    assert skip.returncode == 1, skip.stderr
    rep = json.loads(skip.stdout)
    assert rep["damaged"] and rep["incomplete"] == ["claude:r1:projects/-p/s1.jsonl"]
    got = {p.name: p.read_bytes() for p in dest.rglob("*.jsonl")}
    assert got == {"s0.jsonl": b"payload-0-ABCDEFGH\n", "s2.jsonl": b"payload-2-ABCDEFGH\n"}


def _chunk_at(log: EventLog, source: str, path: str, offset: int) -> None:
    seen = SourceSeen(source=source, agent="claude", root="/r", path=path,
                      layout="claude.session", at=1)
    chunk = ChunkCaptured(source=source, generation=0, offset=offset, size=5, data=b"EVIL\n")
    log.append([(b"seen" + source.encode(), seen), (b"chunk" + source.encode(), chunk)])


@pytest.mark.parametrize("offset", [2**62, -5])
def test_a_crafted_chunk_offset_is_refused_naming_the_record(
    tmp_path: Path, offset: int
) -> None:
    home = tmp_path / "home"
    with EventLog(home / "log") as lg:
        _file(lg, "claude:r1:projects/-p/ok.jsonl", "claude", "projects/-p/ok.jsonl", b"good\n")
        _chunk_at(lg, "claude:r1:projects/-p/bad.jsonl", "projects/-p/bad.jsonl", offset)
        bad_seq = lg.head().seq
    dest = tmp_path / "rv"
    out = run_cli(home, "restore", "--to", str(dest), "--json")
    assert out.returncode == 3, out.stderr  # something was refused: not a clean restore
    rep = json.loads(out.stdout)
    assert rep["skipped"] == ["claude:r1:projects/-p/bad.jsonl"]
    assert f"record {bad_seq}" in rep["refused"][0]["reason"], rep
    assert (dest / "claude" / "projects/-p/ok.jsonl").read_bytes() == b"good\n"
    assert not (dest / "claude" / "projects/-p/bad.jsonl").exists()
    text = run_cli(home, "restore", "--to", str(tmp_path / "rv2"))
    assert text.returncode == 3 and b"skipped unsafe" in text.stderr, text.stderr
    assert b"Traceback" not in text.stderr


def test_a_file_folder_name_clash_is_refused_naming_the_source(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with EventLog(home / "log") as lg:  # the folder first, then a file of the same name
        _file(lg, "claude:r1:projects/-p/x/s.jsonl", "claude", "projects/-p/x/s.jsonl",
              b"inner\n")
        _file(lg, "claude:r1:projects/-p/x", "claude", "projects/-p/x", b"clash\n")
    dest = tmp_path / "rv"
    out = run_cli(home, "restore", "--to", str(dest), "--json")
    assert out.returncode == 3, out.stderr
    rep = json.loads(out.stdout)
    assert rep["skipped"] == ["claude:r1:projects/-p/x"], rep
    assert (dest / "claude" / "projects/-p/x/s.jsonl").read_bytes() == b"inner\n"


def test_a_clean_restore_exits_0(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with EventLog(home / "log") as lg:
        _file(lg, "claude:r1:projects/-p/ok.jsonl", "claude", "projects/-p/ok.jsonl", b"good\n")
    assert run_cli(home, "restore", "--to", str(tmp_path / "rv")).returncode == 0
