"""Validation of search parameters shared by every front end (MCP, HTTP, CLI).

Promises: every invalid value raises `QueryError` naming its parameter; unknown filter keys
are errors, never ignored; time bounds are inclusive epoch milliseconds accepted as an
integer, a string of decimal digits, or ISO-8601 with a timezone. A hit's short reference
(`hit_ref`, `@<row>.<check>`) names its document by row id with 12 bits of its id's CRC, so
a reference made before history.db was renumbered (`reindex`) is refused, never followed to
another document (`parse_ref`, `ref_holds`).
"""

from __future__ import annotations

import re
from binascii import crc32
from collections.abc import Mapping
from typing import Any, NamedTuple

from projections.errors import BadId, QueryError
from readers import registry

AGENTS = registry.search_agents()  # readers/registry.py, then "other"
KINDS = ("message", "run", "decision", "transcript", "approval", "progress", "report")
FILTER_KEYS = ("project", "session", "job", "agent", "kind", "since", "until", "include_archived")
DEFAULT_LIMIT = 10
MAX_LIMIT = 50


class Filters(NamedTuple):  # not a dataclass: `dataclasses` costs the search path start-up
    project: str | None = None
    session: str | None = None
    job: str | None = None
    agent: str | None = None
    kind: str | None = None
    since: int | None = None
    until: int | None = None
    include_archived: bool = True  # search reaches archived sessions; hits say `archived`

    def where(self, alias: str = "d") -> tuple[str, list[Any]]:
        """history.db's SQL conditions (joined with AND, never empty) and their parameters."""
        conds, params = conditions(self, alias)
        return (" AND ".join(conds) or "1"), params


# history.db's condition of the `session` filter: a session id, or a peer identity: its bound
# sessions, what it sent itself and what was addressed to it (`recipients`). An engine's own
# takes the session as its parameter 4 times, `{a}` the documents' alias.
SESSION_SQLITE = ("({a}.session = ? OR {a}.session IN"
                  " (SELECT session FROM aliases WHERE alias = ?) OR {a}.sender = ?"
                  " OR {a}.rowid IN (SELECT doc FROM recipients WHERE alias = ?))")


def conditions(f: Filters, alias: str = "d", ph: str = "?",
               session: str = SESSION_SQLITE) -> tuple[list[str], list[Any]]:
    """The SQL conditions of the search filters `f` on documents `alias`, and their
    parameters, for every engine: `ph` its placeholder ("?" SQLite, "%s" PostgreSQL),
    `session` its condition of the session filter (see `SESSION_SQLITE`)."""
    conds: list[str] = []
    params: list[Any] = []
    if not f.include_archived:
        conds.append(f"{alias}.archived = 0")
    for col in ("project", "job", "agent", "kind"):
        value = getattr(f, col)
        if value is not None:
            conds.append(f"{alias}.{col} = {ph}")
            params.append(value)
    if f.session is not None:
        conds.append(session.format(a=alias))
        params += [f.session, f.session, f.session, f.session]
    if f.since is not None:
        conds.append(f"{alias}.at >= {ph}")
        params.append(f.since)
    if f.until is not None:
        conds.append(f"{alias}.at <= {ph}")
        params.append(f.until)
    return conds, params


MAX_TIME_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: SQLite and datetime agree


def parse_time(value: Any, param: str) -> int:
    """Epoch ms from an int, a decimal string, or ISO-8601 with a timezone, within
    0..`MAX_TIME_MS` (a larger number is bad input, never an overflow)."""
    ms = _parse_time(value, param)
    if not 0 <= ms <= MAX_TIME_MS:
        raise QueryError(param, f"epoch milliseconds must be 0..{MAX_TIME_MS}, got {ms}")
    return ms


def _parse_time(value: Any, param: str) -> int:
    if isinstance(value, bool):
        raise QueryError(param, "expected epoch milliseconds or ISO-8601 with a timezone")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        if value < 0:
            raise QueryError(param, f"epoch milliseconds must be >= 0, got {value}")
        return value
    if isinstance(value, str):
        s = value.strip()
        if s.isdigit() and s.isascii():
            if len(s) > 20:
                raise QueryError(param, f"epoch milliseconds must be 0..{MAX_TIME_MS}")
            return int(s)
        try:
            import datetime as dt  # only for ISO input (start-up time)

            parsed = dt.datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
        except ValueError:
            raise QueryError(
                param, f"not epoch milliseconds or ISO-8601 with a timezone: {value!r}"
            ) from None
        if parsed.tzinfo is None:
            raise QueryError(param, f"ISO-8601 time needs a timezone: {value!r}")
        try:
            return int(parsed.timestamp() * 1000)
        except (OverflowError, ValueError, OSError):
            raise QueryError(param, f"time out of range: {value!r}") from None
    raise QueryError(param, "expected epoch milliseconds or ISO-8601 with a timezone")


