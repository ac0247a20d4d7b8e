"""The one read API of history.db: search, documents, conversations, decisions, run logs.

Every front end (CLI, MCP, HTTP) calls these functions and only formats their results.
Promises:
- parameters are validated here; bad input raises `QueryError` naming the parameter,
  a malformed id raises `BadId`, never an SQLite error;
- results are plain JSON-able dicts whose field names are a documented contract
  (docs/search.md): fields are only ever added;
- reads use a per-thread read-only connection that is reopened when `rebuild` swapped the
  file, so a long-running server always answers from a complete file;
- a missing history.db answers like an empty one (with coverage saying 0 events);
- any failure to open or read history.db other than a busy lock (a damaged header, a
  corrupt page, an unreadable file, a broken full-text table) is `ProjectionDamaged`:
  history.db is derived, and rebuilding it from the log is the cure (`damage_named`);
- a search given a `Cancel` (projections/cancel.py) stops when another thread cancels it
  and raises `Interrupted` (its statements interrupted: `sqlite3.Connection.interrupt()`
  on this thread's connection and on the connections of its ranking threads);
- coverage carries `stale: true` while a drift between history.db and the log is known
  (`verify` found it; a rebuild clears it).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from projections import db, inflight, stale
from projections.cancel import Cancel, interrupted
from projections.errors import (
    BadId,
    Interrupted,
    NotFound,
    ProjectionDamaged,
    ProjectionError,
    QueryError,
)
from projections.filters import (
    CONTEXT_BEFORE,
    conversation_page,
    hit_ref,
    parse_filters,
    parse_limit,
    parse_ref,
    ref_holds,
    stale_ref,
)
from projections.rows import RUN_CHUNK_ORD
from projections.search import distinct, fts_search, latest_search, plain_search
from projections.text import SNIPPET_CHARS, query_prefixes, query_tokens, snippet

ENGINES = ("fts5", "plain")
MODES = ("words", "meaning", "hybrid")
GROUPS = ("conversation",)
MAX_ITEM_CHARS = 16_000
MAX_RUN_LOG_BYTES = 64 * 1024
_ID = re.compile(r"^[a-z][a-z_]*:[^\x00-\x1f\x7f]+$")
_local = threading.local()


def _open(db_path: Path) -> sqlite3.Connection | None:
    """This thread's read connection to `db_path`, reopened after a swap; None if absent."""
    cache: dict[str, tuple[tuple[int, int], sqlite3.Connection]]
    cache = getattr(_local, "cons", None) or {}
    _local.cons = cache
    key = str(db_path)
    try:
        st = os.stat(db_path)
    except FileNotFoundError:
        return None
    ident = (st.st_ino, st.st_dev)
    hit = cache.get(key)
    if hit is not None:
        if hit[0] == ident:
            db.until_readable(hit[1])  # a commit in progress: start right after it
            return hit[1]
        hit[1].close()
        del cache[key]
    con = db.connect(db_path, readonly=True)
    cache[key] = (ident, con)
    return con


P = ParamSpec("P")
R = TypeVar("R")


