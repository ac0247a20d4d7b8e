"""The read API over the team server: the same contract as `projections.query`, plus `host`.

`search`, `get_document`, `get_conversation` and `coverage` take a server URL instead of a
history.db path and return the documented shapes (docs/search.md) with one added field,
`host`, on every hit, document and conversation item; `filters` may also hold `host`.
The query rules hold: at most 32 literal tokens, all required, nothing is query syntax
(tokens become `plainto_tsquery('simple', …)` of folded words, CJK runs and the non-word
parts of mixed tokens are ILIKE substrings served by the trigram index, with LIKE's
metacharacters escaped). Ranking: FTS5's bm25 × role weight from stored statistics
(`projections.pg.bm25`, schema step 6: history.db's scores and tie order) over EVERY match,
best first; words that all have champion lists are answered from the lists when their
members that beat the bound at today's statistics fill the page (one word: its bound,
`projections.pg.rank`; several: the sum of the bounds, `bm25.walk`; exactly the full
ranking's head), else every match is ranked. Until every host was projected at
schema 3, `ts_rank` × role weight (`rank.SCORE`) over every match, ties newest first.
Reads use a per-thread autocommit connection per URL, reopened once when the server
dropped it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any

from projections.errors import NotFound, QueryError
from projections.filters import (
    CONTEXT_BEFORE,
    Filters,
    conditions,
    conversation_page,
    hit_ref,
    parse_filters,
    parse_limit,
    parse_ref,
    ref_holds,
    stale_ref,
)
from projections.pg import bm25, rank
from projections.pg.schema import CJK_PREDICATE
from projections.query import _link, check_id, conversation_items, empty_coverage, source_link
from projections.text import fold, query_tokens, snippet

ENGINE = "postgres"
LISTED_TTL = 30.0
_local = threading.local()
_HIT_COLS = ("rid", "id", "kind", "agent", "at", "message", "job", "run", "session", "cursor",
             "conversation", "project", "role", "subagent", "title", "text", "host", "archived")


def _con(url: str) -> Any:
    from projections.pg.conn import QUERY_TIMEOUTS, connect

    cache: dict[str, Any] = getattr(_local, "cons", None) or {}
    _local.cons = cache
    con = cache.get(url)
    if con is None or con.closed:
        con = cache[url] = connect(url, autocommit=True, timeouts=QUERY_TIMEOUTS)
    return con


def _run(url: str, fn: Any, *args: Any) -> Any:
    """Run `fn(con, *args)`; reconnect once when the connection was lost (not when the
    server stopped answering: that is said at once)."""
    from projections.pg.conn import (
        QUERY_TIMEOUTS,
        Deadline,
        ServerUnavailable,
        TeamError,
        driver,
        expired,
        explain,
        redact,
    )

    psycopg = driver()

    for attempt in (0, 1):
        con = _con(url)
        try:
            with Deadline(con):  # the whole call: a pipeline waits at its end, not per statement
                return fn(con, *args)
        except psycopg.OperationalError as exc:
            con.close()
            if expired(con):
                raise ServerUnavailable(
                    f"the team server did not answer within {QUERY_TIMEOUTS[1]} s (frozen or "
                    "unreachable): try again, or search locally without --postgres") from None
            if attempt:
                raise ServerUnavailable(redact(f"team server: {explain(exc)}")) from None
        except psycopg.Error as exc:
            raise TeamError(redact(f"team server: {explain(exc)}")) from None
    raise AssertionError("unreachable")


def close_connections() -> None:
    for con in (getattr(_local, "cons", None) or {}).values():
        con.close()
    _local.cons = {}
    _local.listed = {}


def _split_host(filters: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    if filters is None:
        return None, None
    if not isinstance(filters, Mapping):
        raise QueryError("filters", "must be an object")
    rest = dict(filters)
    host = rest.pop("host", None)
    if host is not None and (not isinstance(host, str) or not host.strip() or len(host) > 128):
        raise QueryError("host", "must be a host id")
    return rest, host


# history.db's session condition (`filters.SESSION_SQLITE`) on the server: the peer's bound
# sessions of the same host, and the broker messages addressed to it (`to` of message.sent,
# kept in `extra`; the server has no `recipients` table)
_SESSION = ("({a}.session = %s OR {a}.sender = %s OR {a}.session IN (SELECT a.session FROM"
            " agentlog.aliases a WHERE a.alias = %s AND a.host = {a}.host)"
            " OR ({a}.id LIKE 'message:%%' AND {a}.extra IS NOT NULL"
            " AND jsonb_typeof({a}.extra::jsonb -> 'to') = 'array'"
            " AND ({a}.extra::jsonb -> 'to') ? %s))")


def _where(f: Filters, host: str | None) -> tuple[list[str], list[Any]]:
    """The search filters' conditions (`filters.conditions`, shared with history.db), and
    the host's."""
    conds, params = conditions(f, "d", "%s", _SESSION)
    if host is not None:
        conds.append("d.host = %s")
        params.append(host)
    return conds, params


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _plan(tokens: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(words for the tsquery, substrings for ILIKE, the CJK bigrams every match holds)."""
    from projections import cjk

    words: list[str] = []
    subs: list[str] = []
    grams: list[str] = []
    for tok in tokens:
        if not cjk.has_cjk(tok):
            words.append(fold(tok))
            continue
        runs, rest = cjk.split_token(tok)
        subs += runs + rest
        grams += [g for r in runs if len(r) >= 2 for g in cjk.bigrams(fold(r))]
    return words, subs, grams


def _all_have_grams(con: Any) -> bool:
    """Whether every host's documents carry the CJK bigrams (projected at schema 2 or
    later): until then a bigram condition would miss the others' CJK documents."""
    row = con.execute("SELECT coalesce(min(schema_version), 2) FROM agentlog.projection"
                      ).fetchone()
    return row is not None and int(row[0]) >= 2


