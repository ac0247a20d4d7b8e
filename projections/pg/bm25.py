"""The team score is FTS5's bm25 × the role weight, computed from stored statistics.

history.db ranks by `bm25(documents_fts) × weight` (projections.ranking): FTS5's bm25 with
k1 1.2, b 0.75, idf = ln((N - nhit + 0.5) / (nhit + 0.5)) floored to 1e-6 when not positive,
D the row's token count, avgdl = total tokens / N, summed over the query's phrases in query
order and negated (fts5_aux.c `fts5Bm25Function`). The server computes the same doubles in
the same operation order from what step 6 (`MIGRATION`) stores:
- per document `dl` (FTS5's token count of its text: projections.rank.tokens.term_counts,
  the tokenizer history.db uses) and `tfx`, the terms whose FTS5 count differs from the
  number of positions the `simple` tsvector keeps of the same lexeme ({term: f}; NULL when
  none: CJK bigrams, positions cut at 256 a word or 16,383, words the two tokenizers split
  differently), so f(term) = tfx[term] if present, else the tsvector's positions of it
  (`bm25_tf` lists a document's terms so); and `lrow`, the document's rowid in the
  projector's scratch history.db, which the appliers fill in the order history.db does:
  ties break by it, newest first, as history.db's rowid order;
- per host its documents and tokens (`bm25_hosts`) and per term its documents
  (`bm25_df(term, host, df)`), kept by `put_documents`, `drop_documents` and `drop_host`
  in the projector's transaction and summed over hosts at query time (the store's
  statistics are global, like one history.db holding every host's documents).
`agentlog.bm25_term(idf, f, dl, avgdl)` is one phrase's summand and `agentlog.bm25_idf(n,
nhit)` FTS5's idf (both plain SQL expressions, inlined by the planner); a query's score is
`(0.0 + term_1 + … + term_k) × weight`, which is minus history.db's `bm25 × weight`
exactly (negation is exact), so it orders best first DESC like the rest of the server.
tests/test_team_parity.py holds the first pages equal to history.db's.

Champion lists (projections.pg.rank) under bm25 mirror history.db's
(projections.rank.champions): a list keeps the `CHAMPIONS` documents with the largest
v = g(f, dl, avgdl_ref) × weight (g = `bm25_term` with idf 1) at the mean length its list was
made with, their (f, dl) and lrow; the bound `rank_terms.v` bounds v of every other document
holding the word. At query time every non-member has v ≤ bound × max(1, avgdl_now /
avgdl_ref) (g grows with avgdl at most by that ratio); members whose v now beats that
(with a relative `MARGIN` for rounding) are exactly the head of the full ranking (idf is
one positive factor for one word). Else every match is ranked.
"""

from __future__ import annotations

from typing import Any

from projections.ranking import WEIGHT_SQL

STEP = 6
MARGIN = 1e-9  # as projections.rank.champions: the bound's own rounding
LOOSE = 1e-6  # the walk's upper bounds of candidates with an unknown f: looser than MARGIN
UNKNOWN = 255  # a deep list member's cross byte for an f it does not keep (projections.pg.deep)
WEIGHT = WEIGHT_SQL
_DEF = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
# the tsvector of the document `d` cut to the lexemes {terms} (a text[]): marked with weight
# A, then filtered, so `unnest` reads a few lexemes, not ~100 (8x faster than unnest of the
# whole tsvector over 100,000 matches; the tsvector's own weights are all D)
ONLY = "ts_filter(setweight(d.tsv, 'A', {terms}), '{{a}}')"
# a document's f of the term {term} (SQL), from `tfx`, else the tsvector's positions
F_OF = ("coalesce((d.tfx ->> {term})::float8, (SELECT array_length(u.positions, 1)"
        " FROM unnest(" + ONLY.replace("{terms}", "ARRAY[{term}]") + ") u)::float8,"
        " 0.0::float8)")


