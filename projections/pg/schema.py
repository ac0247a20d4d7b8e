"""The team schema in PostgreSQL (schema `agentlog`), created idempotently.

Tables:
- `hosts(host, owner, label, created_at, head_seq, head_hash, synced_at)`: one row per
  machine's home; `owner` is the role that registered it (row-level security keys on it);
  the head moves in the same transaction as the records it covers.
- `records(host, seq, hash, value)`: every log record byte for byte (`value` is the exact
  LMDB value: format byte, chain hash, stored bytes), keyed by (host, seq).
- `documents`, `aliases`: the projection (see `project`), rebuilt by replay; a GIN index on
  the `simple` tsvector, and a pg_trgm GIN index on the text of documents holding CJK.
- `projection(host, last_seq, last_hash, ...)`: the per-host checkpoint, committed with the
  rows it covers.
- `rank_terms`, `rank_champions`, `rank_cross`: the champion lists of common words (`rank`;
  step 7: the deep lists of the commonest, `deep`), a cache, written only by the schema
  owner's SECURITY DEFINER upkeep functions (step 4).
- `hosts` and `records` are written only by the schema owner's functions too (step 5,
  `logsql`): writers hold SELECT only on every table.
- `migrations(version, name, applied_at)`: which of `MIGRATIONS` the database has had.
- `projector_locks(host)`: the row a host's projector locks (FOR UPDATE) while it projects;
  only a role that may update the row can take it (row-level security: its own hosts).

Versioned migrations: `MIGRATIONS` is an ordered list of steps; `ensure_schema` applies
those after the database's version, each recorded in `migrations`, in the caller's
transaction under a transaction-level advisory lock (a second process waits, then finds
nothing to do). A database made before the table existed is version 1 (its tables are
step 1's, which is all `IF NOT EXISTS`, so step 1 runs again on it — and only on it: on a
later version it would re-make what a later step dropped). A database newer than this
agentlog is refused.
"""

from __future__ import annotations

from typing import Any

from projections import cjk
from projections.pg import bm25 as _bm25
from projections.pg import deep as _deep
from projections.pg import logsql as _logsql
from projections.pg import rank as _rank
from projections.rows import COLUMNS

SCHEMA = "agentlog"
# the projection's layout: a projector replays a host projected under another version
# (2: CJK bigrams in `tsv`; 3: bm25's statistics, `dl`, `tfx`, `lrow`, `bm25_hosts`, `bm25_df`)
SCHEMA_VERSION = 3
# Documents holding CJK text: the only ones a substring (trigram) condition is ever asked of
# (see `query._plan`), so the trigram index covers just them — over every document it cost
# ~5x the rest of the projection (bench/postgres.py). Queries repeat this exact predicate.
CJK_PREDICATE = f"text ~ '[{cjk._CJK_CLASS}]'"

