"""The search filters are described once (`filters.conditions`): history.db's and the team
server's conditions are the same list, in the same order, but for each engine's placeholder
and its condition of the session filter (its own tables), and every placeholder has its
parameter."""

from __future__ import annotations

import itertools

from projections.filters import SESSION_SQLITE, Filters
from projections.pg.query import _SESSION, _where

NAMES = ("project", "session", "job", "agent", "kind", "since", "until")


def _all_filters() -> list[Filters]:
    out = []
    for given in itertools.product([False, True], repeat=len(NAMES) + 1):
        kw = {n: (5 if n in ("since", "until") else f"a {n}")
              for n, g in zip(NAMES, given, strict=False) if g}
        out.append(Filters(include_archived=given[-1], **kw))
    return out


def test_both_engines_ask_the_same_conditions() -> None:
    for f in _all_filters():
        sql, params = f.where("d")
        conds, pg_params = _where(f, None)
        lite = sql.split(" AND (d.session")[0] if f.session else sql
        session = SESSION_SQLITE.format(a="d")
        assert sql.count("?") == len(params)
        assert sum(c.count("%s") for c in conds) == len(pg_params)
        assert pg_params == params
        mine = [c.replace("%s", "?") for c in conds if c != _SESSION.format(a="d")]
        theirs = [c for c in sql.split(" AND ") if c != "1"]
        if f.session:
            assert _SESSION.format(a="d") in conds and session in sql
            theirs = [c for c in sql.replace(session, "SESSION").split(" AND ")
                      if c != "SESSION"]
        assert mine == theirs, lite
    conds, params = _where(Filters(), "h")
    assert (conds, params) == (["d.host = %s"], ["h"])