def _put_documents() -> str:
    from projections.rows import COLUMNS

    types = {"at": "bigint", "archived": "int", "seq": "bigint", "ord": "bigint"}
    cols = ", ".join(COLUMNS)
    return f"""
CREATE OR REPLACE FUNCTION agentlog.put_documents(p_host text, p_docs jsonb)
RETURNS SETOF bigint LANGUAGE sql {_DEF} AS $f$
  SELECT agentlog.must_act(p_host);
  WITH src AS (SELECT r.*, to_tsvector('simple', r.words) AS v FROM jsonb_to_recordset(p_docs)
    AS r({", ".join(f"{c} {types.get(c, 'text')}" for c in COLUMNS)}, words text, dl int,
         tf jsonb, lrow bigint)),
  new AS (SELECT s.*, CASE WHEN s.dl IS NULL OR s.tf = (SELECT coalesce(jsonb_object_agg(
        u.lexeme, array_length(u.positions, 1)), '{{}}') FROM unnest(s.v) u) THEN NULL
      ELSE (SELECT jsonb_object_agg(coalesce(a.key, u.lexeme), coalesce(a.value::int, 0))
      FROM jsonb_each_text(s.tf) a FULL JOIN unnest(s.v) u ON u.lexeme = a.key
      WHERE coalesce(a.value::int, 0) <> coalesce(array_length(u.positions, 1), 0)) END AS x
    FROM src s),
  old AS (SELECT d.dl, d.tsv, d.tfx FROM agentlog.documents d JOIN src s
          ON d.host = p_host AND d.id = s.id WHERE d.dl IS NOT NULL),
  up AS (INSERT INTO agentlog.documents(host, {cols}, tsv, dl, tfx, lrow)
    SELECT p_host, {cols}, v, dl, x, lrow FROM new
    ON CONFLICT (host, id) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c != "id")}, tsv = EXCLUDED.tsv,
    dl = EXCLUDED.dl, tfx = EXCLUDED.tfx, lrow = EXCLUDED.lrow
    RETURNING rid),
  delta AS (SELECT t.term, sum(t.n)::bigint AS n FROM (
      SELECT k.key AS term, 1 AS n FROM new s, jsonb_each_text(s.tf) k
      WHERE s.dl IS NOT NULL AND k.value::int > 0
      UNION ALL SELECT b.term, -1 FROM old o, agentlog.bm25_tf(o.tsv, o.tfx) b) t
    GROUP BY t.term HAVING sum(t.n) <> 0),
  df AS (INSERT INTO agentlog.bm25_df(term, host, df)
    SELECT term, p_host, n FROM delta ORDER BY term
    ON CONFLICT (term, host) DO UPDATE SET df = agentlog.bm25_df.df + EXCLUDED.df),
  st AS (INSERT INTO agentlog.bm25_hosts(host, docs, tokens)
    SELECT p_host, (SELECT count(*) FROM new WHERE dl IS NOT NULL) - (SELECT count(*) FROM old),
      (SELECT coalesce(sum(dl), 0) FROM new) - (SELECT coalesce(sum(dl), 0) FROM old)
    ON CONFLICT (host) DO UPDATE SET docs = agentlog.bm25_hosts.docs + EXCLUDED.docs,
      tokens = agentlog.bm25_hosts.tokens + EXCLUDED.tokens)
  SELECT rid FROM up
$f$;
"""


ONE = f"agentlog.bm25_term(1.0::float8, {{f}}, d.dl::float8, {{a}}) * {WEIGHT}"