def damage_named(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn(db_path, …)` with every SQLite failure but a busy lock as `ProjectionDamaged`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ProjectionError:
            raise
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
                raise
            if interrupted(exc):  # the caller's Cancel stopped it: superseded, not damage
                raise Interrupted("superseded") from None
            close_connections()
            where = args[0] if args else kwargs.get("db_path", "history.db")
            raise ProjectionDamaged(f"{where} is damaged ({msg[:120]})") from None

    return wrapper


def close_connections() -> None:
    """Close this thread's cached connections (tests, shutdown)."""
    cache = getattr(_local, "cons", None) or {}
    for _, con in cache.values():
        con.close()
    cache.clear()


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def q(value: object) -> str:
    """URL-encode one path or query component: `urllib.parse.quote(str(value), safe="")`
    (a test holds them equal), without importing urllib on the search path."""
    data = str(value).encode("utf-8")
    if all(b in _UNRESERVED for b in data):
        return data.decode("ascii")
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in data)


def _link(kind: str, row: Mapping[str, Any]) -> str:
    doc_id = str(row["id"])
    prefix = doc_id.split(":", 1)[0]
    if kind == "transcript" and row.get("session"):
        link = f"/?session={q(row['session'])}&agent={q(row['agent'])}"
        link += f"&from={q(row.get('cursor') or '')}"
        if row.get("subagent"):
            link += f"&child={q(row['subagent'])}"
        return link
    if kind == "run" and row.get("run"):
        base = str(row["run"])
        base = base[:-4] if base.endswith(".log") else base
        return f"/api/runs/{q(base)}?from={q(row.get('cursor') or '0')}"
    if kind == "decision":
        topic = row.get("title") or doc_id.split(":", 1)[1].rsplit("#", 1)[0]
        return f"/api/decisions/{q(topic)}/history"
    if prefix in ("message", "question", "answer") or kind in (
        "message", "approval", "progress", "report"
    ):
        return f"/?message={q(row.get('message') or doc_id.split(':', 1)[1])}"
    return f"/api/history/{q(doc_id)}"


def source_link(doc_id: str) -> str:
    return "/api/history/" + q(doc_id)


_ROW_KEYS = ("rowid", "id", "kind", "agent", "at", "message", "job", "run", "session", "cursor",
             "conversation", "project", "role", "subagent", "title", "text", "archived")


def _hit(row: tuple[Any, ...], tokens: list[str], width: int = SNIPPET_CHARS,
         role: bool = False, ref: bool = False) -> dict[str, Any]:
    r = dict(zip(_ROW_KEYS, row, strict=True))
    hit = {
        "id": r["id"], "kind": r["kind"], "agent": r["agent"], "at": r["at"],
        "snippet": snippet(r["text"] or "", tokens, width), "link": _link(r["kind"], r),
        "sourceLink": source_link(r["id"]), "message": r["message"], "job": r["job"],
        "run": r["run"], "session": r["session"], "cursor": r["cursor"],
        "conversation": r["conversation"], "project": r["project"],
        "archived": bool(r["archived"]),
    }
    if ref:
        hit["ref"] = hit_ref(r["rowid"], r["id"])
    if role:
        hit["role"] = r["role"]
    return hit


@damage_named
@inflight.marked
def search(
    db_path: Path,
    query: str,
    filters: Mapping[str, Any] | None = None,
    limit: int | str | None = None,
    *,
    engine: str | None = None,
    snippet_chars: int = SNIPPET_CHARS,
    role: bool = False,
    prefix: bool = False,
    group: str | None = None,
    mode: str = "words",
    related: bool = False,
    meaning_dir: Path | None = None,
    meaning_model: Mapping[str, Any] | None = None,
    cancel: Cancel | None = None,
    latest: bool = False,
    ref: bool = False,
) -> dict[str, Any]:
    """Search the history: {"engine", "mode", "hits", "coverage"} (see docs/search.md), plus
    `suggestions` when there is no hit; snippets of at most `snippet_chars` characters
    (40..320); with `role`, each hit's `role` too (the compact answer of MCP's
    `search_history`). `prefix`: a token written `zebra*` matches the words starting with
    it (the terminal's; elsewhere `*` is punctuation). `group="conversation"`: at most one
    hit, the best, per conversation. `mode`: "words" (every query word, the seed's
    contract), "meaning" (exact matches when there are at most `limit`, then the nearest by
    the embedding projection in `meaning_dir`, default `meaning/` beside history.db) or
    "hybrid" (both, fused by reciprocal rank); `meaning_model`: the model spec
    (projections.meaning.model; None: the default). `related`: in "words" mode, when fewer than
    `limit` hits, add `related` (meaning hits not among them). In every mode but plain
    words, `coverage.meaning` says how much is embedded. With `cancel`, another thread may
    stop it (`Cancel.cancel()`): it raises `Interrupted` then. With `latest` (fts5 engine,
    words), NOT the ranking: the latest captured matches first, from the newest ones only
    (`projections.search.latest_search`, a bounded query of a few milliseconds; `agentlog
    browse`'s first page while every match is ranked); the answer carries `"unranked":
    true` then. With `ref`, each hit's short reference (`projections.filters.hit_ref`,
    valid for this history.db only: MCP's compact answer names hits by it)."""
    if mode not in MODES:
        raise QueryError("mode", f"must be one of {', '.join(MODES)}; got {mode!r}")
    tokens = query_tokens(query)
    if group is not None and group not in GROUPS:
        raise QueryError("group", f"must be one of {', '.join(GROUPS)}; got {group!r}")
    prefixes = query_prefixes(query) if prefix else set()
    if isinstance(snippet_chars, bool) or not isinstance(snippet_chars, int) or not (
            40 <= snippet_chars <= SNIPPET_CHARS):
        raise QueryError("snippet_chars", f"must be an integer 40..{SNIPPET_CHARS}")
    flt = parse_filters(filters)
    n = parse_limit(limit)
    if engine is not None and engine not in ENGINES:
        raise QueryError("engine", f"must be one of {', '.join(ENGINES)}; got {engine!r}")
    con = _open(Path(db_path))
    if con is None:
        return {"engine": engine or ("fts5" if db.fts5_available() else "plain"), "hits": [],
                "coverage": empty_coverage(), "suggestions": {}}
    use = "plain" if engine == "plain" or not db.has_fts(con) else "fts5"
    rows: list[tuple[Any, ...]] = []
    grouped = group is not None
    latest = bool(latest) and use == "fts5"

    def words(k: int) -> list[tuple[Any, ...]]:
        if use == "fts5" and latest:
            return latest_search(con, tokens, flt, k)
        if use == "fts5":
            return fts_search(con, tokens, flt, k, prefixes=prefixes, group=grouped)
        return plain_search(con, tokens, flt, k, group=grouped)

    folder = Path(meaning_dir) if meaning_dir else Path(db_path).parent / "meaning"

    def by_meaning() -> list[tuple[Any, ...]]:
        return _by_meaning(con, folder, meaning_model, query, flt, n, grouped)

    def found() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]] | None]:
        if mode == "words":
            got = words(n)
            if not related or len(got) >= n:
                return got, None
            known = {r[0] for r in got}
            return got, [r for r in by_meaning() if r[0] not in known][: n - len(got)]
        if mode == "meaning":
            # exact matches first when there are few (a needle is never lost), then by meaning
            exact = words(n + 1)
            return distinct((exact if len(exact) <= n else []) + by_meaning(), n,
                            grouped), None
        return distinct(fuse(words(n), by_meaning(), n * 2), n, grouped), None

    more: list[tuple[Any, ...]] | None = None
    if tokens:
        with cancel.watching(con) if cancel is not None else contextlib.nullcontext():
            rows, more = found()
    cov = _coverage(con)
    cov["stale"] = stale.stale_note(Path(db_path)) is not None
    result: dict[str, Any] = {"engine": use, "mode": mode,
                              "hits": [_hit(r, tokens, snippet_chars, role, ref) for r in rows],
                              "coverage": cov}
    if mode != "words" or related:
        cov["meaning"] = _meaning_coverage(con, folder)
    if more is not None:
        result["related"] = [{**_hit(r, tokens, snippet_chars, role, ref), "related": True}
                             for r in more]
    if not rows:
        result["suggestions"] = _suggestions(con, use, [t for t in tokens if t not in prefixes])
    if latest:
        result["unranked"] = True
    return result


def _suggestions(con: sqlite3.Connection, engine: str, words: list[str]) -> dict[str, Any]:
    """{query word: nearest indexed words} of the words no document holds (fts5 only: the
    plain engine has no vocabulary)."""
    if engine != "fts5" or not words:  # (no word: no hit, nothing to suggest)
        return {}
    from projections.suggest import suggest  # (rapidfuzz: only when nothing was found)

    return dict(suggest(con, words))


RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al. 2009)


def fuse(first: list[tuple[Any, ...]], second: list[tuple[Any, ...]], n: int
         ) -> list[tuple[Any, ...]]:
    """The best `n` rows of two ranked lists by reciprocal rank fusion (row[0] is the rowid;
    ties keep the first list's order)."""
    score: dict[int, float] = {}
    row_of: dict[int, tuple[Any, ...]] = {}
    for ranked in (first, second):
        for rank, row in enumerate(ranked):
            score[row[0]] = score.get(row[0], 0.0) + 1.0 / (RRF_K + rank + 1)
            row_of.setdefault(row[0], row)
    order = sorted(row_of, key=lambda rid: -score[rid])
    return [row_of[rid] for rid in order[:n]]


def _by_meaning(con: sqlite3.Connection, folder: Path, spec: Mapping[str, Any] | None,
                query: str, flt: Any, n: int, grouped: bool) -> list[tuple[Any, ...]]:
    """The `n` best rows by meaning (the projection in `folder`, the model of `spec`) that
    pass the filters (duplicates dropped; `grouped`: one a conversation)."""
    from projections import meaning
    from projections.search import take

    near = meaning.nearest(folder, query, max(n * 10, 100), spec=spec)
    if not near:
        return []
    ids = {rowid: ident for rowid, ident, _ in near}
    where, params = flt.where("d")
    rows = take(con, len(near), where, params)([[rowid for rowid, _, _ in near]], False)
    # a chunk whose rowid now holds another document (history.db rebuilt since) is not it
    return distinct([r for r in rows if ids.get(r[0]) == r[1]], n, grouped)


def _meaning_coverage(con: sqlite3.Connection, folder: Path) -> dict[str, Any]:
    from projections import meaning

    store = meaning.Store.reader(folder)
    try:
        return meaning.describe(store, con)
    finally:
        if store is not None:
            store.close()


def empty_coverage() -> dict[str, Any]:
    return {"events": 0, "lastCaptureAt": None, "sources": 0, "sourcesPending": 0,
            "recordsParsed": 0, "bytesCaptured": 0, "oversizedLines": 0,
            "unknownRecordTypes": {}, "parser": db.parser_version(), "stale": False}


def _coverage(con: sqlite3.Connection) -> dict[str, Any]:
    cp = db.read_checkpoint(con)
    row = con.execute(
        "SELECT count(*), coalesce(sum(partial != x'' OR unparsed > 0), 0), max(last_capture_at),"
        " coalesce(sum(records), 0), coalesce(sum(bytes_captured), 0),"
        " coalesce(sum(oversized), 0) FROM sources"
    ).fetchone()
    unknown = con.execute(
        "SELECT type, sum(count) AS n FROM unknown_types GROUP BY type ORDER BY n DESC, type"
        " LIMIT 50"
    ).fetchall()
    return {
        "events": cp.last_seq if cp else 0, "lastCaptureAt": row[2], "sources": row[0],
        "sourcesPending": row[1], "recordsParsed": row[3], "bytesCaptured": row[4],
        "oversizedLines": row[5], "unknownRecordTypes": {str(t): int(c) for t, c in unknown},
        "parser": cp.parser_version if cp else db.parser_version(),
    }


@damage_named
def coverage(db_path: Path, *, per_source: bool = False) -> dict[str, Any]:
    """Coverage figures; with `per_source`, one row per captured source as well."""
    con = _open(Path(db_path))
    if con is None:
        out = empty_coverage()
        if per_source:
            out["perSource"] = []
        return out
    out = _coverage(con)
    out["stale"] = stale.stale_note(Path(db_path)) is not None
    if per_source:
        rows = con.execute(
            "SELECT source, agent, layout, generation, files, bytes_captured, chunks, snapshots,"
            " rows, lines, records, unknown, oversized, gaps, unparsed, last_capture_at,"
            " length(partial) FROM sources ORDER BY source"
        ).fetchall()
        keys = ("source", "agent", "layout", "generation", "files", "bytesCaptured", "chunks",
                "snapshots", "rows", "lines", "records", "unknown", "oversized", "gaps",
                "unparsed", "lastCaptureAt", "pendingBytes")
        types: dict[str, dict[str, int]] = {}
        for src, kind, n in con.execute(
            "SELECT source, type, count FROM unknown_types ORDER BY source, count DESC, type"
        ):
            types.setdefault(str(src), {})[str(kind)] = int(n)
        out["perSource"] = [
            {**dict(zip(keys, r, strict=True)), "unknownTypes": types.get(str(r[0]), {})}
            for r in rows
        ]
    return out


def check_id(hit_id: Any, param: str = "id") -> str:
    if not isinstance(hit_id, str) or len(hit_id) > 4096 or not _ID.match(hit_id):
        raise BadId(str(hit_id), "malformed id (expected <kind>:<source id>)", param=param)
    return hit_id


_DOC_COLS = ("id", "kind", "agent", "at", "text", "message", "job", "run", "session", "cursor",
             "subagent", "title")


@damage_named
def get_document(db_path: Path, hit_id: str) -> dict[str, Any] | None:
    """The indexed, bounded source document of a hit: {id,kind,agent,at,body,link,...}."""
    check_id(hit_id)
    con = _open(Path(db_path))
    if con is None:
        return None
    row = con.execute(f"SELECT {', '.join(_DOC_COLS)} FROM documents WHERE id = ?",
                      (hit_id,)).fetchone()
    if row is None:
        return None
    r = dict(zip(_DOC_COLS, row, strict=True))
    return {
        "id": r["id"], "kind": r["kind"], "agent": r["agent"], "at": r["at"], "body": r["text"],
        "link": _link(r["kind"], r), "message": r["message"], "job": r["job"], "run": r["run"],
        "session": r["session"], "cursor": r["cursor"],
    }


_ITEM_COLS = ("id", "kind", "agent", "at", "role", "tool", "subagent", "subagent_name", "title",
              "text", "cursor", "message", "session", "job", "run", "project", "ord")


@damage_named
def get_conversation(
    db_path: Path, conversation_id: str, after: str | None = None, limit: int | str | None = 20
) -> dict[str, Any]:
    """One page of a conversation, oldest first: {"id", "items", "next"}."""
    n, start = conversation_page(conversation_id, after, limit)
    con = _open(Path(db_path))
    if con is None:
        raise NotFound("conversation", conversation_id)
    ref = parse_ref(conversation_id)
    if ref is not None:  # a hit's reference: its conversation, from just before the hit
        conv, start = _at_ref(con, conversation_id, *ref, start)
    else:
        conv = _resolve_conversation(con, conversation_id)
    if conv is None:
        raise NotFound("conversation", conversation_id)
    # Oldest first (records of several sources of one session interleave by time); the
    # cursor is the (at, ord, rowid) of the last item, unique and stable across rebuilds.
    sql = f"SELECT {', '.join(_ITEM_COLS)}, rowid FROM documents WHERE conversation = ?"
    params: list[Any] = [conv]
    if start is not None:
        sql += " AND (at, ord, rowid) > (?, ?, ?)"
        params += list(start)
    rows = con.execute(sql + " ORDER BY at, ord, rowid LIMIT ?", [*params, n + 1]).fetchall()
    return conversation_items(conv, (*_ITEM_COLS, "rowid"), rows, n)


def conversation_items(
    conv: str, names: tuple[str, ...], rows: list[Any], n: int
) -> dict[str, Any]:
    """A conversation page from up to n + 1 rows whose columns are `names`, the last two
    being `ord` and the row's id: {"id", "items", "next"}, "next" the cursor
    "at:ord:id" of the last item when a row beyond the page exists (SQLite and PostgreSQL)."""
    items = []
    for row in rows[:n]:
        r = dict(zip(names[:-2], row[:-2], strict=True))
        text = r.pop("text") or ""
        r["text"] = text[:MAX_ITEM_CHARS]
        r["truncated"] = len(text) > MAX_ITEM_CHARS
        r["link"] = _link(r["kind"], r)
        r["sourceLink"] = source_link(r["id"])
        items.append(r)
    nxt = None
    if len(rows) > n and items:
        last = rows[n - 1]
        nxt = f"{items[-1]['at']}:{last[-2] if last[-2] is not None else 0}:{last[-1]}"
    return {"id": conv, "items": items, "next": nxt}


def _at_ref(con: sqlite3.Connection, ident: str, rowid: int, check: str,
            after: tuple[int, int, int] | None) -> tuple[str | None, tuple[int, int, int] | None]:
    """(conversation, cursor) of a hit's reference: the page starts `CONTEXT_BEFORE` items
    before the hit (an `after` cursor, the next pages, wins)."""
    row = con.execute("SELECT id, conversation, at, ord FROM documents WHERE rowid = ?",
                      (rowid,)).fetchone()
    if row is None or not ref_holds(check, row[0]):
        raise stale_ref(ident)
    if row[1] is None:
        return None, None
    if after is not None:
        return str(row[1]), after
    before = con.execute(
        "SELECT at, ord, rowid FROM documents WHERE conversation = ?"
        " AND (at, ord, rowid) < (?, ?, ?) ORDER BY at DESC, ord DESC, rowid DESC LIMIT 1 OFFSET ?",
        (row[1], row[2], row[3] if row[3] is not None else 0, rowid, CONTEXT_BEFORE)).fetchone()
    return str(row[1]), (tuple(before) if before is not None else None)


def _resolve_conversation(con: sqlite3.Connection, ident: str) -> str | None:
    if con.execute("SELECT 1 FROM documents WHERE conversation = ? LIMIT 1", (ident,)).fetchone():
        return ident
    row = con.execute(
        "SELECT conversation FROM documents WHERE session = ? AND conversation IS NOT NULL"
        " ORDER BY subagent IS NOT NULL, at, ord LIMIT 1", (ident,)
    ).fetchone()
    if row is not None:
        return str(row[0])
    row = con.execute("SELECT conversation FROM documents WHERE id = ?", (ident,)).fetchone()
    return str(row[0]) if row and row[0] else None


@damage_named
def decision_history(db_path: Path, topic: str) -> dict[str, Any] | None:
    """Every revision of a decision, oldest first; None when the topic is unknown."""
    if not isinstance(topic, str) or not topic.strip():
        raise QueryError("topic", "must be a non-empty string")
    con = _open(Path(db_path))
    if con is None:
        return None
    rows = con.execute(
        "SELECT id, ord, sender, at, text, extra, agent FROM documents"
        " WHERE conversation = ? AND kind = 'decision' ORDER BY ord, seq", (f"decision:{topic}",)
    ).fetchall()
    if not rows:
        return None
    revs = [{"id": r[0], "revision": r[1], "author": r[2], "at": r[3], "body": r[4],
             "agent": r[6], "extra": json.loads(r[5]) if r[5] else {}} for r in rows]
    return {"topic": topic, "link": _link("decision", {"id": rows[0][0], "title": topic}),
            "revisions": revs}


@damage_named
def run_log(db_path: Path, run_basename: str, from_offset: int | str = 0) -> dict[str, Any] | None:
    """Captured run log text from byte `from_offset` (at most 64 KiB); None if unknown run."""
    if not isinstance(run_basename, str) or not run_basename.strip() or "/" in run_basename:
        raise QueryError("run", "must be a run log basename")
    if isinstance(from_offset, str):
        if not (from_offset.strip().isdigit() and from_offset.strip().isascii()):
            raise QueryError("from", f"must be a byte offset >= 0; got {from_offset!r}")
        from_offset = int(from_offset.strip())
    if isinstance(from_offset, bool) or not isinstance(from_offset, int) or from_offset < 0:
        raise QueryError("from", f"must be a byte offset >= 0; got {from_offset!r}")
    base = run_basename if run_basename.endswith(".log") else run_basename + ".log"
    con = _open(Path(db_path))
    if con is None:
        return None
    # the broker's run.started, else the run's metadata file, else its newest log chunk (whose
    # time and agent are the run's start and agent): the same values the run's hits show
    meta = con.execute(
        "SELECT job, session, agent, at FROM documents WHERE conversation = ? AND kind = 'run'"
        " ORDER BY id = ? DESC, role = 'metadata' DESC, ord DESC LIMIT 1",
        (f"run:{base}", f"run:{base}")).fetchone()
    gen_row = con.execute(
        "SELECT max(ord >> 40) FROM documents WHERE conversation = ? AND role = 'log'",
        (f"run:{base}",)).fetchone()
    if meta is None and (gen_row is None or gen_row[0] is None):
        return None
    gen = int(gen_row[0]) if gen_row and gen_row[0] is not None else 0
    lo = (gen << 40) + RUN_CHUNK_ORD
    rows = con.execute(
        "SELECT ord, text FROM documents WHERE conversation = ? AND role = 'log' AND ord >= ?"
        " AND ord + length(CAST(text AS BLOB)) > ? ORDER BY ord",
        (f"run:{base}", lo, lo + from_offset)).fetchall()
    parts: list[bytes] = []
    size = 0
    pos = from_offset
    nxt: int | None = None
    for ordv, text in rows:
        off = int(ordv) - lo
        data = str(text).encode("utf-8")
        if off > pos:
            pos = off  # a gap in what was captured
        piece = data[pos - off :]
        room = MAX_RUN_LOG_BYTES - size
        if len(piece) > room:
            parts.append(piece[:room])
            nxt = pos + room
            break
        parts.append(piece)
        size += len(piece)
        pos = off + len(data)
    return {
        "run": base, "job": meta[0] if meta else None, "session": meta[1] if meta else None,
        "agent": meta[2] if meta else None, "at": meta[3] if meta else None,
        "generation": gen, "from": from_offset,
        "text": b"".join(parts).decode("utf-8", "replace"), "next": nxt,
    }
