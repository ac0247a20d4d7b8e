"""Champion lists of the team server: one common word ranked without ranking all its matches.

The team score (schema step 6, `projections.pg.bm25`) is FTS5's bm25 × role weight from
stored statistics, ordered (score, lrow, rid) descending; before step 6 (and until every
host was projected at schema 3) it is `ts_rank(tsv, q) × role weight` (`SCORE`), ordered
(score, at, rid), ranked over every match without lists.

For a word in more than `HOT_DF` documents (the most common elements ANALYZE keeps for
`tsv`), `rank_champions(term, rid, s, at, f, dl)` holds at least its `CHAMPIONS` best
documents by the list key s = v = g(f, dl, avgdl) × weight (bm25's term-frequency part,
`agentlog.bm25_term` with idf 1, at the mean length `rank_terms.avgdl` the list was made
with; `at` = the document's lrow, the tie order), and `rank_terms(term, s, at, rid, avgdl)`
a bound key.
Invariants (as history.db's lists, projections.rank.champions): every document holding
the word that is NOT in its list has a key at or below the bound; every member's stored
key, f and dl are its document's current ones. At query time a non-member's v at today's
mean length is at most bound × max(1, avgdl_now / avgdl) (g grows with avgdl at most by
that ratio), so the members whose v now beats that (with a relative margin for rounding),
after filters and the duplicate drop, are exactly the full ranking's first hits (idf is
one positive factor for one word); when fewer than the page asks for remain, every match
is ranked.
Upkeep keeps it in the projector's own transaction (`fold`): every document a batch writes
or deletes leaves every list, and goes back into the lists of its words where its key is
above the bound; a list over twice its length (`rank_terms.keep`: `CHAMPIONS`, more for
the commonest words' deep lists of schema step 7, `projections.pg.deep`) keeps its best
ones and raises the bound to the best key it dropped. Deletions only shrink lists (the
change of N, df and avgdl they bring is what the query-time certificate allows for).
Batches of different hosts fold at once: a member may end below a bound another batch
raised (it is then never answered from, only ranked in the fall-back); trims lock each
word's bound row in word order, so two batches never deadlock.
Lists are made (`make_lists`, after a projection pass) under an exclusive transaction
advisory lock that every batch takes shared before writing documents, so a list's ranking
never misses a batch committing beside it. Lists are a cache: dropping both tables loses
nothing (a word without a list is ranked over every match).
"""

from __future__ import annotations

from typing import Any

from projections.ranking import WEIGHT_SQL

HOT_DF = 5000  # ~10 ms of ranking every match (bench/pg_search.py): below that, no list
CHAMPIONS = 1000
BUILD_BUDGET = 3  # matches ranked per document when making lists in one pass
DRIFT = 0.05  # a list is made again once the mean length grew 5 % past the list's
LOCK = "hashtext('agentlog.rank')"
WEIGHT = WEIGHT_SQL  # history.db's role weights, the same SQL (projections.ranking)
SCORE = f"ts_rank(d.tsv, q) * {WEIGHT}"  # the score before schema step 6 (no lists)



def ready(con: Any, *, write: bool = False) -> bool:
    """Whether the list tables exist and this role may read them (`write`: and keep them
    through the upkeep functions), both as of schema step 7 (`projections.pg.deep`).
    A server made before them gains them from `ensure_schema` (`team init`, or the first
    `sync` of a new server); without them nothing is listed and every match is ranked."""
    held = " AND ".join(f"has_table_privilege('agentlog.{t}', 'SELECT')" for t in TABLES)
    missing = " OR ".join([*(f"to_regclass('agentlog.{t}') IS NULL" for t in TABLES),
                           *(f"to_regprocedure('{f}') IS NULL" for f in _KEEPS if write)])
    if write:
        held += "".join(f" AND has_function_privilege('{f}', 'EXECUTE')" for f in _KEEPS)
    row = con.execute(  # CASE: the privilege test of a missing table would raise
        f"SELECT CASE WHEN {missing} THEN false ELSE {held} END").fetchone()
    return bool(row and row[0])


def lock_shared(c: Any) -> None:
    """Taken by every projection batch before it writes documents."""
    c.execute(f"SELECT pg_advisory_xact_lock_shared({LOCK})")


def forget(c: Any, rids: list[int]) -> None:
    """Drop the documents `rids` from every list: only documents gone or of a host this
    session's role may act for (`agentlog.rank_forget`)."""
    if rids:
        c.execute("SELECT agentlog.rank_forget(%s)", (rids,))


def fold(c: Any, rids: list[int]) -> None:
    """Fold the documents `rids` (just written, in this transaction) into every list
    (`agentlog.rank_fold`: the keys are computed from the documents, never sent)."""
    if rids:
        c.execute("SELECT agentlog.rank_fold(%s, %s)", (rids, CHAMPIONS))