MIGRATION_SQL = """
ALTER TABLE agentlog.documents ADD COLUMN IF NOT EXISTS dl int,
  ADD COLUMN IF NOT EXISTS tfx jsonb, ADD COLUMN IF NOT EXISTS lrow bigint;
CREATE TABLE IF NOT EXISTS agentlog.bm25_hosts(host text PRIMARY KEY,
  docs bigint NOT NULL DEFAULT 0, tokens bigint NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS agentlog.bm25_df(term text NOT NULL, host text NOT NULL,
  df bigint NOT NULL, PRIMARY KEY (term, host));
-- the lists are a cache: emptied and kept in bm25's shape (projections.pg.rank): `s` is now
-- the list key v at the list's mean length `avgdl`, `at` the tie key lrow; f and dl kept
TRUNCATE agentlog.rank_champions, agentlog.rank_terms;
ALTER TABLE agentlog.rank_terms ADD COLUMN IF NOT EXISTS avgdl float8 NOT NULL DEFAULT 1.0;
ALTER TABLE agentlog.rank_champions ADD COLUMN IF NOT EXISTS f float8 NOT NULL DEFAULT 0.0,
  ADD COLUMN IF NOT EXISTS dl float8 NOT NULL DEFAULT 0.0;

-- FTS5's idf and one phrase's summand, in fts5_aux.c's operation order
CREATE OR REPLACE FUNCTION agentlog.bm25_idf(p_n bigint, p_hit bigint) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT CASE WHEN ln(((p_n - p_hit)::float8 + 0.5::float8) / (p_hit::float8 + 0.5::float8))
                   <= 0.0::float8 THEN 1e-6::float8
         ELSE ln(((p_n - p_hit)::float8 + 0.5::float8) / (p_hit::float8 + 0.5::float8)) END
$f$;
CREATE OR REPLACE FUNCTION agentlog.bm25_term(p_idf float8, p_f float8, p_dl float8,
  p_avgdl float8) RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT p_idf * ((p_f * (1.2::float8 + 1.0::float8))
         / (p_f + 1.2::float8 * (1::float8 - 0.75::float8 + 0.75::float8 * p_dl / p_avgdl)))
$f$;
-- a document's FTS5 terms and their counts: the tsvector's lexemes and positions, as
-- corrected by tfx
CREATE OR REPLACE FUNCTION agentlog.bm25_tf(p_tsv tsvector, p_tfx jsonb)
RETURNS TABLE(term text, f int) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT coalesce(x.key, u.lexeme), coalesce(x.value::int, array_length(u.positions, 1))
  FROM unnest(p_tsv) u FULL JOIN jsonb_each_text(p_tfx) x ON x.key = u.lexeme
  WHERE coalesce(x.value::int, array_length(u.positions, 1)) > 0
$f$;
""" + f"""
CREATE OR REPLACE FUNCTION agentlog.drop_documents(p_host text, p_ids text[])
RETURNS SETOF bigint LANGUAGE sql {_DEF} AS $f$
  SELECT agentlog.must_act(p_host);
  WITH gone AS (DELETE FROM agentlog.documents WHERE host = p_host AND id = ANY(p_ids)
                RETURNING rid, dl, tsv, tfx),
  delta AS (SELECT b.term, count(*) AS n FROM gone o, agentlog.bm25_tf(o.tsv, o.tfx) b
            WHERE o.dl IS NOT NULL GROUP BY b.term),
  df AS (UPDATE agentlog.bm25_df f SET df = f.df - d.n FROM delta d
         WHERE f.term = d.term AND f.host = p_host),
  st AS (UPDATE agentlog.bm25_hosts h
         SET docs = h.docs - (SELECT count(*) FROM gone WHERE dl IS NOT NULL),
             tokens = h.tokens - (SELECT coalesce(sum(dl), 0) FROM gone) WHERE h.host = p_host)
  SELECT rid FROM gone
$f$;
CREATE OR REPLACE FUNCTION agentlog.drop_host(p_host text, p_schema int, p_parser text)
RETURNS void LANGUAGE plpgsql {_DEF} AS $f$
BEGIN
  PERFORM agentlog.must_act(p_host);
  DELETE FROM agentlog.rank_champions WHERE rid IN (SELECT rid FROM agentlog.documents
                                                    WHERE host = p_host);
  DELETE FROM agentlog.documents WHERE host = p_host;
  DELETE FROM agentlog.aliases WHERE host = p_host;
  DELETE FROM agentlog.bm25_df WHERE host = p_host;
  DELETE FROM agentlog.bm25_hosts WHERE host = p_host;
  INSERT INTO agentlog.projection(host, last_seq, last_hash, schema_version, parser_version)
    VALUES (p_host, 0, '', p_schema, p_parser) ON CONFLICT (host) DO UPDATE SET
    last_seq = 0, last_hash = '', schema_version = EXCLUDED.schema_version,
    parser_version = EXCLUDED.parser_version, coverage = '{{}}', updated_at = now();
END $f$;
CREATE OR REPLACE FUNCTION agentlog.rank_trim(p_term text, p_keep int) RETURNS void
LANGUAGE sql {_DEF} AS $f$
  WITH dropped AS (DELETE FROM agentlog.rank_champions c USING (SELECT rid FROM
    agentlog.rank_champions WHERE term = p_term ORDER BY s DESC, at DESC, rid DESC
    OFFSET greatest(p_keep, 1)) r WHERE c.term = p_term AND c.rid = r.rid
    RETURNING c.s, c.at, c.rid),
  best AS (SELECT s, at, rid FROM dropped ORDER BY s DESC, at DESC, rid DESC LIMIT 1)
  UPDATE agentlog.rank_terms t SET s = b.s, at = b.at, rid = b.rid FROM best b
  WHERE t.term = p_term AND (b.s, b.at, b.rid) > (t.s, t.at, t.rid)
$f$;
CREATE OR REPLACE FUNCTION agentlog.rank_fold(p_rids bigint[], p_keep int) RETURNS void
LANGUAGE plpgsql {_DEF} AS $f$
DECLARE got text[]; w text;
BEGIN
  PERFORM agentlog.rank_forget(p_rids);
  WITH ins AS (INSERT INTO agentlog.rank_champions(term, rid, s, at, f, dl)
    SELECT t.term, d.rid, x.s, coalesce(d.lrow, 0), b.f, d.dl FROM agentlog.documents d
    CROSS JOIN LATERAL unnest(tsvector_to_array(d.tsv)) l(term)
    JOIN agentlog.rank_terms t ON t.term = l.term
    CROSS JOIN LATERAL (SELECT {F_OF.format(term="t.term")} AS f) b
    CROSS JOIN LATERAL (SELECT {ONE.format(f="b.f", a="t.avgdl")} AS s) x
    WHERE d.rid = ANY(p_rids) AND d.dl IS NOT NULL AND b.f > 0.0
      AND agentlog.may_act(d.host) AND (x.s, coalesce(d.lrow, 0), d.rid) > (t.s, t.at, t.rid)
    RETURNING term)
  SELECT array_agg(DISTINCT ins.term) INTO got FROM ins;
  FOR w IN SELECT c.term FROM agentlog.rank_champions c WHERE c.term = ANY(got)
           GROUP BY c.term HAVING count(*) > 2 * greatest(p_keep, 1) ORDER BY c.term LOOP
    PERFORM agentlog.rank_trim(w, p_keep);
  END LOOP;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.rank_make(p_word text, p_keep int) RETURNS boolean
LANGUAGE plpgsql {_DEF} AS $f$
DECLARE keep int := greatest(p_keep, 1); a float8;
BEGIN
  IF plainto_tsquery('simple', p_word)::text IS DISTINCT FROM quote_literal(p_word) THEN
    RETURN false;  -- not one lexeme as the query side parses it: no list
  END IF;
  SELECT sum(tokens)::float8 / nullif(sum(docs), 0)::float8 INTO a FROM agentlog.bm25_hosts;
  IF a IS NULL OR a <= 0.0 THEN
    RETURN false;  -- no statistics yet
  END IF;
  DELETE FROM agentlog.rank_champions WHERE term = p_word;
  WITH r AS (SELECT m.*, row_number() OVER (ORDER BY m.s DESC, m.at DESC, m.rid DESC) n
    FROM (SELECT d.rid, coalesce(d.lrow, 0) AS at, x.f, d.dl,
                 {ONE.format(f="x.f", a="a")} AS s
          FROM agentlog.documents d, plainto_tsquery('simple', p_word) q,
          LATERAL (SELECT {F_OF.format(term="p_word")} AS f) x
          WHERE d.tsv @@ q AND d.dl IS NOT NULL AND x.f > 0.0
          ORDER BY s DESC, at DESC, d.rid DESC LIMIT keep + 1) m),
  ins AS (INSERT INTO agentlog.rank_champions(term, rid, s, at, f, dl)
    SELECT p_word, r.rid, r.s, r.at, r.f, r.dl FROM r WHERE r.n <= keep)
  INSERT INTO agentlog.rank_terms(term, s, at, rid, avgdl)
    SELECT p_word, coalesce(b.s, -1.0), coalesce(b.at, 0), coalesce(b.rid, 0), a
    FROM (SELECT 1) one LEFT JOIN r b ON b.n = keep + 1
    ON CONFLICT (term) DO UPDATE SET s = EXCLUDED.s, at = EXCLUDED.at, rid = EXCLUDED.rid,
      avgdl = EXCLUDED.avgdl;
  RETURN true;
END $f$;
REVOKE ALL ON FUNCTION agentlog.rank_trim(text, int) FROM PUBLIC;
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agentlog_writer') THEN
    GRANT SELECT ON agentlog.bm25_hosts, agentlog.bm25_df TO agentlog_writer;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agentlog_reader') THEN
    GRANT SELECT ON agentlog.bm25_hosts, agentlog.bm25_df TO agentlog_reader;
  END IF;
END $$;
"""