DDL = """
CREATE SCHEMA IF NOT EXISTS agentlog;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE IF NOT EXISTS agentlog.hosts(
  host text PRIMARY KEY CHECK (host ~ '^[A-Za-z0-9._-]{1,128}$'),
  owner name NOT NULL DEFAULT current_user,
  label text,
  created_at timestamptz NOT NULL DEFAULT now(),
  head_seq bigint NOT NULL DEFAULT 0,
  head_hash bytea NOT NULL DEFAULT decode(repeat('00', 32), 'hex'),
  synced_at timestamptz
);
CREATE TABLE IF NOT EXISTS agentlog.records(
  host text NOT NULL,  -- no FK: its per-row check halved sync; a batch locks its host row
  seq bigint NOT NULL CHECK (seq > 0),
  hash bytea NOT NULL CHECK (length(hash) = 32),
  value bytea NOT NULL,
  PRIMARY KEY (host, seq)
);
CREATE TABLE IF NOT EXISTS agentlog.projection(
  host text PRIMARY KEY,
  last_seq bigint NOT NULL DEFAULT 0,
  last_hash text NOT NULL DEFAULT '',
  schema_version int NOT NULL,
  parser_version text NOT NULL,
  coverage jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS agentlog.documents(
  rid bigserial UNIQUE,
  host text NOT NULL,
  id text NOT NULL,
  kind text NOT NULL, agent text NOT NULL, at bigint NOT NULL,
  project text, session text, job text, run text, message text, cursor text,
  conversation text, role text, tool text, subagent text, subagent_name text, title text,
  archived int NOT NULL DEFAULT 0, seq bigint, ord bigint, source text, sender text,
  extra text,
  text text NOT NULL,
  tsv tsvector NOT NULL,
  PRIMARY KEY (host, id)
);
CREATE INDEX IF NOT EXISTS documents_tsv ON agentlog.documents USING gin (tsv);
CREATE INDEX IF NOT EXISTS documents_cjk_trgm ON agentlog.documents USING gin (text gin_trgm_ops)
  WHERE {cjk};
CREATE INDEX IF NOT EXISTS documents_at ON agentlog.documents (at DESC, rid DESC);
CREATE INDEX IF NOT EXISTS documents_conversation
  ON agentlog.documents (conversation, at, ord, rid);
CREATE INDEX IF NOT EXISTS documents_session ON agentlog.documents (session);
CREATE INDEX IF NOT EXISTS documents_id ON agentlog.documents (id);
CREATE INDEX IF NOT EXISTS documents_project ON agentlog.documents (project, at);
CREATE TABLE IF NOT EXISTS agentlog.aliases(
  host text NOT NULL, alias text NOT NULL, session text NOT NULL, agent text NOT NULL,
  at bigint NOT NULL,
  PRIMARY KEY (host, alias, session)
);
CREATE INDEX IF NOT EXISTS aliases_alias ON agentlog.aliases (alias);
CREATE TABLE IF NOT EXISTS agentlog.rank_terms(
  term text PRIMARY KEY, s float8 NOT NULL, at bigint NOT NULL, rid bigint NOT NULL);
CREATE TABLE IF NOT EXISTS agentlog.rank_champions(
  term text NOT NULL, rid bigint NOT NULL, s float8 NOT NULL, at bigint NOT NULL,
  PRIMARY KEY (term, rid));
CREATE INDEX IF NOT EXISTS rank_champions_rid ON agentlog.rank_champions (rid);
CREATE INDEX IF NOT EXISTS rank_champions_key
  ON agentlog.rank_champions (term, s DESC, at DESC, rid DESC);
"""


DDL = DDL.replace("{cjk}", CJK_PREDICATE)