# The lists' upkeep, run as the schema owner (SECURITY DEFINER, search_path pinned): writers
# hold no write privilege on the list tables, so a list entry or a bound is only ever what
# these functions computed from the documents themselves. A list's length (`p_keep`, the
# caller's `CHAMPIONS`) changes only how much the lists answer, never what: any length keeps
# the invariants. Full lists are trimmed in term order: two hosts' batches trimming at once
# never deadlock. These are step 4's (ts_rank keys); step 6 (`projections.pg.bm25`)
# replaces rank_trim, rank_fold and rank_make by bm25's, with the same signatures.
FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION agentlog.may_act(p_host text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
  SELECT EXISTS (SELECT 1 FROM agentlog.hosts h WHERE h.host = p_host
                 AND pg_has_role(session_user, h.owner, 'USAGE'))
$f$;
CREATE OR REPLACE FUNCTION agentlog.rank_forget(p_rids bigint[]) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
  DELETE FROM agentlog.rank_champions c WHERE c.rid = ANY(p_rids)
    AND NOT EXISTS (SELECT 1 FROM agentlog.documents d
                    WHERE d.rid = c.rid AND NOT agentlog.may_act(d.host))
$f$;
CREATE OR REPLACE FUNCTION agentlog.rank_trim(p_term text, p_keep int) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
  WITH dropped AS (DELETE FROM agentlog.rank_champions c USING (SELECT rid FROM
    agentlog.rank_champions WHERE term = p_term ORDER BY s DESC, at DESC, rid DESC
    OFFSET greatest(p_keep, 1)) r WHERE c.term = p_term AND c.rid = r.rid
    RETURNING c.s, c.at, c.rid),
  best AS (SELECT s, at, rid FROM dropped ORDER BY s DESC, at DESC, rid DESC LIMIT 1)
  UPDATE agentlog.rank_terms t SET s = b.s, at = b.at, rid = b.rid FROM best b
  WHERE t.term = p_term AND (b.s, b.at, b.rid) > (t.s, t.at, t.rid)
$f$;
CREATE OR REPLACE FUNCTION agentlog.rank_fold(p_rids bigint[], p_keep int) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE got text[]; w text;
BEGIN
  PERFORM agentlog.rank_forget(p_rids);
  WITH ins AS (INSERT INTO agentlog.rank_champions(term, rid, s, at)
    SELECT t.term, d.rid, x.s, d.at FROM agentlog.documents d
    CROSS JOIN LATERAL unnest(tsvector_to_array(d.tsv)) l(term)
    JOIN agentlog.rank_terms t ON t.term = l.term
    CROSS JOIN LATERAL plainto_tsquery('simple', t.term) q
    CROSS JOIN LATERAL (SELECT {SCORE} AS s) x
    WHERE d.rid = ANY(p_rids) AND agentlog.may_act(d.host)
      AND (x.s, d.at, d.rid) > (t.s, t.at, t.rid)
    RETURNING term)
  SELECT array_agg(DISTINCT ins.term) INTO got FROM ins;
  FOR w IN SELECT c.term FROM agentlog.rank_champions c WHERE c.term = ANY(got)
           GROUP BY c.term HAVING count(*) > 2 * greatest(p_keep, 1) ORDER BY c.term LOOP
    PERFORM agentlog.rank_trim(w, p_keep);
  END LOOP;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.rank_make(p_word text, p_keep int) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
DECLARE keep int := greatest(p_keep, 1);
BEGIN
  IF plainto_tsquery('simple', p_word)::text IS DISTINCT FROM quote_literal(p_word) THEN
    RETURN false;  -- not one lexeme as the query side parses it: no list
  END IF;
  DELETE FROM agentlog.rank_champions WHERE term = p_word;
  -- no temp table: one the caller made beforehand (with a trigger) would run as the owner
  WITH r AS (SELECT m.*, row_number() OVER (ORDER BY m.s DESC, m.at DESC, m.rid DESC) n
    FROM (SELECT d.rid, {SCORE} AS s, d.at FROM agentlog.documents d,
          plainto_tsquery('simple', p_word) q WHERE d.tsv @@ q
          ORDER BY s DESC, d.at DESC, d.rid DESC LIMIT keep + 1) m),
  ins AS (INSERT INTO agentlog.rank_champions(term, rid, s, at)
    SELECT p_word, r.rid, r.s, r.at FROM r WHERE r.n <= keep)
  INSERT INTO agentlog.rank_terms(term, s, at, rid)
    SELECT p_word, coalesce(b.s, -1.0), coalesce(b.at, 0), coalesce(b.rid, 0)
    FROM (SELECT 1) one LEFT JOIN r b ON b.n = keep + 1
    ON CONFLICT (term) DO UPDATE SET s = EXCLUDED.s, at = EXCLUDED.at, rid = EXCLUDED.rid;
  RETURN true;
END $f$;
REVOKE ALL ON FUNCTION agentlog.may_act(text), agentlog.rank_forget(bigint[]),
  agentlog.rank_trim(text, int), agentlog.rank_fold(bigint[], int),
  agentlog.rank_make(text, int) FROM PUBLIC;
"""
UPKEEP = ("agentlog.may_act(text)", "agentlog.rank_forget(bigint[])",
          "agentlog.rank_fold(bigint[], int)", "agentlog.rank_make(text, int)")
TABLES = ("rank_terms", "rank_champions", "rank_cross")
_KEEPS = (*UPKEEP, "agentlog.rank_cross_add(text[], int)")  # step 4's functions and step 7's
# what a writer holds on the lists (`team init`, and step 4 on a server that has writers;
# step 7 grants its own function)
WRITER_GRANTS = ("REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON agentlog.rank_terms,"
                 " agentlog.rank_champions FROM agentlog_writer;"
                 f" GRANT EXECUTE ON FUNCTION {', '.join(UPKEEP)} TO agentlog_writer;")


def hot_words(c: Any) -> list[tuple[str, int]]:
    """(word, documents) of every word above `HOT_DF`, hottest first: estimated from
    ANALYZE's most common elements of `tsv` once the server gathered them; before its first
    ANALYZE of `documents` (a first projection: autovacuum comes later) counted from the
    bm25 statistics (`bm25_df`, one scan), so a first pass makes its lists at once."""
    row = c.execute(
        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples"
        " FROM pg_stats s, pg_class c WHERE s.schemaname = 'agentlog'"
        " AND s.tablename = 'documents' AND s.attname = 'tsv'"
        " AND c.oid = 'agentlog.documents'::regclass").fetchone()
    if row is None:
        est = [(str(w), int(n)) for w, n in c.execute(
            "SELECT term, sum(df) FROM agentlog.bm25_df GROUP BY term HAVING sum(df) > %s",
            (HOT_DF,))]
    elif row[0] is None:
        return []
    else:
        est = [(str(w), int(f * max(float(row[2]), 0.0))) for w, f in
               zip(row[0], row[1][:len(row[0])], strict=True)]
    return sorted(((w, n) for w, n in est if n > HOT_DF), key=lambda wn: (-wn[1], wn[0]))


def wanted(c: Any) -> list[tuple[str, int, int]]:
    """(word, estimated documents, length) of the lists to make: the hot words without a
    list, hottest first, then those whose list is stale (made at a mean length the corpus
    has since outgrown by more than `DRIFT`) or, for a cross word (`projections.pg.deep`),
    shorter than half the length it wants now. Adds the commonest words that want a deep
    list to the cross words first (in the caller's transaction)."""
    from projections.pg import deep

    words = hot_words(c)
    if not words:
        return []
    deep_words = [w for w, n in words if deep.depth(n, CHAMPIONS) > CHAMPIONS][:deep.CROSS]
    cross = {str(r[0]) for r in c.execute("SELECT term FROM agentlog.rank_cross")}
    if len(cross) < deep.CROSS and set(deep_words) - cross:  # under the lists' lock: no
        c.execute(f"SELECT pg_advisory_xact_lock({LOCK})")  # batch folds meanwhile
        c.execute("SELECT agentlog.rank_cross_add(%s, %s)", (deep_words, deep.CROSS))
        cross = {str(r[0]) for r in c.execute("SELECT term FROM agentlog.rank_cross")}
    now = c.execute("SELECT sum(tokens)::float8 / nullif(sum(docs), 0)::float8"
                    " FROM agentlog.bm25_hosts").fetchone()
    mean = float(now[0]) if now and now[0] is not None else None
    have = {str(t): (float(a), int(k)) for t, a, k in c.execute(
        "SELECT term, avgdl, keep FROM agentlog.rank_terms")}
    out: list[tuple[str, int, int]] = []
    for w, n in words:
        keep = deep.depth(n, CHAMPIONS) if w in cross else CHAMPIONS
        made = have.get(w)
        # a list made at a mean length the corpus has since outgrown by more than `DRIFT`
        # certifies less and less (module docstring): made again, after the words without one
        if made is None or (mean is not None and made[0] * (1.0 + DRIFT) < mean) or (
                w in cross and made[1] * 2 < keep):
            out.append((w, n, keep))
    return sorted(out, key=lambda wnk: (wnk[0] in have, -wnk[1], wnk[0]))


def make_lists(con: Any, *, budget: int | None = None) -> int:
    """Make the lists `wanted` names, hottest first, until about `budget` matches were
    ranked (default `BUILD_BUDGET` per document); one transaction a list. Returns how many
    lists were made."""
    words = wanted(con)
    con.commit()
    if not words:
        return 0
    if budget is None:  # (bm25's count: pg_class.reltuples is -1 until a VACUUM or ANALYZE)
        row = con.execute("SELECT sum(docs) FROM agentlog.bm25_hosts").fetchone()
        budget = BUILD_BUDGET * max(int(row[0]) if row and row[0] is not None else 0, 0)
    con.commit()
    made = spent = 0
    for word, n, keep in words:
        if made and spent + n > budget:
            break
        con.execute(f"SELECT pg_advisory_xact_lock({LOCK})")
        if _make(con, word, keep):
            made += 1
        con.commit()
        spent += n
    return made


def _make(c: Any, word: str, keep: int) -> bool:
    row = c.execute("SELECT agentlog.rank_make(%s, %s)", (word, keep)).fetchone()
    return bool(row and row[0])