def search(url: str, query: str, filters: Mapping[str, Any] | None = None,
           limit: int | str | None = None, *, ref: bool = False) -> dict[str, Any]:
    """{"engine": "postgres", "hits", "coverage"}; hits carry `host` (and with `ref` their
    short reference, `projections.filters.hit_ref` of their rid)."""
    tokens = query_tokens(query)
    rest, host = _split_host(filters)
    flt = parse_filters(rest)
    n = parse_limit(limit)
    found = dict(_run(url, _search, tokens, flt, host, n))
    if not ref:
        for hit in found["hits"]:
            hit.pop("ref", None)
    return found


def _search(con: Any, tokens: list[str], flt: Filters, host: str | None,
            n: int) -> dict[str, Any]:
    hits: list[dict[str, Any]] = []
    _local.path = None
    if tokens:
        words, subs, grams = _plan(tokens)
        conds, params = _where(flt, host)
        if grams and _all_have_grams(con):  # candidates through the tsvector's GIN index;
            conds.append("d.tsv @@ plainto_tsquery('simple', %s)")  # ILIKE keeps it exact
            params.append(" ".join(grams))
        elif subs:  # the trigram index covers exactly the documents holding CJK (without
            conds.append(f"d.{CJK_PREDICATE}")  # the bigrams, the planner took it and
            # scanned every CJK document for a two-character word)
        for s in subs:
            conds.append("d.text ILIKE %s")
            params.append(_like(s))
        where = " AND ".join(conds) or "true"
        cov: list[Any] = []
        if _scored(con) and words:  # bm25 from the stored statistics (projections.pg.bm25)
            terms = _terms(tokens)
            if not subs and terms == words and set(terms) <= _listed(con):
                # the head of the ranking from the champion lists: one word's first
                # members above its bound; several words' members above the sum of their
                # bounds (a cross word's whole deep list when every word is one,
                # projections.pg.deep; else the first CHAMPIONS of each)
                inner, args = (
                    bm25.listed(terms[0], where, rank.CHAMPIONS) if len(terms) == 1
                    else bm25.walk(terms, " ".join(words), where,
                                   None if set(terms) <= _cross(con) else rank.CHAMPIONS))
                hits = _ranked(con, inner, [*args, *params], n, tokens, cov,
                               prepare=None if len(terms) == 1 else False)
                _local.path = "lists"
                if len(hits) >= n:
                    return {"engine": ENGINE, "hits": hits, "coverage": _coverage_of(cov[0])}
            inner, args = bm25.every(terms, " ".join(words), where)
            hits = _ranked(con, inner, [*args, *params], n, tokens, cov)
            _local.path = "all"
            return {"engine": ENGINE, "hits": hits, "coverage": _coverage_of(cov[0])}
        if words:  # a server not yet at bm25 (a host projected before schema 3)
            inner = (f"SELECT d.rid, {rank.SCORE} AS s, d.at"
                     " FROM agentlog.documents d, plainto_tsquery('simple', %s) q"
                     f" WHERE d.tsv @@ q AND {where}")
            params = [" ".join(words), *params]
        else:  # CJK or literal parts only: by weight, newest first
            inner = (f"SELECT d.rid, {rank.WEIGHT} AS s, d.at"
                     " FROM agentlog.documents d"
                     f" WHERE {where}")
        hits = _ranked(con, inner, params, n, tokens, cov)
        _local.path = "all"
        return {"engine": ENGINE, "hits": hits, "coverage": _coverage_of(cov[0])}
    return {"engine": ENGINE, "hits": hits, "coverage": _coverage(con)}