# The projection's writes, run as the schema owner (SECURITY DEFINER, search_path pinned):
# a writer holds SELECT only on the derived tables, so it can neither write another host's
# rows nor take a lock above ACCESS SHARE that would stall searches. Every function first
# checks that the session's login role may act for the host's owner (`may_act`).
_TYPES = {"at": "bigint", "archived": "int", "seq": "bigint", "ord": "bigint"}
_COLS = ", ".join(COLUMNS)
_DEF = ("SECURITY DEFINER SET search_path = pg_catalog, pg_temp")
WRITES = f"""
CREATE OR REPLACE FUNCTION agentlog.must_act(p_host text) RETURNS void
LANGUAGE plpgsql STABLE {_DEF} AS $f$
BEGIN
  IF NOT agentlog.may_act(p_host) THEN
    RAISE EXCEPTION 'agentlog: role % may not write the projection of host %',
      session_user, p_host USING ERRCODE = 'insufficient_privilege';
  END IF;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.put_documents(p_host text, p_docs jsonb)
RETURNS SETOF bigint LANGUAGE sql {_DEF} AS $f$
  SELECT agentlog.must_act(p_host);
  INSERT INTO agentlog.documents(host, {_COLS}, tsv)
  SELECT p_host, {_COLS}, to_tsvector('simple', r.words) FROM jsonb_to_recordset(p_docs)
    AS r({", ".join(f"{c} {_TYPES.get(c, 'text')}" for c in COLUMNS)}, words text)
  ON CONFLICT (host, id) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c != "id")}, tsv = EXCLUDED.tsv
  RETURNING rid
$f$;
CREATE OR REPLACE FUNCTION agentlog.drop_documents(p_host text, p_ids text[])
RETURNS SETOF bigint LANGUAGE sql {_DEF} AS $f$
  SELECT agentlog.must_act(p_host);
  DELETE FROM agentlog.documents WHERE host = p_host AND id = ANY(p_ids) RETURNING rid
$f$;
CREATE OR REPLACE FUNCTION agentlog.set_alias(p_host text, p_alias text, p_session text,
  p_agent text, p_at bigint) RETURNS void LANGUAGE plpgsql {_DEF} AS $f$
BEGIN
  PERFORM agentlog.must_act(p_host);
  IF p_agent IS NULL THEN
    DELETE FROM agentlog.aliases WHERE host = p_host AND alias = p_alias
      AND session = p_session;
  ELSE
    INSERT INTO agentlog.aliases(host, alias, session, agent, at)
      VALUES (p_host, p_alias, p_session, p_agent, p_at) ON CONFLICT (host, alias, session)
      DO UPDATE SET agent = EXCLUDED.agent, at = EXCLUDED.at;
  END IF;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.drop_host(p_host text, p_schema int, p_parser text)
RETURNS void LANGUAGE plpgsql {_DEF} AS $f$
BEGIN
  PERFORM agentlog.must_act(p_host);
  DELETE FROM agentlog.rank_champions WHERE rid IN (SELECT rid FROM agentlog.documents
                                                    WHERE host = p_host);
  DELETE FROM agentlog.documents WHERE host = p_host;
  DELETE FROM agentlog.aliases WHERE host = p_host;
  INSERT INTO agentlog.projection(host, last_seq, last_hash, schema_version, parser_version)
    VALUES (p_host, 0, '', p_schema, p_parser) ON CONFLICT (host) DO UPDATE SET
    last_seq = 0, last_hash = '', schema_version = EXCLUDED.schema_version,
    parser_version = EXCLUDED.parser_version, coverage = '{{}}', updated_at = now();
END $f$;
CREATE OR REPLACE FUNCTION agentlog.checkpoint(p_host text) RETURNS bigint
LANGUAGE plpgsql {_DEF} AS $f$
DECLARE got bigint;
BEGIN
  PERFORM agentlog.must_act(p_host);
  SELECT last_seq INTO got FROM agentlog.projection WHERE host = p_host FOR UPDATE;
  RETURN got;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.advance(p_host text, p_seq bigint, p_hash text,
  p_coverage jsonb) RETURNS void LANGUAGE plpgsql {_DEF} AS $f$
BEGIN
  PERFORM agentlog.must_act(p_host);
  UPDATE agentlog.projection SET last_seq = p_seq, last_hash = p_hash,
    coverage = p_coverage, updated_at = now() WHERE host = p_host;
END $f$;
CREATE OR REPLACE FUNCTION agentlog.projector_lock(p_host text, p_take boolean)
RETURNS boolean LANGUAGE plpgsql {_DEF} AS $f$
BEGIN
  PERFORM agentlog.must_act(p_host);
  IF NOT p_take THEN  -- the row, committed before it is locked
    INSERT INTO agentlog.projector_locks(host) VALUES (p_host) ON CONFLICT (host) DO NOTHING;
    RETURN true;
  END IF;
  PERFORM 1 FROM agentlog.projector_locks WHERE host = p_host FOR UPDATE NOWAIT;
  RETURN FOUND;
EXCEPTION WHEN lock_not_available THEN
  RETURN false;
END $f$;
"""
PROJECTOR = ("agentlog.must_act(text)", "agentlog.put_documents(text, jsonb)",
             "agentlog.drop_documents(text, text[])",
             "agentlog.set_alias(text, text, text, text, bigint)",
             "agentlog.drop_host(text, int, text)", "agentlog.checkpoint(text)",
             "agentlog.advance(text, bigint, text, jsonb)",
             "agentlog.projector_lock(text, boolean)")
