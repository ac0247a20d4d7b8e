"""What the parsers could not read, per source: the damage a capture reports at once.

`unknown_types` counts every record a parser set aside, by kind. Most kinds are records of
a type this version does not know (a newer agent); the kinds below are damage — bytes that
are not JSON, a truncated file, values of the wrong type, a parser that failed — and are
what `agentlog capture` names (`damage_counts` before and after its catch-up, the
difference being what that capture brought). `audit` shows every kind.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

# the last part of a damage kind (`<layout>:<part>`), and the prefixes of the appliers' own
DAMAGE_PARTS = frozenset({"undecodable", "shape", "row-undecodable", "error", "layout"})
DAMAGE_PREFIXES = ("chunk-undecodable:", "parser-error:")


def is_damage(kind: str) -> bool:
    return kind.startswith(DAMAGE_PREFIXES) or kind.rsplit(":", 1)[-1] in DAMAGE_PARTS


def damage_counts(db_path: Path, sources: Iterable[str]) -> dict[str, dict[str, int]]:
    """{source: {damage kind: count}} of `sources` (nothing when history.db is absent)."""
    wanted = sorted(set(sources))
    if not wanted or not Path(db_path).exists():
        return {}
    out: dict[str, dict[str, int]] = {}
    con = sqlite3.connect(f"file:{Path(db_path).absolute()}?mode=ro", uri=True, timeout=5)
    try:
        for i in range(0, len(wanted), 500):
            part = wanted[i:i + 500]
            rows = con.execute(
                "SELECT source, type, count FROM unknown_types WHERE source IN "
                f"({','.join('?' * len(part))})", part).fetchall()
            for source, kind, count in rows:
                if is_damage(kind):
                    out.setdefault(source, {})[kind] = int(count)
    except sqlite3.Error:
        return {}
    finally:
        con.close()
    return out


def paths_of(db_path: Path, sources: Iterable[str]) -> dict[str, str]:
    """{source: its file's path (root joined with its path)}, as history.db knows them."""
    wanted = sorted(set(sources))
    if not wanted or not Path(db_path).exists():
        return {}
    con = sqlite3.connect(f"file:{Path(db_path).absolute()}?mode=ro", uri=True, timeout=5)
    try:
        rows = con.execute("SELECT source, root, path FROM sources WHERE source IN "
                           f"({','.join('?' * len(wanted))})", wanted).fetchall()
    except sqlite3.Error:
        return {}
    finally:
        con.close()
    return {s: os.path.join(root, path) if root else path for s, root, path in rows}


def new_damage(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]
               ) -> dict[str, dict[str, int]]:
    """What `after` counts beyond `before`, per source and kind."""
    out: dict[str, dict[str, int]] = {}
    for source, kinds in after.items():
        old = before.get(source, {})
        grown = {k: n - old.get(k, 0) for k, n in kinds.items() if n > old.get(k, 0)}
        if grown:
            out[source] = grown
    return out
