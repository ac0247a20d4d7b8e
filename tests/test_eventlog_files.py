"""`eventlog.files.write_atomic`: the target holds its old content or all of the new, never a
part; the temporary file is gone either way; the mode is the one asked for; the file and
its folder are fsynced (neither with `fsync=False`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog import files


def test_bytes_and_pieces_are_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "a.json"
    assert files.write_atomic(target, b"first") == 5
    assert target.read_bytes() == b"first"
    assert files.write_atomic(target, iter([b"se", b"cond", b""])) == 6
    assert target.read_bytes() == b"second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    files.write_atomic(target, b"x", mode=0o644)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.json"]


def test_a_failed_write_leaves_the_old_content_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out" / "a.json"
    target.parent.mkdir()
    target.write_bytes(b"old")

    def pieces() -> Iterator[bytes]:
        yield b"new, partly"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        files.write_atomic(target, pieces())
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["a.json"]


@pytest.mark.parametrize("fsync", [True, False])
def test_the_file_and_its_folder_are_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             fsync: bool) -> None:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    files.write_atomic(tmp_path / "a", b"data", fsync=fsync)
    assert synced == (["file", "dir"] if fsync else [])
    synced.clear()
    (tmp_path / "b").write_bytes(b"b")
    files.replace_durably(tmp_path / "b", tmp_path / "c")
    assert synced == ["dir"] and (tmp_path / "c").read_bytes() == b"b"


def test_a_file_opened_atomically_replaces_only_when_its_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "out" / "log.jsonl"
    with files.open_atomic(target, mode=0o640) as f:
        f.write(b"one\n")
        assert not target.exists()
    assert target.read_bytes() == b"one\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    with pytest.raises(ValueError, match="bad record"), files.open_atomic(target) as f:
        f.write(b"half")
        raise ValueError("bad record")
    assert target.read_bytes() == b"one\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["log.jsonl"]
