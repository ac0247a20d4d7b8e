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
- `rank_terms`, `rank_champions`: the champion lists of common words (`rank`), a cache,
  written only by the schema owner's SECURITY DEFINER upkeep functions (step 4).
- `migrations(version, name, applied_at)`: which of `MIGRATIONS` the database has had.
- `projector_locks(host)`: the row a host's projector locks (FOR UPDATE) while it projects;
  only a role that may update the row can take it (row-level security: its own hosts).

Versioned migrations: `MIGRATIONS` is an ordered list of steps; `ensure_schema` applies
those after the database's version, each recorded in `migrations`, in the caller's
transaction under a transaction-level advisory lock (a second process waits, then finds
nothing to do). A database made before the table existed is version 1 (its tables are
step 1's, which is all `IF NOT EXISTS`). A database newer than this agentlog is refused.
"""

from __future__ import annotations

from typing import Any

from projections import cjk
from projections.pg import rank as _rank

SCHEMA = "agentlog"
# the projection's layout: a projector replays a host projected under another version
# (2: CJK bigrams in `tsv`)
SCHEMA_VERSION = 2
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
    (4, "champion lists kept only by the schema owner's upkeep functions",
     _rank.FUNCTIONS + "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname ="
     f" 'agentlog_writer') THEN {_rank.WRITER_GRANTS} END IF; END $$;"),
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
        if step <= have and step > 1:
            continue
        con.execute(sql)  # step 1 is all IF NOT EXISTS: always safe to run again
        if step == 1:
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
