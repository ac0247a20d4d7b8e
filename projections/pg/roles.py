"""Roles and row-level security of the team server, set up idempotently by `team init`.

- `agentlog_writer` (group): SELECT only on every table; it writes through the schema
  owner's SECURITY DEFINER functions, each acting only for the hosts its login role owns:
  register a host, append records that continue the host's chain and move its head,
  replace records by their forgotten forms (`logsql`), write the projection (`documents`,
  `aliases`, `projection`: derived data any projector rebuilds by replay; `schema.WRITES`)
  and keep the champion lists (`rank`). It can neither update nor delete a record, nor
  take a lock above ACCESS SHARE on any table (that needs a write privilege).
- `agentlog_reader` (group): SELECT only.
- one LOGIN role per machine (`agentlog_w_<name>`) and per searcher (`agentlog_r_<name>`),
  members of those groups, with a random password. The password is sent to the server only
  as a SCRAM-SHA-256 verifier computed here, so it never reaches the server's statement
  log; it is returned once, in the connection string to hand out.
Running `init_team` again re-applies grants and policies and changes no password unless
asked (`reset=True`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Any

from projections.pg import deep, logsql, schema
from projections.pg.conn import TeamError

WRITER = "agentlog_writer"
READER = "agentlog_reader"
_NAME = re.compile(r"^[a-z0-9_]{1,40}$")

# the derived tables a host's projector writes: readable by all, written only for the hosts
# the role owns (a writer cannot forge, edit or delete another host's search data)
_OWN = ("EXISTS (SELECT 1 FROM agentlog.hosts h WHERE h.host = {t}.host"
        " AND h.owner = current_user)")
_DERIVED_POLICIES = "\n".join(
    f"ALTER TABLE agentlog.{t} ENABLE ROW LEVEL SECURITY;\n"
    f"DROP POLICY IF EXISTS {t}_read ON agentlog.{t};\n"
    f"DROP POLICY IF EXISTS {t}_own ON agentlog.{t};\n"
    f"CREATE POLICY {t}_read ON agentlog.{t} FOR SELECT USING (true);\n"
    f"CREATE POLICY {t}_own ON agentlog.{t} FOR ALL TO {WRITER}"
    f" USING ({_OWN.format(t=t)}) WITH CHECK ({_OWN.format(t=t)});"
    for t in ("documents", "aliases", "projection", "projector_locks"))

_GRANTS = f"""
GRANT USAGE ON SCHEMA agentlog TO {WRITER}, {READER};
GRANT SELECT ON ALL TABLES IN SCHEMA agentlog TO {WRITER}, {READER};
{schema.WRITER_GRANTS}
ALTER TABLE agentlog.hosts ENABLE ROW LEVEL SECURITY;
ALTER TABLE agentlog.records ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS hosts_read ON agentlog.hosts;
DROP POLICY IF EXISTS records_read ON agentlog.records;
CREATE POLICY hosts_read ON agentlog.hosts FOR SELECT USING (true);
CREATE POLICY records_read ON agentlog.records FOR SELECT USING (true);
{_DERIVED_POLICIES}
{logsql.WRITER_GRANTS}
{deep.WRITER_GRANTS}
"""


@dataclass(frozen=True, slots=True)
class Issued:
    role: str
    kind: str  # "writer" | "reader"
    created: bool
    url: str | None  # with the new password; None when the password was left unchanged

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "kind": self.kind, "created": self.created, "url": self.url}


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677)."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    b64 = base64.b64encode
    return (f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}"
            f"${b64(stored_key).decode()}:{b64(server_key).decode()}")


def _role_exists(con: Any, name: str) -> bool:
    return con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is not None


def _with_credentials(url: str, user: str, password: str) -> str:
    """`url` with another user and password, everything else kept (sslmode, sslrootcert,
    options and any other parameter: a handed-out URL keeps the owner's TLS settings)."""
    from urllib.parse import quote, urlsplit, urlunsplit

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    if "://" not in url:
        return make_conninfo(url, user=user, password=password)
    parts = urlsplit(url)
    d = conninfo_to_dict(url)
    hostport = parts.netloc.rsplit("@", 1)[-1] or f"{d.get('host') or 'localhost'}:" \
        f"{d.get('port') or '5432'}"
    path = parts.path if parts.path not in ("", "/") else f"/{d.get('dbname') or user}"
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{hostport}"
    return urlunsplit((parts.scheme, netloc, path, parts.query, parts.fragment))


def init_team(con: Any, url: str, writers: list[str], readers: list[str], *,
              reset: bool = False) -> list[Issued]:
    """Schema, group roles, grants, policies and the named login roles; commits."""
    from psycopg import sql

    for name in [*writers, *readers]:
        if not _NAME.match(name):
            raise TeamError(f"role name {name!r}: use 1-40 of a-z, 0-9 and _")
    try:
        schema.ensure_schema(con)
        for group in (WRITER, READER):
            if not _role_exists(con, group):
                con.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(group)))
        con.execute(_GRANTS)
        issued: list[Issued] = []
        for kind, prefix, group, names in (("writer", "agentlog_w_", WRITER, writers),
                                           ("reader", "agentlog_r_", READER, readers)):
            for name in names:
                role = prefix + name
                exists = _role_exists(con, role)
                password = secrets.token_urlsafe(24) if (reset or not exists) else None
                ident = sql.Identifier(role)
                if not exists:
                    con.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
                if password is not None:
                    con.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                        ident, sql.Literal(scram_verifier(password))))
                con.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), ident))
                issued.append(Issued(role, kind, not exists, None if password is None else
                                     _with_credentials(url, role, password)))
        con.commit()
        return issued
    except BaseException:
        con.rollback()
        raise