def _listed(con: Any) -> frozenset[str]:
    """The words with a champion list, as this connection last read them (at most
    `LISTED_TTL` seconds ago). A stale set costs speed, never exactness: a new list is
    used a little later; a word no longer listed finds no champions and ranks all."""
    return _known(con)[1]


def _cross(con: Any) -> frozenset[str]:
    """The cross words (projections.pg.deep), read with the listed ones."""
    return _known(con)[3]


def _scored(con: Any) -> bool:
    """Whether bm25 ranks (`projections.pg.bm25`): schema step 6 is in and every host was
    projected at schema 3 (its documents carry `dl`, `tfx`, `lrow`); until then `ts_rank`
    ranks every match (as read at most `LISTED_TTL` seconds ago)."""
    return _known(con)[2]


# (read at, the listed words, whether bm25 ranks, the cross words)
Known = tuple[float, frozenset[str], bool, frozenset[str]]


def _known(con: Any) -> Known:
    import time

    known: dict[int, Known] = getattr(_local, "listed", None) or {}
    _local.listed = known
    now = time.monotonic()
    got = known.get(id(con))
    if got is None or now - got[0] > LISTED_TTL:
        terms: frozenset[str] = frozenset()
        cross: frozenset[str] = frozenset()
        row = con.execute(
            "SELECT to_regclass('agentlog.bm25_hosts') IS NOT NULL AND coalesce((SELECT"
            " min(schema_version) FROM agentlog.projection), 3) >= 3").fetchone()
        scored = bool(row and row[0])
        if scored and rank.ready(con):  # the lists are bm25's from step 6 on
            terms = frozenset(str(r[0]) for r in con.execute(
                "SELECT term FROM agentlog.rank_terms"))
            cross = frozenset(str(r[0]) for r in con.execute(
                "SELECT term FROM agentlog.rank_cross"))
        got = known[id(con)] = (now, terms, scored, cross)
    return got


def _terms(tokens: list[str]) -> list[str]:
    """The FTS5 term of each word token of the query (CJK tokens are conditions, not
    ranked: as history.db's main index), in query order: the phrases bm25 sums over."""
    from projections import cjk
    from projections.rank.tokens import index_term

    return [index_term(t) or fold(t) for t in tokens if not cjk.has_cjk(t)]


def last_path() -> str | None:
    """How this thread's last search ranked: "lists" (champion lists), "all" (every match,
    also after the lists fell short), None (no tokens). For tests and benches."""
    return getattr(_local, "path", None)