def migration() -> str:
    return MIGRATION_SQL + _put_documents()


MIGRATION = migration()


# -- the query side (projections.pg.query) ---------------------------------------------------

def _stats(terms: list[str]) -> tuple[str, list[str]]:
    """The CTEs `st` (n: documents, a: mean tokens) and `ix` (i0…: each phrase's idf) over
    every host's statistics, in the reader's snapshot."""
    idfs = ", ".join(
        f"agentlog.bm25_idf(st.n, (SELECT coalesce(sum(x.df), 0)::bigint FROM agentlog.bm25_df x"
        f" WHERE x.term = %s)) AS i{i}" for i in range(len(terms)))
    # MATERIALIZED: computed once, not inlined into (and recomputed for) every match
    return ("WITH st AS MATERIALIZED (SELECT coalesce(sum(docs), 0)::bigint AS n,"
            " coalesce(sum(tokens), 0)::float8 / nullif(sum(docs), 0)::float8 AS a"
            f" FROM agentlog.bm25_hosts), ix AS MATERIALIZED (SELECT {idfs} FROM st) ",
            list(terms))


def every(terms: list[str], query: str, where: str) -> tuple[str, list[Any]]:
    """(rid, s, at = lrow) of every match of `query` (the folded words, for the tsquery)
    satisfying `where` (its parameters follow the returned ones), s = the bm25 of the FTS5
    terms `terms` (one per phrase, query order) × weight, negated: best first DESC."""
    head, strs = _stats(terms)
    fs, fs_args = _fs(terms)
    score = " + ".join(["0.0::float8", *(f"agentlog.bm25_term(ix.i{i}, ff.f{i}, d.dl::float8,"
                                         f" st.a)" for i in range(len(terms)))])
    sql = (f"{head}SELECT d.rid, s_of.s, d.lrow AS at"
           f" FROM agentlog.documents d CROSS JOIN st CROSS JOIN ix CROSS JOIN LATERAL ({fs}) ff"
           f" CROSS JOIN LATERAL (SELECT ({score}) * {WEIGHT} AS s) s_of"
           " WHERE d.tsv @@ plainto_tsquery('simple', %s) AND " + where)
    return sql, [*strs, *fs_args, query]