def _text(value: Any, param: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise QueryError(param, "must be a non-empty string")
    if len(value) > 4096:
        raise QueryError(param, "longer than 4096 characters")
    return value


def parse_filters(filters: Mapping[str, Any] | None) -> Filters:
    if filters is None:
        return Filters()
    if not isinstance(filters, Mapping):
        raise QueryError("filters", "must be an object")
    unknown = sorted(str(k) for k in filters if k not in FILTER_KEYS)
    if unknown:
        raise QueryError(unknown[0], f"unknown filter (known: {', '.join(FILTER_KEYS)})")
    got = {k: v for k, v in filters.items() if v is not None}
    out: dict[str, Any] = {}
    for key in ("project", "session", "job"):
        if key in got:
            out[key] = _text(got[key], key)
    if "project" in out and len(out["project"]) > 1 and out["project"].endswith("/"):
        # a canonical project path has no trailing slash ("/home/me/app/" means "/home/me/app")
        out["project"] = out["project"].rstrip("/") or "/"
    if "project" in out:
        from projections.project_key import project_key

        out["project"] = project_key(out["project"])  # C:\Proj and c:\proj: one project
    if "agent" in got:
        if got["agent"] not in AGENTS:
            raise QueryError("agent", f"must be one of {', '.join(AGENTS)}; got {got['agent']!r}")
        out["agent"] = got["agent"]
    if "kind" in got:
        if got["kind"] not in KINDS:
            raise QueryError("kind", f"must be one of {', '.join(KINDS)}; got {got['kind']!r}")
        out["kind"] = got["kind"]
    for key in ("since", "until"):
        if key in got:
            out[key] = parse_time(got[key], key)
    if "since" in out and "until" in out and out["since"] > out["until"]:
        raise QueryError("since", "must be <= until")
    if "include_archived" in got:
        flag = got["include_archived"]
        if isinstance(flag, str) and flag in ("true", "false"):
            flag = flag == "true"
        if not isinstance(flag, bool):
            raise QueryError("include_archived", "must be true or false")
        out["include_archived"] = flag
    return Filters(**out)


def parse_limit(
    limit: Any, *, param: str = "limit", default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT
) -> int:
    """An integer 1..maximum (a string of digits is accepted, for HTTP)."""
    if limit is None:
        return default
    if isinstance(limit, bool):
        raise QueryError(param, f"must be an integer 1..{maximum}")
    if isinstance(limit, str):
        s = limit.strip()
        if not (s.isdigit() and s.isascii()):
            raise QueryError(param, f"must be an integer 1..{maximum}; got {limit!r}")
        limit = int(s)
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise QueryError(param, f"must be an integer 1..{maximum}; got {limit!r}")
    return limit


def conversation_page(
    conversation_id: Any, after: Any, limit: int | str | None
) -> tuple[int, tuple[int, int, int] | None]:
    """The checked arguments of a conversation page (every engine): (page size, the
    (at, ord, rowid) cursor to start after, or None). BadId / QueryError name what is wrong."""
    if (not isinstance(conversation_id, str) or not conversation_id.strip()
            or len(conversation_id) > 4096 or re.search(r"[\x00-\x1f\x7f]", conversation_id)):
        raise BadId(str(conversation_id), "malformed conversation id")
    n = parse_limit(limit, default=20, maximum=100)
    if after is None:
        return n, None
    m = re.fullmatch(r"(-?\d{1,19}):(-?\d{1,19}):(\d{1,19})", after.strip()) if isinstance(
        after, str) else None
    if m is None:
        raise QueryError("after", f"must be a cursor returned as `next`; got {after!r}")
    return n, (int(m.group(1)), int(m.group(2)), int(m.group(3)))


_REF = re.compile(r"@(\d{1,19})\.([0-9a-f]{3})")
CONTEXT_BEFORE = 2  # a page opened at a hit's reference starts this many items before it


def hit_ref(row_id: int, doc_id: str) -> str:
    """A hit's short reference: `@<row id>.<check>` (~6 tokens against ~25-40 for its id);
    `get_conversation` opens it at the hit. Valid until history.db is renumbered."""
    return f"@{row_id}.{_check(doc_id)}"


def _check(doc_id: str) -> str:
    return f"{crc32(doc_id.encode('utf-8', 'surrogatepass')) & 0xFFF:03x}"


def parse_ref(ident: str) -> tuple[int, str] | None:
    """(row id, check) of a reference made by `hit_ref`, or None when `ident` is not one."""
    m = _REF.fullmatch(ident.strip())
    return (int(m.group(1)), m.group(2)) if m else None


def ref_holds(check: str, doc_id: str) -> bool:
    """Whether the document now at the reference's row is the one it was made for."""
    return _check(doc_id) == check


def stale_ref(ident: str) -> QueryError:
    return QueryError("id", f"{ident} is a hit reference from before history was rebuilt"
                      " (reindex): search again for a current one")
