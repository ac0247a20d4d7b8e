"""Deep lists of the team server: an AND of common words ranked from the lists at 1M
documents (schema step 7), as history.db's `projections.rank.deep` does.

A one-word query needs its word's best ~1,000 documents (`projections.pg.rank`). An AND of
several common words needs far more: its best documents hold every word moderately often
and sit thousands of places down each word's own ranking (at 1M documents the first 20 hits
of two of the commonest words sat at places up to 26,538). So:
- the `CROSS` commonest words (`rank_cross(term, pos)`, positions 0, 1, … in the order the
  words came; never removed but by the migration) keep lists of min(`DEEP_MAX`, df /
  `DEEP_SHARE`) documents instead of `rank.CHAMPIONS` (`rank_terms.keep`: every list's
  length, set when it is made);
- every member of a cross word's list carries `x`, one byte a cross word in position order:
  0 the document's tsvector lacks the word (not a match), 1 + f for f ≤ 253 (f as the
  ranking reads it: `tfx`, else the tsvector's positions), 255 f unknown (larger); bytes
  past its length (words that became cross after it was written) are unknown too. Written
  with the member from the document itself (`rank_x`), so it is exact as long as the member
  is: every document a batch rewrites leaves every list first (`rank_forget`);
- every member carries its weight `w` (the role weight the ranking multiplies by), so a
  member's score is computed from the lists alone.

The walk (`projections.pg.bm25.walk`) reads a prefix of each word's list — the whole list
when every word of the query is a cross word, else its first `rank.CHAMPIONS` — and
certifies with each list's effective bound: max(its bound, the key of the first member past
the prefix) (the list is ordered by key: every document past the prefix or outside the list
has a key at or below it). A candidate's f of each word comes from its own membership, else
from `x`; a candidate with every f known is scored from the lists (its weight `w`), one with
an unknown f only when its upper bound (the bounds standing in for the unknown terms) beats
the sum of the bounds, and then from its tsvector and the document's weight, as the full
ranking does. The candidates above the sum of the bounds are joined with `documents` only
when filters read it: exactly the head of the full ranking.

Upkeep (`rank_fold`): a deep list gains the members of each batch that beat its bound like
any list; counting a list of 40,000 members for the trim at every batch would cost ~2 ms a
word, so a deep list is counted with a probability of 4 × (members the batch added) / keep
(a list overshoots 2 × keep by about keep / 4 on average; any length keeps the invariants).
Lists of at most 2 × `rank.CHAMPIONS` are counted at every batch, as before.
"""

from __future__ import annotations

from projections.pg.bm25 import F_OF, ONE, UNKNOWN
from projections.ranking import WEIGHT_SQL

STEP = 7
DEEP_MAX = 20_000  # documents a deep list keeps at most (history.db's DEEP_MAX)
DEEP_SHARE = 8  # ... and at most this share of the word's documents
CROSS = 64  # words with deep lists, whose members carry each other's f
_DEF = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
# what a writer holds of step 7 (`team init`; the step grants it where writers exist)
WRITER_GRANTS = (" GRANT EXECUTE ON FUNCTION agentlog.rank_cross_add(text[], int)"
                 " TO agentlog_writer;")