def walk(terms: list[str], query: str, where: str,
         prefix: int | None) -> tuple[str, list[Any]]:
    """(rid, s, at = lrow) of the matches of `query` that `every(terms, …)` ranks above
    every document outside the first `prefix` members of each word's list (None: the whole
    list; a deep one when every word is a cross word, projections.pg.deep): exactly the
    head of its ranking (Fagin's threshold algorithm over the lists, as
    `projections.rank.multi` does for history.db; every word of `terms` must have a list).

    A document outside word i's prefix has v_i ≤ T_i = max(bound_i, the key of the member
    past the prefix) × max(1, avgdl_now / avgdl_i) (the module docstring's certificate;
    the list is in key order), so one in no prefix scores s = Σ idf_i × v_i ≤ U = Σ idf_i ×
    T_i. Each member row of a prefix is a candidate: its own word's f is stored, the
    others' come from its cross bytes `x` (deep lists, projections.pg.deep; 0: the word is
    not in the document, so neither is the document in the AND). With every f known the
    candidate is scored from the list (f, D and the weight are stored: the same doubles
    `every` multiplies); with one unknown, only when its upper bound (T_i standing in for
    each unknown term) reaches U, and then from its tsvector and the document's weight, as
    `every`. The candidates above U (with the relative `MARGIN` for rounding), once each,
    are returned — joined with `documents` only when `where` filters. A word whose list is
    gone since the caller looked makes U NULL: nothing is returned, and the caller ranks
    every match."""
    head, strs = _stats(terms)
    n = range(len(terms))
    args: list[Any] = [*strs]
    bounds = ", ".join(
        f"(SELECT {_bound(prefix)} FROM agentlog.rank_terms t WHERE t.term = %s) AS b{i}"
        for i in n)
    for t in terms:
        args += [t] if prefix is None else [prefix, t]
    u = " + ".join(f"ix.i{i} * tb.b{i}" for i in n)
    pos = ", ".join(f"(SELECT r.pos FROM agentlog.rank_cross r WHERE r.term = %s) AS p{i}"
                    for i in n)
    args += terms
    # a member row: its own word's f, the others' from x (-1: not in the document), else
    # NULL (unknown); a document in several lists is several rows, each scored alike
    fcols = ", ".join(
        f"CASE WHEN c.term = %s THEN c.f WHEN px.p{i} < length(c.x) THEN (CASE"
        f" get_byte(c.x, px.p{i}) WHEN 0 THEN -1 WHEN {UNKNOWN} THEN NULL"
        f" ELSE get_byte(c.x, px.p{i}) - 1 END)::float8 END AS f{i}" for i in n)
    args += [*terms, list(dict.fromkeys(terms))]
    order = ""
    if prefix is not None:
        order = " ORDER BY c.s DESC, c.at DESC, c.rid DESC LIMIT %s"
        args.append(prefix)
    every_known = " AND ".join(f"k.f{i} >= 0.0" for i in n)
    some_unknown = " OR ".join(f"k.f{i} IS NULL" for i in n)
    none_absent = " AND ".join(f"coalesce(k.f{i}, 0.0) >= 0.0" for i in n)
    known = " + ".join(["0.0::float8", *(f"agentlog.bm25_term(ix.i{i}, k.f{i}, k.dl, st.a)"
                                         for i in n)])
    part = " + ".join(["0.0::float8", *(
        f"coalesce(agentlog.bm25_term(ix.i{i}, k.f{i}, k.dl, st.a), 0.0::float8)" for i in n)])
    rest = " + ".join(["0.0::float8", *(f"CASE WHEN k.f{i} IS NULL THEN ix.i{i} * tb.b{i}"
                                        " ELSE 0.0::float8 END" for i in n)])
    fs, fs_args = _fs(terms)
    args += [*fs_args, query]
    score = " + ".join(["0.0::float8", *(f"agentlog.bm25_term(ix.i{i}, ff.f{i},"
                                         " d.dl::float8, st.a)" for i in n)])
    above = f"ub.u + abs(ub.u) * {MARGIN}::float8"
    # filters read the document; without any, the lists alone answer
    joined = ("" if where.strip() == "true"
              else " JOIN agentlog.documents d ON d.rid = cand.rid WHERE " + where)
    sql = (f"{head}, tb AS MATERIALIZED (SELECT {bounds} FROM st),"
           f" ub AS MATERIALIZED (SELECT ({u}) AS u FROM ix, tb),"
           f" px AS MATERIALIZED (SELECT {pos}),"
           f" k AS MATERIALIZED (SELECT c.rid, c.dl, c.w, c.at, {fcols}"
           " FROM unnest(%s::text[]) q(term) CROSS JOIN LATERAL (SELECT c.rid, c.term, c.f,"
           f" c.dl, c.w, c.at, c.x FROM agentlog.rank_champions c WHERE c.term = q.term{order})"
           " c CROSS JOIN px),"
           # every f known: scored from the lists (f, D and the weight are stored)
           f" cand AS (SELECT k.rid, sk.s, k.at FROM k CROSS JOIN st CROSS JOIN ix"
           f" CROSS JOIN ub CROSS JOIN LATERAL (SELECT ({known}) * k.w AS s) sk"
           f" WHERE {every_known} AND sk.s > {above}"
           # an f unknown: from the tsvector, when the bounds standing in for it reach U
           f" UNION ALL SELECT d.rid, s_of.s, d.lrow FROM k"
           " JOIN agentlog.documents d ON d.rid = k.rid CROSS JOIN st CROSS JOIN ix"
           f" CROSS JOIN tb CROSS JOIN ub CROSS JOIN LATERAL ({fs}) ff"
           f" CROSS JOIN LATERAL (SELECT ({score}) * {WEIGHT} AS s) s_of"
           f" WHERE ({some_unknown}) AND {none_absent}"
           f" AND ({part}) * k.w + {rest} > ub.u - abs(ub.u) * {LOOSE}::float8"
           " AND d.tsv @@ plainto_tsquery('simple', %s)"
           f" AND s_of.s > {above})"
           f" SELECT DISTINCT ON (cand.rid) cand.rid, cand.s, cand.at FROM cand{joined}")
    return sql, args


