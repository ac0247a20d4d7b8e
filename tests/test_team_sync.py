"""Team sync to a real PostgreSQL: byte-exact, idempotent, resumable, verified server-side."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from eventlog import CorruptRecord, EventLog
from eventlog.events import MessageSent
from projections.pg.conn import ServerUnavailable, redact
from projections.pg.sync import Diverged, ship_batch, sync
from projections.pg.verify import check_hosts, compare_local
from tests.test_projections_support import append, mixed_events

pytestmark = pytest.mark.postgres


def messages(n: int, prefix: str = "m") -> list[MessageSent]:
    return [MessageSent(id=f"{prefix}{i}", sender="peer-a", to=["peer-b"], kind="message",
                        body=f"message {i} about the {prefix} zebra", at=1_000 + i)
            for i in range(n)]


def make_log(path: Path, n: int = 40, prefix: str = "m") -> EventLog:
    log = EventLog(path)
    append(log, messages(n, prefix), prefix=prefix)
    return log


def server_rows(url: str, host: str) -> list[tuple[int, bytes]]:
    with psycopg.connect(url) as con:
        return [(int(s), bytes(v)) for s, v in con.execute(
            "SELECT seq, value FROM agentlog.records WHERE host = %s ORDER BY seq", (host,))]


def test_sync_copies_every_record_byte_for_byte_and_is_idempotent(
        tmp_path: Path, pg_url: str) -> None:
    log = EventLog(tmp_path / "log")
    append(log, mixed_events())
    first = sync(log, pg_url, "laptop-1", batch=7)
    assert first.shipped == log.head().seq and first.batches >= 3
    assert first.server_head == first.local_head == log.head().seq
    local = [(r.seq, r.value) for r in log.read_raw(1, 10_000)]
    assert server_rows(pg_url, "laptop-1") == local
    again = sync(log, pg_url, "laptop-1")
    assert again.shipped == 0 and again.behind == 0
    append(log, messages(3, "late"), prefix="late")
    assert sync(log, pg_url, "laptop-1").shipped == 3
    with psycopg.connect(pg_url) as con:
        (check,) = check_hosts(con)
    assert check.ok and check.records == log.head().seq
    assert compare_local(check, log)["state"] == "in sync"


def test_server_stopping_mid_sync_resumes_without_doubling(
        tmp_path: Path, pg_server: Any) -> None:
    url = pg_server.createdb("stopmid")
    log = make_log(tmp_path / "log", 60)
    stopped: list[int] = []

    def stop_after_two(head: int, total: int) -> None:
        if not stopped and head >= 20:
            stopped.append(head)
            pg_server.stop("immediate")

    try:
        with pytest.raises(ServerUnavailable) as err:
            sync(log, url, "h1", batch=10, on_batch=stop_after_two)
        assert "admin-secret-pw" not in str(err.value)
    finally:
        pg_server.start()
    assert [s for s, _ in server_rows(url, "h1")] == list(range(1, stopped[0] + 1))
    done = sync(log, url, "h1", batch=10)
    head = log.head().seq  # 60 messages and the writer.started record
    assert done.shipped == head - stopped[0]
    assert [s for s, _ in server_rows(url, "h1")] == list(range(1, head + 1))
    with psycopg.connect(url) as con:
        assert all(c.ok for c in check_hosts(con))


def test_duplicate_batch_adds_nothing_and_a_different_one_is_refused(
        tmp_path: Path, pg_url: str) -> None:
    log = make_log(tmp_path / "log", 10)
    sync(log, pg_url, "h1")
    batch = log.read_raw(3, 5)
    with psycopg.connect(pg_url) as con:
        assert ship_batch(con, "h1", batch) == 0
        other = make_log(tmp_path / "other", 10, prefix="x")
        with pytest.raises(Diverged):
            ship_batch(con, "h1", other.read_raw(3, 5))
    assert len(server_rows(pg_url, "h1")) == log.head().seq
    # a replaced home log (same host id) is refused as a whole, never mixed in
    with pytest.raises(Diverged):
        sync(other, pg_url, "h1")


def test_two_machines_and_two_processes_of_one_home_at_once(
        tmp_path: Path, pg_url: str) -> None:
    logs = {f"host-{i}": make_log(tmp_path / f"log{i}", 80, prefix=f"p{i}") for i in range(2)}
    errors: list[BaseException] = []

    def run(host: str, log: EventLog) -> None:
        try:
            sync(log, pg_url, host, batch=5)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(h, lg)) for h, lg in logs.items()]
    threads.append(threading.Thread(target=run, args=("host-0", logs["host-0"])))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for host, log in logs.items():
        assert server_rows(pg_url, host) == [(r.seq, r.value) for r in log.read_raw(1, 1000)]
    with psycopg.connect(pg_url) as con:
        checks = check_hosts(con)
    assert [c.ok for c in checks] == [True, True]


def test_verify_finds_a_tampered_record_on_the_server(tmp_path: Path, pg_url: str) -> None:
    log = make_log(tmp_path / "log", 12)
    sync(log, pg_url, "h1")
    with psycopg.connect(pg_url) as con:
        con.execute("UPDATE agentlog.records SET value = overlay(value PLACING '\\x58'::bytea"
                    " FROM 60 FOR 1) WHERE host = 'h1' AND seq = 7")
        con.commit()
        (check,) = check_hosts(con)
    assert not check.ok and check.first_bad_seq == 7 and check.reason == "checksum mismatch"


def test_unreachable_server_is_a_quick_redacted_error(tmp_path: Path) -> None:
    log = make_log(tmp_path / "log", 2)
    with pytest.raises(ServerUnavailable) as err:
        sync(log, "postgresql://w:s3cret-pw@127.0.0.1:1/db", "h1")
    assert "s3cret-pw" not in str(err.value) and "***" in str(err.value)
    assert redact("host=x password='a b' user=y") == "host=x password=*** user=y"


def test_a_locally_damaged_record_is_named_and_never_shipped(
        tmp_path: Path, pg_url: str) -> None:
    """Local damage is `CorruptRecord` (the record's seq), not a server that diverged; the
    batches before it are shipped, nothing from the damaged batch on."""
    path = tmp_path / "log"
    make_log(path, 40).close()
    needle = b"message 25 about the m zebra"
    data = bytearray((path / "data.mdb").read_bytes())
    at = data.find(needle)
    assert at > 0
    while at > 0:  # every stored copy of the record (LMDB's structure untouched)
        data[at + 3] ^= 0x20
        at = data.find(needle, at + 1)
    (path / "data.mdb").write_bytes(bytes(data))
    log = EventLog(path, readonly=True)
    bad = next(r.seq for r in log.read_raw(1, 100) if b"mesSage 25" in r.value)
    with pytest.raises(CorruptRecord) as err:
        sync(log, pg_url, "h1", batch=10)
    assert err.value.seq == bad
    shipped = [s for s, _ in server_rows(pg_url, "h1")]
    assert shipped == list(range(1, (bad - 1) // 10 * 10 + 1))
    assert all(s < bad for s in shipped)