def _ranked(con: Any, inner: str, params: list[Any], n: int, tokens: list[str],
            cov: list[Any], prepare: bool | None = None) -> list[dict[str, Any]]:
    """Up to `n` de-duplicated hits of `inner` (rid, s, at), best first. One statement
    ranks and fetches a page; the coverage query rides in the same pipeline the first
    time (its rows are put in `cov`), so a search is one round trip unless
    de-duplication needs another page. `prepare` is psycopg's (None: prepared once run 5
    times, which saves the planning, ~1.5 ms a search; False for the multi-word walk, whose
    best plan depends on the words: the server's generic plan for it scanned every match,
    23 -> 200 ms, bench/pg_search.py)."""
    sql = (f"SELECT {', '.join('d.' + c for c in _HIT_COLS)} FROM agentlog.documents d"
           f" JOIN (SELECT rid, s, at FROM ({inner}) c ORDER BY s DESC, at DESC, rid DESC"
           " LIMIT %s OFFSET %s) t ON t.rid = d.rid ORDER BY t.s DESC, t.at DESC, t.rid DESC")
    hits: list[dict[str, Any]] = []
    seen: set[tuple[str, str, bytes]] = set()
    page = max(n * 4, 40)
    offset = 0
    while len(hits) < n:
        if not cov:
            with con.pipeline():
                cur = con.execute(sql, [*params, page, offset], prepare=prepare)
                cov_cur = con.cursor().execute(_COVERAGE)
            rows = cur.fetchall()
            cov.append(cov_cur.fetchall())
        else:
            rows = con.execute(sql, [*params, page, offset], prepare=prepare).fetchall()
        hits += _dedup(rows, n - len(hits), seen, tokens)
        if len(rows) < page:
            break
        offset += page
    return hits


def _dedup(rows: list[tuple[Any, ...]], limit: int, seen: set[tuple[str, str, bytes]],
           tokens: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in rows:
        r = dict(zip(_HIT_COLS, row, strict=True))
        key = (str(r["kind"]), str(r["role"]),
               hashlib.sha1(str(r["text"]).encode("utf-8", "replace"),
                            usedforsecurity=False).digest())
        if key in seen:
            continue
        seen.add(key)
        out.append({
            "id": r["id"], "kind": r["kind"], "agent": r["agent"], "at": r["at"],
            "snippet": snippet(r["text"] or "", tokens), "link": _link(r["kind"], r),
            "sourceLink": source_link(r["id"]), "message": r["message"], "job": r["job"],
            "run": r["run"], "session": r["session"], "cursor": r["cursor"],
            "conversation": r["conversation"], "project": r["project"], "host": r["host"],
            "archived": bool(r["archived"]), "ref": hit_ref(r["rid"], r["id"]),
        })
        if len(out) >= limit:
            break
    return out


_COVERAGE = ("SELECT h.host, h.head_seq, p.last_seq, p.coverage FROM agentlog.hosts h"
             " LEFT JOIN agentlog.projection p ON p.host = h.host ORDER BY h.host")


def _coverage(con: Any) -> dict[str, Any]:
    return _coverage_of(con.execute(_COVERAGE).fetchall())


def _coverage_of(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    out = empty_coverage()
    unknown: dict[str, int] = {}
    hosts = []
    for host, shipped, projected, cov in rows:
        cov = cov or {}
        out["events"] += int(projected or 0)
        for key in ("sources", "sourcesPending", "recordsParsed", "bytesCaptured",
                    "oversizedLines"):
            out[key] += int(cov.get(key) or 0)
        last = cov.get("lastCaptureAt")
        if last is not None and (out["lastCaptureAt"] is None or last > out["lastCaptureAt"]):
            out["lastCaptureAt"] = last
        for t, c in (cov.get("unknownRecordTypes") or {}).items():
            unknown[t] = unknown.get(t, 0) + int(c)
        hosts.append({"host": host, "shipped": int(shipped), "events": int(projected or 0)})
    out["unknownRecordTypes"] = dict(sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0]))[:50])
    out["hosts"] = hosts
    return out


def coverage(url: str) -> dict[str, Any]:
    return dict(_run(url, _coverage))


_DOC_COLS = ("id", "kind", "agent", "at", "text", "message", "job", "run", "session", "cursor",
             "subagent", "title", "host")