DERIVED = ("documents", "aliases", "projection", "projector_locks")
# what a writer holds on the derived tables (`team init`, and step 4 where writers exist)
WRITER_GRANTS = (
    f"REVOKE ALL ON FUNCTION {', '.join(PROJECTOR)} FROM PUBLIC;"
    f" REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {', '.join('agentlog.' + t for t in DERIVED)}"
    " FROM agentlog_writer;"
    " REVOKE USAGE ON SEQUENCE agentlog.documents_rid_seq FROM agentlog_writer;"
    f" GRANT EXECUTE ON FUNCTION {', '.join(PROJECTOR)} TO agentlog_writer; "
    + _rank.WRITER_GRANTS)


def exists(con: Any) -> bool:
    row = con.execute("SELECT to_regclass('agentlog.records'), to_regclass('agentlog.documents')"
                      ).fetchone()
    return row is not None and row[0] is not None and row[1] is not None


# (version, name, SQL): applied in order, never edited once released; a new step appends
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "tables and indexes", DDL),
    (2, "records hold a known record form whose hash is the hash column",
     "ALTER TABLE agentlog.records ADD CONSTRAINT records_form CHECK ("
     " get_byte(value, 0) IN (1, 240, 241) AND substring(value FROM 2 FOR 32) = hash);"),
    (3, "projector locks: a row a host's projector holds FOR UPDATE while it projects",
     "CREATE TABLE IF NOT EXISTS agentlog.projector_locks(host text PRIMARY KEY);"),
    (4, "derived data and champion lists written only through the schema owner's functions",
     _rank.FUNCTIONS + WRITES + "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE"
     f" rolname = 'agentlog_writer') THEN {WRITER_GRANTS} END IF; END $$;"),
    (5, "hosts and records written only through the schema owner's functions",
     _logsql.FUNCTIONS + "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE"
     f" rolname = 'agentlog_writer') THEN {_logsql.WRITER_GRANTS} END IF; END $$;"),
    (_bm25.STEP, "bm25 as FTS5 computes it: per document its FTS5 tokens, per host its"
     " statistics, champion lists with a certificate", _bm25.MIGRATION),
    (_deep.STEP, "deep lists of the commonest words, whose members carry each other's f",
     _deep.MIGRATION),
)
LATEST = MIGRATIONS[-1][0]
_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS agentlog.migrations(
  version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
"""


def version(con: Any) -> int:
    """The database's migration version (0: no agentlog schema; 1: made before migrations
    were recorded)."""
    # pg_class read by a query sees what committed before this statement; to_regclass
    # answers from the session's catalog snapshot, which may predate a concurrent first sync
    names = {str(r[0]) for r in con.execute(
        "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n"
        " ON n.oid = c.relnamespace WHERE n.nspname = 'agentlog'"
        " AND c.relname IN ('migrations', 'records')")}
    if "records" not in names:
        return 0
    if "migrations" not in names:
        return 1
    got = con.execute("SELECT max(version) FROM agentlog.migrations").fetchone()
    return int(got[0]) if got and got[0] is not None else 1


def ensure_schema(con: Any) -> list[int]:
    """Bring the schema to `LATEST` (in the caller's transaction); returns the versions
    applied. Serialized by a transaction-level advisory lock so two first syncs do not race;
    `TeamError` for a database a newer agentlog migrated."""
    from projections.errors import TeamError

    con.execute("SELECT pg_advisory_xact_lock(hashtext('agentlog.schema'))")
    have = version(con)
    if have > LATEST:
        raise TeamError(f"the team database is at schema version {have}, newer than this "
                        f"agentlog knows ({LATEST}): upgrade agentlog on this machine")
    applied = []
    for step, name, sql in MIGRATIONS:
        if step <= have and (step > 1 or have > 1):
            continue
        con.execute(sql)  # step 1 is all IF NOT EXISTS: safe to run again on a version 1
        if step == 1:  # (never later: a later step may drop what it makes)
            con.execute(_MIGRATIONS_TABLE)
            con.execute("INSERT INTO agentlog.migrations(version, name) VALUES (1, %s)"
                        " ON CONFLICT (version) DO NOTHING", (name,))
            if have < 1:
                applied.append(1)
            continue
        con.execute("INSERT INTO agentlog.migrations(version, name) VALUES (%s, %s)"
                    " ON CONFLICT (version) DO NOTHING", (step, name))
        applied.append(step)
    return applied
