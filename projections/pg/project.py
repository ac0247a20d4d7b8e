"""The `documents` projection in PostgreSQL, built by the same parsers as history.db.

How: each host's shipped records are replayed, in seq order, through the very appliers of
history.db (`projections.apply.apply_records`) into a private scratch SQLite file per host
(`<scratch>/<host>.db`, plain engine). Triggers on the scratch `documents` and `aliases`
tables note every row a batch inserts, changes or deletes; those rows are then written to
PostgreSQL (`documents` with a `simple`-configuration tsvector, `aliases`) together with the
host's checkpoint in ONE PostgreSQL transaction, and only then is the scratch batch
committed.

Promises:
- the per-host checkpoint (last seq, its chain hash, schema and parser versions, coverage)
  commits in the same transaction as the rows it covers;
- only through the schema owner's SECURITY DEFINER functions (`schema.WRITES`: documents,
  aliases, checkpoint, projector lock), each acting only for a host the session's role may
  act for; the connected role itself holds SELECT only on the derived tables;
- one projector per host at a time: the host's `projector_locks` row held FOR UPDATE; a
  second projector skips that host at once (`busy`). The row is locked again after every
  batch, in a new transaction: no transaction of a projector lives longer than a batch (one
  held for a whole host held back every table's vacuum horizon as long: `bm25_df` took
  114.8 MB for 57.1 MB at 143,000 documents, `bench/postgres.py`). Each machine normally
  projects only its own host, so its scratch file stays the one at that host's
  checkpoint: projectors of different machines never force each other into replays;
- rebuild = replay: when the scratch file's checkpoint is not exactly the server's (another
  machine projected last, a crash fell between the two commits, the parser changed), the
  host's rows are deleted and its records replayed from seq 1 — never patched;
- bounded: at most `BATCH` records and about `BATCH_BYTES` of values per transaction.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from projections import db
from projections.pg import bm25, rank, schema
from projections.pg.conn import (
    TeamError,
    connect,
    writing,
)
from projections.rows import COLUMNS, Row
from projections.text import fold

BATCH = 500
BATCH_BYTES = 16 << 20

DOC_COLS = COLUMNS  # the columns of `documents` (`rows.Row`'s fields), in its order
_TOKEN = re.compile(r"[^\W_]+")

_DIRTY = """
CREATE TABLE IF NOT EXISTS pg_dirty(tbl TEXT NOT NULL, key TEXT NOT NULL,
  PRIMARY KEY (tbl, key)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS pgd_doc_i AFTER INSERT ON document_rows BEGIN
  INSERT OR IGNORE INTO pg_dirty VALUES ('d', new.id); END;
CREATE TRIGGER IF NOT EXISTS pgd_doc_u AFTER UPDATE ON document_rows BEGIN
  INSERT OR IGNORE INTO pg_dirty VALUES ('d', old.id);
  INSERT OR IGNORE INTO pg_dirty VALUES ('d', new.id); END;
CREATE TRIGGER IF NOT EXISTS pgd_doc_d AFTER DELETE ON document_rows BEGIN
  INSERT OR IGNORE INTO pg_dirty VALUES ('d', old.id); END;
CREATE TRIGGER IF NOT EXISTS pgd_al_i AFTER INSERT ON aliases BEGIN
  INSERT OR IGNORE INTO pg_dirty VALUES ('a', new.alias || char(31) || new.session); END;
CREATE TRIGGER IF NOT EXISTS pgd_al_u AFTER UPDATE ON aliases BEGIN
  INSERT OR IGNORE INTO pg_dirty VALUES ('a', old.alias || char(31) || old.session);
  INSERT OR IGNORE INTO pg_dirty VALUES ('a', new.alias || char(31) || new.session); END;
CREATE TRIGGER IF NOT EXISTS pgd_al_d AFTER DELETE ON aliases BEGIN
  INSERT OR IGNORE INTO pg_dirty VALUES ('a', old.alias || char(31) || old.session); END;
"""


@dataclass
class ProjectResult:
    busy: bool = False  # some host was skipped: another projector holds it
    busy_hosts: list[str] = field(default_factory=list)
    hosts: dict[str, int] = field(default_factory=dict)  # host -> checkpoint seq
    events: int = 0
    documents: int = 0  # rows written or deleted
    replayed: list[str] = field(default_factory=list)
    rank_lists: int = 0  # champion lists made after the pass (`rank.make_lists`)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"busy": self.busy, "busyHosts": self.busy_hosts, "hosts": self.hosts,
                "events": self.events, "documents": self.documents, "replayed": self.replayed,
                "rankLists": self.rank_lists,
                "seconds": round(self.seconds, 3)}


def words(text: str) -> str:
    """The text the tsvector is built from: folded literal word tokens (the query side folds
    its tokens the same way), so 'simple' sees exactly the words unicode61 would; and, for
    text holding CJK, the overlapping bigrams of each CJK run (`projections.cjk`, as the
    local side index), so a CJK query of two or more characters finds its candidates
    through the tsvector's index (a trigram needs three)."""
    from projections import cjk

    folded = fold(text)
    out = " ".join(_TOKEN.findall(folded))
    if cjk.has_cjk(folded):
        out = f"{out} {cjk.grams_text(folded)}"
    return out


def _clean(value: Any) -> Any:
    # PostgreSQL text cannot hold NUL; transcripts sometimes do
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def project(
    url: str,
    scratch_dir: Path,
    *,
    hosts: list[str] | None = None,
    batch: int = BATCH,
    batch_bytes: int = BATCH_BYTES,
    max_batches: int | None = None,
    rebuild: bool = False,
) -> ProjectResult:
    """Bring the server's projection up to every host's shipped head (or `max_batches`).
    A server error is one `TeamError` line (`ServerUnavailable` when it went away or
    stopped answering: the next run resumes from the projection's checkpoint)."""
    with writing(url, "while projecting") as con:
        return _project(con, url, scratch_dir, hosts, batch, batch_bytes, max_batches, rebuild)


def _project(con: Any, url: str, scratch_dir: Path, hosts: list[str] | None, batch: int,
             batch_bytes: int, max_batches: int | None, rebuild: bool) -> ProjectResult:
    started = time.monotonic()
    out = ProjectResult()
    try:
        if not schema.exists(con):
            con.rollback()
            return out
        if con.execute("SELECT to_regprocedure('agentlog.put_documents(text, jsonb)')"
                       ).fetchone()[0] is None:
            con.rollback()
            raise TeamError("the team database predates schema step 4 (the projection is "
                            "written through the owner's functions): its owner runs "
                            "`agentlog team init URL` once, then sync projects again")
        if schema.LATEST >= bm25.STEP and con.execute(  # (LATEST: a test's older agentlog)
                "SELECT to_regclass('agentlog.bm25_hosts')").fetchone()[0] is None:
            con.rollback()
            raise TeamError("the team database predates schema step 6 (bm25's statistics, "
                            "the team score): its owner runs `agentlog team init URL` once, "
                            "then sync projects again")
        names = [str(r[0]) for r in con.execute(
            "SELECT host FROM agentlog.hosts ORDER BY host").fetchall()]
        ranked = rank.ready(con, write=True)
        con.rollback()
        scratch_dir.mkdir(parents=True, exist_ok=True)
        for host in names:
            if hosts is not None and host not in hosts:
                continue
            with _host_lock(con, url, host) as lock:
                if lock.held:
                    _HostProjector(con, host, scratch_dir / f"{host}.db", out, ranked).run(
                        batch, batch_bytes, max_batches, rebuild, lock.again)
                if not lock.held:  # busy at once, or taken between two batches
                    out.busy = True
                    out.busy_hosts.append(host)
        if ranked and out.documents:
            out.rank_lists = rank.make_lists(con)
    finally:
        out.seconds = time.monotonic() - started
    return out


@dataclass
class _Lock:
    """A host's projector lock (`_host_lock`): its row locked FOR UPDATE NOWAIT by a second
    connection, in a transaction that `again` ends and begins anew."""

    holder: Any
    host: str
    held: bool = False

    def again(self) -> bool:
        """End the lock's transaction and take the row again (between two batches): the
        row lock gave the transaction an id, and while it runs no row that any transaction
        after it deleted or updated can be vacuumed, in any table. False (and `held`
        False) when another projector of the host took it meanwhile."""
        self.holder.rollback()
        got = self.holder.execute("SELECT agentlog.projector_lock(%s, true)",
                                  (self.host,)).fetchone()
        self.held = bool(got and got[0])
        return self.held


@contextlib.contextmanager
def _host_lock(con: Any, url: str, host: str) -> Iterator[_Lock]:
    """One projector per host: the host's `projector_locks` row, locked FOR UPDATE NOWAIT by
    a second connection while the host is projected, taken again between batches
    (`_Lock.again`; a role that may not update the row — a reader, another host's writer —
    cannot take it; a projector that dies releases it with its connection). Taken through
    `agentlog.projector_lock` (the owner's function: the caller's own hosts only)."""
    con.rollback()
    holder = connect(url)
    try:
        holder.execute("SET idle_in_transaction_session_timeout = 0")  # held while projecting
        holder.execute("SELECT agentlog.projector_lock(%s, false)", (host,))
        holder.commit()
        lock = _Lock(holder, host)
        lock.again()
        yield lock
    finally:
        with contextlib.suppress(Exception):
            holder.rollback()
        holder.close()


def drop_host_rows(c: Any, host: str, ranked: bool | None = None) -> None:
    """The host's projected rows gone and its checkpoint at 0, in the caller's transaction:
    the projector replays the host from seq 1 (a sync that replaced forgotten records
    calls it in the same transaction)."""
    if ranked is None:
        ranked = rank.ready(c, write=True)
    if ranked:
        rank.lock_shared(c)
    c.execute("SELECT agentlog.drop_host(%s, %s, %s)",
              (host, schema.SCHEMA_VERSION, db.parser_version()))


class _HostProjector:
    def __init__(self, con: Any, host: str, path: Path, out: ProjectResult,
                 ranked: bool) -> None:
        self.con, self.host, self.path, self.out = con, host, path, out
        self.ranked = ranked  # keep the champion lists (`rank`) in step

    def run(self, batch: int, batch_bytes: int, max_batches: int | None, rebuild: bool,
            again: Callable[[], bool]) -> None:
        """Project the host's records past its checkpoint, a batch a transaction; `again`
        after each batch renews the host's lock (False: another projector has it now)."""
        cp = self.con.execute(
            "SELECT last_seq, last_hash, schema_version, parser_version FROM agentlog.projection"
            " WHERE host = %s", (self.host,)).fetchone()
        self.con.rollback()
        scon = self._open_scratch()
        try:
            scp = db.read_checkpoint(scon)
            same = (cp is not None and scp is not None and db.is_current(scp)
                    and cp[2] == schema.SCHEMA_VERSION and cp[3] == db.parser_version()
                    and (int(cp[0]), str(cp[1])) == (scp.last_seq, scp.last_hash))
            if rebuild or not same:
                scon.close()
                scon = self._reset()
            from projections.apply import appliers

            table = appliers()
            done = 0
            while max_batches is None or done < max_batches:
                if not self._batch(scon, table, batch, batch_bytes):
                    break
                done += 1
                if not again():
                    break
            cp2 = db.read_checkpoint(scon)
            self.out.hosts[self.host] = cp2.last_seq if cp2 else 0
        finally:
            scon.close()

    def _open_scratch(self) -> sqlite3.Connection:
        fresh = not self.path.exists()
        scon = db.connect(self.path)
        scon.execute("PRAGMA synchronous = OFF")  # derived and re-checked against the server
        if fresh:
            db.create_schema(scon, engine="plain")
            scon.executescript(_DIRTY)
            scon.commit()
        return scon

    def _reset(self) -> sqlite3.Connection:
        """Replay from seq 1: a new scratch file, and the host's rows gone from the server."""
        for suffix in ("", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()
        scon = self._open_scratch()
        c = self.con
        drop_host_rows(c, self.host, self.ranked)
        c.commit()
        self.out.replayed.append(self.host)
        return scon

    def _batch(self, scon: sqlite3.Connection, table: Any, batch: int, batch_bytes: int) -> bool:
        from eventlog.records import RawRecord
        from projections.apply import apply_records
        from projections.query import _coverage

        scp = db.read_checkpoint(scon)
        assert scp is not None
        rows = self.con.execute(
            "SELECT seq, value FROM (SELECT seq, value, sum(length(value)) OVER (ORDER BY seq)"
            " - length(value) AS before FROM agentlog.records WHERE host = %s AND seq > %s"
            " ORDER BY seq LIMIT %s) t WHERE before < %s ORDER BY seq",
            (self.host, scp.last_seq, batch, batch_bytes)).fetchall()
        if not rows:
            self.con.rollback()
            return False
        raws = [RawRecord(int(s), bytes(v)) for s, v in rows]
        n = len(raws)
        del rows
        scon.execute("BEGIN IMMEDIATE")
        try:
            last_seq, last_hash = apply_records(scon, raws, table)
            db.write_checkpoint(scon, last_seq, last_hash)
            written = self._push(scon, scp.last_seq, last_seq, last_hash, _coverage(scon))
            scon.execute("DELETE FROM pg_dirty")
            scon.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                self.con.rollback()
            if scon.in_transaction:
                scon.execute("ROLLBACK")
            raise
        self.out.events += n
        self.out.documents += written
        return True

    def _push(self, scon: sqlite3.Connection, prev_seq: int, last_seq: int, last_hash: str,
              coverage: dict[str, Any]) -> int:
        """Write the batch's changed rows and the checkpoint in one server transaction."""
        from psycopg.types.json import Jsonb

        c = self.con
        row = c.execute("SELECT agentlog.checkpoint(%s)", (self.host,)).fetchone()
        if row is None or row[0] is None or int(row[0]) != prev_seq:
            raise TeamError(f"projection of {self.host} moved under this projector")
        ids = [r[0] for r in scon.execute("SELECT key FROM pg_dirty WHERE tbl = 'd'")]
        docs = _fetch(scon, ids)
        gone = sorted(set(ids) - {d[1].id for d in docs})
        if self.ranked and (gone or docs):
            rank.lock_shared(c)
        if gone:
            dropped = c.execute("SELECT agentlog.drop_documents(%s, %s)",
                                (self.host, gone)).fetchall()
            if self.ranked:
                rank.forget(c, [int(r[0]) for r in dropped])
        if docs:
            rids = _upsert_docs(c, self.host, docs)
            if self.ranked:
                rank.fold(c, rids)
        akeys = [r[0] for r in scon.execute("SELECT key FROM pg_dirty WHERE tbl = 'a'")]
        if akeys:
            _sync_aliases(c, scon, self.host, akeys)
        c.execute("SELECT agentlog.advance(%s, %s, %s, %s)",
                  (self.host, last_seq, last_hash, Jsonb(coverage)))
        c.commit()
        return len(docs) + len(gone)


def _fetch(scon: sqlite3.Connection, ids: list[str]) -> list[tuple[int, Row]]:
    """(rowid in the scratch history.db, row) of the documents `ids` that exist."""
    out: list[tuple[int, Row]] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        out += [(int(r[0]), Row._make(r[1:])) for r in scon.execute(
            f"SELECT rowid, {', '.join(DOC_COLS)} FROM documents WHERE id IN"
            f" ({','.join('?' * len(chunk))})", chunk)]
    return out


def _upsert_docs(c: Any, host: str, docs: list[tuple[int, Row]]) -> list[int]:
    """Insert or replace `docs` ((scratch rowid, row)) through `agentlog.put_documents` (the
    schema owner's function: a writer holds no write privilege on `documents`), each with
    what bm25 reads of it (`projections.pg.bm25`): its FTS5 token count `dl` and term
    counts `tf` (history.db's tokenizer, `projections.rank.tokens.term_counts`) and `lrow`,
    its rowid in the scratch history.db (history.db's tie order); their rids."""
    from psycopg.types.json import Jsonb

    from projections.rank.tokens import term_counts

    stats = term_counts((r, d.text or "") for r, d in docs)
    rows = [{**dict(zip(DOC_COLS, map(_clean, d), strict=True)),
             "words": words(_clean(d.text) or ""), "dl": stats[r][0], "tf": dict(stats[r][1]),
             "lrow": r} for r, d in docs]
    return [int(r[0]) for r in c.execute("SELECT agentlog.put_documents(%s, %s)",
                                         (host, Jsonb(rows))).fetchall()]


def _sync_aliases(c: Any, scon: sqlite3.Connection, host: str, keys: list[str]) -> None:
    for key in keys:
        alias, session = key.split("\x1f", 1)
        row = scon.execute("SELECT agent, at FROM aliases WHERE alias = ? AND session = ?",
                           (alias, session)).fetchone()
        # agent None: the alias is gone
        c.execute("SELECT agentlog.set_alias(%s, %s, %s, %s, %s)",
                  (host, _clean(alias), _clean(session), *(row or (None, None))))


def compare_documents(con: Any, host: str, scratch: Path) -> dict[str, Any]:
    """The server's documents of `host` against the projection this home's projector wrote
    (`team-projector/<host>.db`, made from the local log): one digest per document over
    every column, compared both ways; and what bm25 reads of each document (its FTS5 token
    count `dl`, history.db's rowid `lrow`, every term's count as the server scores it,
    `bm25_tf`) against the same counted from the local copy's text (a writer sends them:
    a forged count would move other hosts' documents in the ranking). `checked` is false
    (and says why) when there is no local copy or it is not at the server's projection
    checkpoint."""
    import hashlib

    from projections.rank.tokens import term_counts

    if not scratch.exists():
        return {"checked": False, "ok": True, "detail": "no local projection to compare with "
                "(the projector of another machine wrote it): run `agentlog sync` here"}
    row = con.execute("SELECT last_seq FROM agentlog.projection WHERE host = %s",
                      (host,)).fetchone()
    scon = db.connect(scratch, readonly=True)
    try:
        cp = db.read_checkpoint(scon)
        if row is None or cp is None or int(row[0]) != cp.last_seq:
            return {"checked": False, "ok": True, "detail": "the local projection is at seq "
                    f"{cp.last_seq if cp else 0}, the server's at {row[0] if row else 0}: "
                    "run `agentlog sync` to compare"}
        local: dict[str, str] = {}
        texts: list[tuple[int, str]] = []
        ids: dict[int, str] = {}
        for r in scon.execute(f"SELECT rowid, {', '.join(DOC_COLS)} FROM documents"):
            vals = [_clean(v) for v in r[1:]]
            joined = "\x1f".join(str(v) for v in vals if v is not None)
            local[str(vals[0])] = hashlib.md5(joined.encode(), usedforsecurity=False).hexdigest()
            ids[int(r[0])] = str(vals[0])
            texts.append((int(r[0]), str(r[1 + DOC_COLS.index("text")] or "")))
    finally:
        scon.close()
    want = {ids[r]: _stats_digest(dl, tf, r) for r, (dl, tf) in term_counts(texts).items()}
    cols = ", ".join(f"{c}::text" for c in DOC_COLS)
    server = {str(i): str(d) for i, d in con.execute(
        f"SELECT id, md5(concat_ws(chr(31), {cols})) FROM agentlog.documents WHERE host = %s",
        (host,))}
    counted = _server_stats(con, host)
    con.rollback()
    edited = sorted(i for i in server.keys() & local.keys() if server[i] != local[i])
    extra = sorted(server.keys() - local.keys())
    missing = sorted(local.keys() - server.keys())
    miscounted = sorted(i for i in counted.keys() & want.keys() if counted[i] != want[i])
    ok = not (edited or extra or missing or miscounted)
    detail = "" if ok else "; ".join(
        f"{label}: {len(found)} ({', '.join(found[:3])}{'…' if len(found) > 3 else ''})"
        for label, found in (("edited", edited), ("not in the log", extra),
                             ("missing", missing), ("bm25 counts differ", miscounted))
        if found)
    return {"checked": True, "ok": ok, "documents": len(server), "edited": len(edited),
            "extra": len(extra), "missing": len(missing), "miscounted": len(miscounted),
            "detail": detail}


def _stats_digest(dl: int, tf: Any, lrow: int) -> str:
    """One document's bm25 inputs as one string: dl, lrow, then term:f in code point order
    (the server's `COLLATE "C"` order of UTF-8 text is the same)."""
    import hashlib

    terms = ",".join(f"{t}:{f}" for t, f in sorted(tf.items()) if f > 0)
    return hashlib.md5(f"{dl}|{lrow}|{terms}".encode(), usedforsecurity=False).hexdigest()


def _server_stats(con: Any, host: str) -> dict[str, str]:
    """{id: digest} of what the server scores each of `host`'s documents by (the documents
    it projected at schema step 6 and after: `dl` is set)."""
    import hashlib

    if con.execute("SELECT to_regprocedure('agentlog.bm25_tf(tsvector, jsonb)')"
                   ).fetchone()[0] is None:
        return {}  # before step 6: the server scores by ts_rank, from its own tsvector
    out: dict[str, str] = {}
    for i, dl, lrow, terms in con.execute(
            "SELECT d.id, d.dl, d.lrow, (SELECT string_agg(b.term || ':' || b.f, ','"
            " ORDER BY b.term COLLATE \"C\") FROM agentlog.bm25_tf(d.tsv, d.tfx) b)"
            " FROM agentlog.documents d WHERE d.host = %s AND d.dl IS NOT NULL", (host,)):
        out[str(i)] = hashlib.md5(f"{dl}|{lrow}|{terms or ''}".encode(),
                                  usedforsecurity=False).hexdigest()
    return out