def _bound(prefix: int | None) -> str:
    """The bound of the list of `rank_terms` row `t` read to `prefix` members (None: all),
    at today's mean length (`st.a`): the larger of its own and the key of the member past
    the prefix (a parameter, when given), scaled by the growth of the mean length."""
    past = "t.s" if prefix is None else (
        "coalesce((SELECT c.s FROM agentlog.rank_champions c WHERE c.term = t.term"
        " ORDER BY c.s DESC, c.at DESC, c.rid DESC OFFSET %s LIMIT 1), t.s)")
    return f"greatest(t.s, {past}) * greatest(1.0::float8, st.a / t.avgdl)"


def _fs(terms: list[str]) -> tuple[str, list[Any]]:
    """A row of f0… for the document `d`: each term's f as the ranking reads it (`tfx`, else
    the tsvector's positions, else 0), from the tsvector cut to the terms."""
    fs = ", ".join(f"coalesce((d.tfx ->> %s)::float8, (max(array_length(u.positions, 1))"
                   f" FILTER (WHERE u.lexeme = %s))::float8, 0.0::float8) AS f{i}"
                   for i in range(len(terms)))
    args: list[Any] = [a for t in terms for a in (t, t)]
    return (f"SELECT {fs} FROM unnest({ONLY.format(terms='%s::text[]')}) u",
            [*args, list(terms)])


