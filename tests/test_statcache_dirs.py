"""The folder cache of the no-change walk (`readers.statcache`): a folder whose mtime is the
cached one is not listed again, and nothing is missed because of it: a file grown within
the same mtime tick, a new file or folder, a file listed in a folder changed too recently
to trust (a coarse-timestamp filesystem), a deleted or renamed file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from eventlog import EventLog
from readers import cursor as cur
from readers import statcache
from tests.capture_helpers import append, capture, roots_of, write

OLD_NS = time.time_ns() - 3600 * 10**9  # an hour ago: a folder quiet for long is trusted


def _age(*folders: Path) -> None:
    for folder in folders:
        os.utime(folder, ns=(OLD_NS, OLD_NS))


def _listed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders the next walks list (the others come from the cache)."""
    calls: list[str] = []
    real = statcache._list

    def spy(agent: str, path: str, rel_dir: str, known: object, mtime: int,
            skip: object = None) -> object:
        calls.append(rel_dir)
        return real(agent, path, rel_dir, known, mtime, skip)  # type: ignore[arg-type]

    monkeypatch.setattr(statcache, "_list", spy)
    return calls


def _same_without_cache(log: EventLog, roots: list, monkeypatch: pytest.MonkeyPatch,
                        listed: list[str] | None = None) -> tuple[int, int, list[str]] | None:
    """`changed_files` with and without the folder cache agree (returns the answer; the
    folders the cached walk listed are left in `listed`)."""
    def shape(found: statcache.Few | None) -> tuple[int, int, list[str]] | None:
        return None if found is None else (found.files, found.missing,
                                           sorted(rel for _, rel in found.changed))

    if listed is not None:
        listed.clear()
    cached = shape(statcache.changed_files(log, roots))
    seen = list(listed or [])
    with monkeypatch.context() as m:
        m.setattr(statcache, "_dir_cache", lambda log, scope: {})
        assert shape(statcache.changed_files(log, roots)) == cached
    if listed is not None:
        listed[:] = seen
    return cached


def test_cached_folders_are_not_listed_and_nothing_is_missed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "claude"
    p = root / "projects" / "-p"
    a = write(p / "a.jsonl", b'{"a":1}\n')
    write(p / "b.jsonl", b'{"b":1}\n')
    _age(p, root / "projects", root)
    log = EventLog(tmp_path / "log")
    roots = roots_of(claude=root)
    assert capture(log, roots).appended  # a full run: no stat cache yet
    append(a, b'{"a":2}\n')
    assert capture(log, roots).bytes == 8  # a few-files run: writes the folder cache
    raw = log.get_state(cur.dircache_key(f"claude:{roots[0].id}"))
    assert raw is not None
    version, folders = cur.decode_dircache(raw)
    assert version == statcache.DIRS_VERSION
    mtime, names, subdirs = folders["projects/-p"]
    assert (mtime, sorted(names), subdirs) == (OLD_NS, ["a.jsonl", "b.jsonl"], [])
    assert folders["projects"][2] == ["-p"] and folders[""][2] == ["projects"]
    listed = _listed(monkeypatch)
    assert _same_without_cache(log, roots, monkeypatch, listed) == (2, 0, [])
    assert listed == []  # every folder from the cache (a no-change walk lists nothing)

    # grown within the same mtime tick (its mtime put back): its size tells
    st = a.stat()
    append(a, b'{"a":3}\n')
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _same_without_cache(log, roots, monkeypatch) == (2, 0, ["projects/-p/a.jsonl"])
    assert capture(log, roots).bytes == 8

    # a new file: its folder's mtime moved, the folder is listed again
    write(p / "c.jsonl", b'{"c":1}\n')
    assert _same_without_cache(log, roots, monkeypatch, listed) == (3, 0,
                                                                    ["projects/-p/c.jsonl"])
    assert listed == ["projects/-p"]
    assert capture(log, roots).bytes == 8

    # a new folder (and a file in it): its parent is listed again, and the folder too
    write(root / "projects" / "-q" / "d.jsonl", b'{"d":1}\n')
    assert _same_without_cache(log, roots, monkeypatch) == (4, 0, ["projects/-q/d.jsonl"])
    assert capture(log, roots).bytes == 8


def test_a_folder_changed_too_recently_is_listed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a filesystem with coarse timestamps an entry created in the same tick leaves the
    folder's mtime as it was: a folder listed less than RACY_NS after its last change is
    never trusted, so the file is found."""
    root = tmp_path / "claude"
    p = root / "projects" / "-p"
    a = write(p / "a.jsonl", b'{"a":1}\n')
    _age(root / "projects", root)  # `p` stays recent
    log = EventLog(tmp_path / "log")
    roots = roots_of(claude=root)
    capture(log, roots)
    append(a, b'{"a":2}\n')
    capture(log, roots)  # writes the folder cache: `p` is too recent to be in it
    mtime = p.stat().st_mtime_ns
    write(p / "b.jsonl", b'{"b":1}\n')
    os.utime(p, ns=(mtime, mtime))  # the same tick: the folder's mtime did not move
    listed = _listed(monkeypatch)
    assert _same_without_cache(log, roots, monkeypatch, listed) == (2, 0,
                                                                    ["projects/-p/b.jsonl"])
    assert listed == ["projects/-p"]
    assert capture(log, roots).bytes == 8


def test_deleted_and_renamed_files_take_the_full_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "claude"
    p = root / "projects" / "-p"
    files = [write(p / f"f{i}.jsonl", b'{"x":1}\n') for i in range(3)]
    _age(p, root / "projects", root)
    log = EventLog(tmp_path / "log")
    roots = roots_of(claude=root)
    capture(log, roots)
    append(files[0], b'{"x":2}\n')
    capture(log, roots)  # the folder cache is written (every folder is old)
    files[1].unlink()
    assert _same_without_cache(log, roots, monkeypatch) is None  # vanished: the full run
    st = capture(log, roots)
    assert st.missing == 1
    files[2].rename(p / "f2-renamed.jsonl")  # rotated: a new source, the old one missing
    assert _same_without_cache(log, roots, monkeypatch) is None
    st = capture(log, roots)
    assert (st.missing, st.registered, st.bytes) == (2, 1, 8)
    assert _same_without_cache(log, roots, monkeypatch) == (2, 2, [])


def test_an_older_or_damaged_folder_cache_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    a = write(root / "projects" / "-p" / "a.jsonl", b'{"a":1}\n')
    log = EventLog(tmp_path / "log")
    roots = roots_of(claude=root)
    capture(log, roots)
    key = cur.dircache_key(f"claude:{roots[0].id}")
    for value in (b"\xff\x00junk", cur.encode_dircache(statcache.DIRS_VERSION + 1, {
            "projects/-p": (root.joinpath("projects/-p").stat().st_mtime_ns, [], [])})):
        log.append([], state={key: value})
        write(root / "projects" / "-p" / f"n{len(value)}.jsonl", b'{"n":1}\n')
        found = statcache.changed_files(log, roots)
        assert found is not None and len(found.changed) == 1
        assert capture(log, roots).bytes == 8
    assert a.exists()
