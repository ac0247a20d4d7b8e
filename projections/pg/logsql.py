"""The log tables' writes (`hosts`, `records`), run as the schema owner (migration step 5).

A writer holds SELECT only on `hosts` and `records`: without INSERT, UPDATE, DELETE or
TRUNCATE, PostgreSQL lets it take no lock on them above ACCESS SHARE (searches join
`hosts` for coverage; an ACCESS EXCLUSIVE lock there stalled every search), and no row lock
(`FOR UPDATE`/`FOR SHARE` need UPDATE). Sync's writes go through these SECURITY DEFINER
functions (search_path pinned), each of which first checks, as the row-level security
rules did, that the session's login role may act for the host's owner
(`agentlog.may_act`, `session_user` membership):

- `register_host(host, label)`: a new host owned by the session's login role;
- `take_head(host)`: the host's head, its row locked (`FOR UPDATE`) for the transaction;
- `put_records(host, seqs, values)`: records appended after the head, whose seqs continue
  it without a gap and whose chain (`sha256(prev ‖ seq_be8 ‖ stored)`) the server
  recomputes from the head hash, a forgotten form (0xF0/0xF1) keeping its hash as shipped;
  the `hash` column is the value's own, and the head moves to the last, in the caller's
  transaction;
- `forget_records(host, seqs, values)`: records replaced by their forgotten or amended
  form, which must keep the record's hash (all or nothing).

Arrays, not a temporary table: a definer function never reads a relation the caller made
(a caller's temporary view or trigger would run its code as the owner).
"""

from __future__ import annotations

_DEF = "SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION agentlog.must_own(p_host text) RETURNS void
LANGUAGE plpgsql STABLE {_DEF} AS $f$
BEGIN
  IF NOT agentlog.may_act(p_host) THEN
    RAISE EXCEPTION 'agentlog: role % may not write the records of host %',
      session_user, p_host USING ERRCODE = 'insufficient_privilege';
  END IF;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.register_host(p_host text, p_label text) RETURNS void
LANGUAGE sql {_DEF} AS $f$
  INSERT INTO agentlog.hosts(host, owner, label) VALUES (p_host, session_user, p_label)
    ON CONFLICT (host) DO NOTHING
$f$;
CREATE OR REPLACE FUNCTION agentlog.take_head(p_host text)
RETURNS TABLE(head_seq bigint, head_hash bytea) LANGUAGE plpgsql {_DEF} AS $f$
BEGIN
  PERFORM agentlog.must_own(p_host);
  RETURN QUERY SELECT h.head_seq, h.head_hash FROM agentlog.hosts h WHERE h.host = p_host
    FOR UPDATE;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.put_records(p_host text, p_seqs bigint[], p_values bytea[])
RETURNS bigint LANGUAGE plpgsql {_DEF} AS $f$
DECLARE head bigint; head_h bytea; n int := coalesce(cardinality(p_seqs), 0); bad bigint;
BEGIN
  PERFORM agentlog.must_own(p_host);
  SELECT h.head_seq, h.head_hash INTO head, head_h FROM agentlog.hosts h
    WHERE h.host = p_host FOR UPDATE;
  IF n = 0 THEN RETURN head; END IF;
  IF coalesce(cardinality(p_values), 0) <> n THEN
    RAISE EXCEPTION 'agentlog: % seqs for % records', n, cardinality(p_values)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT min(u.s) INTO bad FROM (
    SELECT s, v, i, substring(v FROM 2 FOR 32) AS h,
           coalesce(lag(substring(v FROM 2 FOR 32)) OVER (ORDER BY i), head_h) AS prev
    FROM unnest(p_seqs, p_values) WITH ORDINALITY AS x(s, v, i)) u
  WHERE u.s IS DISTINCT FROM head + u.i OR length(u.v) < 33
     OR (get_byte(u.v, 0) = 1
         AND u.h <> sha256(u.prev || int8send(u.s) || substring(u.v FROM 34)))
     OR get_byte(u.v, 0) NOT IN (1, 240, 241);
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'agentlog: record % of host % does not continue its chain at head %',
      bad, p_host, head USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO agentlog.records(host, seq, hash, value)
    SELECT p_host, s, substring(v FROM 2 FOR 32), v FROM unnest(p_seqs, p_values) AS x(s, v);
  UPDATE agentlog.hosts SET head_seq = p_seqs[n],
    head_hash = substring(p_values[n] FROM 2 FOR 32), synced_at = now() WHERE host = p_host;
  RETURN p_seqs[n];
END $f$;
CREATE OR REPLACE FUNCTION agentlog.forget_records(p_host text, p_seqs bigint[],
  p_values bytea[]) RETURNS int LANGUAGE plpgsql {_DEF} AS $f$
DECLARE got int;
BEGIN
  PERFORM agentlog.must_own(p_host);
  UPDATE agentlog.records r SET value = x.v FROM unnest(p_seqs, p_values) AS x(s, v)
    WHERE r.host = p_host AND r.seq = x.s AND get_byte(x.v, 0) IN (240, 241)
      AND substring(x.v FROM 2 FOR 32) = r.hash;
  GET DIAGNOSTICS got = ROW_COUNT;
  IF got <> coalesce(cardinality(p_seqs), 0) THEN
    RAISE EXCEPTION 'agentlog: % of % records of host % are not forgotten forms of them',
      coalesce(cardinality(p_seqs), 0) - got, cardinality(p_seqs), p_host
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN got;
END $f$;
"""
SIGNATURES = ("agentlog.must_own(text)", "agentlog.register_host(text, text)",
              "agentlog.take_head(text)", "agentlog.put_records(text, bigint[], bytea[])",
              "agentlog.forget_records(text, bigint[], bytea[])")
# what a writer holds on the log tables (`team init`, and step 5 where writers exist)
WRITER_GRANTS = (
    f"REVOKE ALL ON FUNCTION {', '.join(SIGNATURES)} FROM PUBLIC;"
    " REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER"
    " ON agentlog.hosts, agentlog.records FROM agentlog_writer;"
    " DROP POLICY IF EXISTS hosts_register ON agentlog.hosts;"
    " DROP POLICY IF EXISTS hosts_advance ON agentlog.hosts;"
    " DROP POLICY IF EXISTS records_own ON agentlog.records;"
    " DROP POLICY IF EXISTS records_forget ON agentlog.records;"
    f" GRANT EXECUTE ON FUNCTION {', '.join(SIGNATURES)} TO agentlog_writer;")