def get_document(url: str, hit_id: str, host: str | None = None) -> dict[str, Any] | None:
    """A hit's source document (the first host holding it, or `host`'s)."""
    check_id(hit_id)

    def fetch(con: Any) -> Any:
        sql = f"SELECT {', '.join(_DOC_COLS)} FROM agentlog.documents WHERE id = %s"
        args: list[Any] = [hit_id]
        if host is not None:
            sql += " AND host = %s"
            args.append(host)
        return con.execute(sql + " ORDER BY host LIMIT 1", args).fetchone()

    row = _run(url, fetch)
    if row is None:
        return None
    r = dict(zip(_DOC_COLS, row, strict=True))
    return {"id": r["id"], "kind": r["kind"], "agent": r["agent"], "at": r["at"],
            "body": r["text"], "link": _link(r["kind"], r), "message": r["message"],
            "job": r["job"], "run": r["run"], "session": r["session"], "cursor": r["cursor"],
            "host": r["host"]}


_ITEM_COLS = ("id", "kind", "agent", "at", "role", "tool", "subagent", "subagent_name", "title",
              "text", "cursor", "message", "session", "job", "run", "project", "host", "ord",
              "rid")


def get_conversation(url: str, conversation_id: str, after: str | None = None,
                     limit: int | str | None = 20, host: str | None = None) -> dict[str, Any]:
    """One page of a conversation, oldest first: {"id", "items", "next"} (items carry host)."""
    n, start = conversation_page(conversation_id, after, limit)
    found = _run(url, _conversation, conversation_id, start, n, host)
    if found is None:
        raise NotFound("conversation", conversation_id)
    return dict(found)


def _conversation(con: Any, ident: str, start: tuple[int, int, int] | None, n: int,
                  host: str | None) -> dict[str, Any] | None:
    hcond, hargs = (" AND host = %s", [host]) if host is not None else ("", [])
    conv = None
    ref = parse_ref(ident)
    if ref is not None:  # a hit's reference: its conversation, from just before the hit
        row = con.execute("SELECT id, conversation, at, coalesce(ord, 0), host"
                          " FROM agentlog.documents WHERE rid = %s", [ref[0]]).fetchone()
        if row is None or not ref_holds(ref[1], row[0]) or (host is not None and row[4] != host):
            raise stale_ref(ident)
        if row[1] is None:
            return None
        conv = str(row[1])
        if start is None:
            before = con.execute(
                "SELECT at, coalesce(ord, 0), rid FROM agentlog.documents WHERE conversation = %s"
                f"{hcond} AND (at, coalesce(ord, 0), rid) < (%s, %s, %s)"
                " ORDER BY at DESC, coalesce(ord, 0) DESC, rid DESC LIMIT 1 OFFSET %s",
                [conv, *hargs, row[2], row[3], ref[0], CONTEXT_BEFORE]).fetchone()
            start = tuple(before) if before is not None else None
    elif con.execute(f"SELECT 1 FROM agentlog.documents WHERE conversation = %s{hcond} LIMIT 1",
                   [ident, *hargs]).fetchone():
        conv = ident
    else:
        for sql in (f"SELECT conversation FROM agentlog.documents WHERE session = %s{hcond}"
                    " AND conversation IS NOT NULL ORDER BY subagent IS NOT NULL, at, ord LIMIT 1",
                    f"SELECT conversation FROM agentlog.documents WHERE id = %s{hcond}"
                    " AND conversation IS NOT NULL LIMIT 1"):
            row = con.execute(sql, [ident, *hargs]).fetchone()
            if row is not None:
                conv = str(row[0])
                break
    if conv is None:
        return None
    sql = f"SELECT {', '.join(_ITEM_COLS)} FROM agentlog.documents WHERE conversation = %s{hcond}"
    params: list[Any] = [conv, *hargs]
    if start is not None:
        sql += " AND (at, coalesce(ord, 0), rid) > (%s, %s, %s)"
        params += list(start)
    rows = con.execute(sql + " ORDER BY at, coalesce(ord, 0), rid LIMIT %s",
                       [*params, n + 1]).fetchall()
    return conversation_items(conv, _ITEM_COLS, rows, n)