def listed(term: str, where: str, prefix: int) -> tuple[str, list[Any]]:
    """(rid, s, at = lrow) of the first `prefix` members of `term`'s list (in key order)
    that beat its bound at today's statistics — the bound being the larger of the list's
    own and the key of the member past the prefix (module docstring): exactly the head of
    `every([term], …)`, scored from the list (f, D and the weight are stored) and joined
    with `documents` only for filters."""
    head, args = _stats([term])
    joined = ("" if where.strip() == "true"
              else " JOIN agentlog.documents d ON d.rid = c.rid")
    sql = (f"{head}, tb AS MATERIALIZED (SELECT {_bound(prefix)} AS b"
           " FROM agentlog.rank_terms t, st WHERE t.term = %s)"
           " SELECT c.rid, (0.0::float8 + agentlog.bm25_term(ix.i0, c.f, c.dl, st.a))"
           " * c.w AS s, c.at AS at FROM (SELECT c.rid, c.f, c.dl, c.w, c.at"
           " FROM agentlog.rank_champions c WHERE c.term = %s"
           f" ORDER BY c.s DESC, c.at DESC, c.rid DESC LIMIT %s) c{joined}"
           " CROSS JOIN st CROSS JOIN ix CROSS JOIN tb"
           " WHERE agentlog.bm25_term(1.0::float8, c.f, c.dl, st.a) * c.w"
           f" > tb.b * (1.0::float8 + {MARGIN}::float8) AND " + where)
    return sql, [*args, prefix, term, term, prefix]