def depth(df: int, champions: int) -> int:
    """The length of a cross word's list for a word in `df` documents (`champions` when a
    deep list would not be at least twice a champion list)."""
    d = min(DEEP_MAX, df // DEEP_SHARE)
    return d if d >= 2 * champions else champions


# x of the document (tsv, tfx) over the cross words `p_cross` (in position order)
_X = f"""
CREATE OR REPLACE FUNCTION agentlog.rank_x(p_tsv tsvector, p_tfx jsonb, p_cross text[])
RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
  SELECT coalesce(string_agg(set_byte('\\x00'::bytea, 0, CASE WHEN u.lexeme IS NULL THEN 0
      WHEN coalesce((p_tfx ->> c.term)::int, array_length(u.positions, 1), 0) >= {UNKNOWN - 1}
      THEN {UNKNOWN} ELSE 1 + coalesce((p_tfx ->> c.term)::int, array_length(u.positions, 1), 0)
      END), ''::bytea ORDER BY c.n), ''::bytea)
  FROM unnest(p_cross) WITH ORDINALITY c(term, n)
  LEFT JOIN unnest(ts_filter(setweight(p_tsv, 'A', p_cross), '{{a}}')) u ON u.lexeme = c.term
$f$;
"""
_CROSS = "(SELECT coalesce(array_agg(term ORDER BY pos), '{}') FROM agentlog.rank_cross)"

MIGRATION = f"""
-- the lists are a cache: emptied and made again with their length, weights and x
TRUNCATE agentlog.rank_champions, agentlog.rank_terms;
ALTER TABLE agentlog.rank_terms ADD COLUMN IF NOT EXISTS keep int NOT NULL DEFAULT 0;
ALTER TABLE agentlog.rank_champions ADD COLUMN IF NOT EXISTS w float8 NOT NULL DEFAULT 1.0,
  ADD COLUMN IF NOT EXISTS x bytea;
CREATE TABLE IF NOT EXISTS agentlog.rank_cross(term text PRIMARY KEY, pos int NOT NULL UNIQUE);
{_X}
CREATE OR REPLACE FUNCTION agentlog.rank_cross_add(p_words text[], p_max int) RETURNS void
LANGUAGE plpgsql {_DEF} AS $f$
DECLARE n int; w text;
BEGIN
  LOCK TABLE agentlog.rank_cross IN EXCLUSIVE MODE;  -- positions stay dense
  SELECT count(*) INTO n FROM agentlog.rank_cross;
  FOREACH w IN ARRAY p_words LOOP
    EXIT WHEN n >= p_max;
    IF plainto_tsquery('simple', w)::text = quote_literal(w)
       AND NOT EXISTS (SELECT 1 FROM agentlog.rank_cross WHERE term = w) THEN
      INSERT INTO agentlog.rank_cross(term, pos) VALUES (w, n);
      n := n + 1;
    END IF;
  END LOOP;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.rank_fold(p_rids bigint[], p_keep int) RETURNS void
LANGUAGE plpgsql {_DEF} AS $f$
DECLARE got text[]; w text; k int; xs text[] := {_CROSS};
BEGIN
  PERFORM agentlog.rank_forget(p_rids);
  WITH ins AS (INSERT INTO agentlog.rank_champions(term, rid, s, at, f, dl, w, x)
    SELECT t.term, d.rid, x.s, coalesce(d.lrow, 0), b.f, d.dl, {WEIGHT_SQL},
      CASE WHEN t.term = ANY(xs) THEN agentlog.rank_x(d.tsv, d.tfx, xs) END
    FROM agentlog.documents d
    CROSS JOIN LATERAL unnest(tsvector_to_array(d.tsv)) l(term)
    JOIN agentlog.rank_terms t ON t.term = l.term
    CROSS JOIN LATERAL (SELECT {F_OF.format(term="t.term")} AS f) b
    CROSS JOIN LATERAL (SELECT {ONE.format(f="b.f", a="t.avgdl")} AS s) x
    WHERE d.rid = ANY(p_rids) AND d.dl IS NOT NULL AND b.f > 0.0
      AND agentlog.may_act(d.host) AND (x.s, coalesce(d.lrow, 0), d.rid) > (t.s, t.at, t.rid)
    RETURNING term),
  cnt AS (SELECT term, count(*) AS n FROM ins GROUP BY term)
  SELECT array_agg(c.term) INTO got FROM cnt c JOIN agentlog.rank_terms t ON t.term = c.term
  WHERE greatest(t.keep, p_keep) <= 2 * greatest(p_keep, 1)
     OR random() < 4.0 * c.n / greatest(t.keep, 1);
  FOR w, k IN SELECT c.term, max(greatest(t.keep, p_keep, 1)) FROM agentlog.rank_champions c
           JOIN agentlog.rank_terms t ON t.term = c.term WHERE c.term = ANY(got)
           GROUP BY c.term HAVING count(*) > 2 * max(greatest(t.keep, p_keep, 1))
           ORDER BY c.term LOOP
    PERFORM agentlog.rank_trim(w, k);
  END LOOP;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.rank_make(p_word text, p_keep int) RETURNS boolean
LANGUAGE plpgsql {_DEF} AS $f$
DECLARE keep int := greatest(p_keep, 1); a float8; xs text[] := {_CROSS};
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
    FROM (SELECT d.rid, coalesce(d.lrow, 0) AS at, x.f, d.dl, {WEIGHT_SQL} AS w,
                 {ONE.format(f="x.f", a="a")} AS s
          FROM agentlog.documents d, plainto_tsquery('simple', p_word) q,
          LATERAL (SELECT {F_OF.format(term="p_word")} AS f) x
          WHERE d.tsv @@ q AND d.dl IS NOT NULL AND x.f > 0.0
          ORDER BY s DESC, at DESC, d.rid DESC LIMIT keep + 1) m),
  ins AS (INSERT INTO agentlog.rank_champions(term, rid, s, at, f, dl, w, x)
    SELECT p_word, r.rid, r.s, r.at, r.f, r.dl, r.w,
      CASE WHEN p_word = ANY(xs) THEN agentlog.rank_x(d.tsv, d.tfx, xs) END
    FROM r JOIN agentlog.documents d ON d.rid = r.rid WHERE r.n <= keep)
  INSERT INTO agentlog.rank_terms(term, s, at, rid, avgdl, keep)
    SELECT p_word, coalesce(b.s, -1.0), coalesce(b.at, 0), coalesce(b.rid, 0), a, keep
    FROM (SELECT 1) one LEFT JOIN r b ON b.n = keep + 1
    ON CONFLICT (term) DO UPDATE SET s = EXCLUDED.s, at = EXCLUDED.at, rid = EXCLUDED.rid,
      avgdl = EXCLUDED.avgdl, keep = EXCLUDED.keep;
  RETURN true;
END $f$;
REVOKE ALL ON FUNCTION agentlog.rank_x(tsvector, jsonb, text[]),
  agentlog.rank_cross_add(text[], int) FROM PUBLIC;
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agentlog_writer') THEN
    GRANT SELECT ON agentlog.rank_cross TO agentlog_writer;
    GRANT EXECUTE ON FUNCTION agentlog.rank_cross_add(text[], int) TO agentlog_writer;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agentlog_reader') THEN
    GRANT SELECT ON agentlog.rank_cross TO agentlog_reader;
  END IF;
END $$;
"""
