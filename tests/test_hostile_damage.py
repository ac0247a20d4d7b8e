"""Hostile logs against the commands that read them: a record the decoder refuses although
its chain is valid, a damaged LMDB page. Each is named (the record, the way out), never an
internal error."""

from __future__ import annotations

import json
from pathlib import Path

import lmdb

from eventlog import EventLog, chain, codec
from eventlog.events import ChunkCaptured, SourceSeen
from tests.conftest import run_cli

PLACEHOLDER = b"XYZ"
SURROGATE = "\ud800".encode("utf-8", "surrogatepass")  # b"\xed\xa0\x80": not UTF-8


def _file(log: EventLog, source: str, data: bytes) -> None:
    path = source.split(":", 2)[2]
    seen = SourceSeen(source=source, agent="claude", root="/r", path=path,
                      layout="claude.session", at=1)
    chunk = ChunkCaptured(source=source, generation=0, offset=0, size=len(data), data=data)
    log.append([(b"seen" + source.encode(), seen), (b"chunk" + source.encode(), chunk)])


def _reforge_last(log_dir: Path, old: bytes, new: bytes) -> int:
    """Replace `old` by `new` (same length) in the last record's stored bytes and write its
    chain hash again: a record whose chain is valid but whose content is not."""
    env = lmdb.open(str(log_dir), max_dbs=8)
    try:
        events = env.open_db(b"events")
        with env.begin(write=True) as txn:
            cur = txn.cursor(db=events)
            assert cur.last()
            seq = chain.key_seq(cur.key())
            _, _, stored = codec.unpack_value(cur.value())
            prev = codec.unpack_value(txn.get(chain.seq_key(seq - 1), db=events))[1]
            forged = bytes(stored).replace(old, new)
            assert forged != bytes(stored) and len(forged) == len(stored)
            txn.put(cur.key(), codec.pack_value(chain.link(prev, seq, forged), forged),
                    db=events)
    finally:
        env.close()
    return seq


def _undecodable_home(tmp_path: Path) -> tuple[Path, int]:
    home = tmp_path / "home"
    with EventLog(home / "log") as lg:
        _file(lg, "claude:r1:projects/-p/a.jsonl", b'{"type":"user"}\n')
        seen = SourceSeen(source="claude:r1:projects/-p/XYZ.jsonl", agent="claude", root="/r",
                          path="projects/-p/XYZ.jsonl", layout="claude.session", at=2)
        lg.append([(b"seen-bad", seen)])
    return home, _reforge_last(home / "log", PLACEHOLDER, SURROGATE)


def test_verify_names_a_record_the_readers_refuse(tmp_path: Path) -> None:
    home, seq = _undecodable_home(tmp_path)
    out = run_cli(home, "verify", "--json")
    assert out.returncode == 1, out.stdout
    report = json.loads(out.stdout)
    assert report["ok"] is False and report["first_bad_seq"] == seq, report
    assert "decode" in report["reason"]


def test_import_log_refuses_an_undecodable_record(tmp_path: Path) -> None:
    home, seq = _undecodable_home(tmp_path)
    exported = tmp_path / "log.jsonl"
    assert run_cli(home, "export", "--log", str(exported)).returncode == 0
    target = tmp_path / "target"
    for extra in ((), ("--apply",)):
        imp = run_cli(target, "import", "--log", str(exported), *extra)
        err = imp.stderr.decode()
        assert imp.returncode == 2, err
        assert f"record {seq}" in err and "internal error" not in err, err
        assert "nothing imported" in err or "--apply" in extra, err
    assert not (target / "log" / "data.mdb").exists() or json.loads(
        run_cli(target, "audit", "--json").stdout)["events"] == 0


def _damage_branch_pages(log_dir: Path) -> None:
    """Give every live branch page of data.mdb a page type LMDB does not know: a read that
    descends a tree meets MDB_CORRUPTED ("Located page was wrong type")."""
    import struct

    path = log_dir / "data.mdb"
    data = bytearray(path.read_bytes())
    hit = 0
    for pgno in range(2, len(data) // 4096):
        at = pgno * 4096
        if struct.unpack_from("<Q", data, at)[0] == pgno and struct.unpack_from(
                "<H", data, at + 10)[0] == 0x01:  # P_BRANCH
            struct.pack_into("<H", data, at + 10, 0x40)
            hit += 1
    assert hit
    path.write_bytes(bytes(data))


def test_a_damaged_page_is_named_with_the_way_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with EventLog(home / "log") as lg:
        for i in range(40):  # enough records for the events tree to need a branch page
            _file(lg, f"claude:r1:projects/-p/s{i}.jsonl",
                  b'{"type":"user","message":{"role":"user","content":"%s"}}\n' % (b"w" * 540))
    _damage_branch_pages(home / "log")
    cases = [("restore", "--to", str(tmp_path / "rv")), ("reindex",),
             ("export", "--log", str(tmp_path / "x.jsonl")), ("audit",), ("backup",)]
    for args in cases:
        out = run_cli(home, *args)
        err = out.stderr.decode()
        assert out.returncode == 1, (args, err)
        assert "internal error" not in err and "Traceback" not in err, (args, err)
        assert "damaged" in err and "backup" in err and "verify" in err, (args, err)
    err = run_cli(home, "restore", "--to", str(tmp_path / "rv")).stderr.decode()
    assert "--skip-damaged" in err
    skip = run_cli(home, "restore", "--to", str(tmp_path / "rv2"), "--skip-damaged", "--json")
    assert skip.returncode == 1 and "internal error" not in skip.stderr.decode(), skip.stderr
