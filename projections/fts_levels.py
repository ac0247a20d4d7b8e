"""A rebuilt full-text index's one segment, lifted out of the catch-ups' merges (issue 32).

FTS5 keeps an index as segments on levels (its structure record, row 10 of `<table>_data`).
A catch-up batch writes one small segment on level 0; four segments on a level are merged
into one on the next level ('automerge' 4), a little at a time: each time 64 leaf pages were
written, 64 x (number of levels) pages of merging. A rebuild leaves each index in one
segment on level 1 (`fts_bulk`'s closing 'optimize'), so after four level-0 merges the
catch-ups' segments reached level 1 and the merge took the rebuild's segment in: on the 1 GB
bench home 42,000 pages, rewritten a few hundred pages at a time by every +1 session that
crossed a 64-page mark (a 200 KB session paid 0.2-0.3 s of merging and 30 MB of writes in
one of two or three +1s), then again one level up, and so on.

`lift` moves that lone segment to level `LEVEL`, empty levels below it: the catch-ups'
segments merge among themselves on levels 0..LEVEL-1 (small merges), and reach it only once
level LEVEL-1 holds three more segments, about 4^LEVEL level-0 segments later. Nothing else
changes: a segment's level is only where the merges look; a query reads every segment of
every level, the rebuild's one oldest (the highest level) as before.

The record's layout (SQLite 3.40, fts5_index.c): a 4-byte cookie, then varints nLevel,
nSegment, nWriteCounter, then for each level nMerge, nSeg and for each segment iSegid,
pgnoFirst, pgnoLast. An index in any other shape or layout (a newer SQLite's second record
version, a merge in progress, more than one segment) is left as it is: `lift` re-encodes the
record it read and writes only when that gives back the same bytes.
"""

from __future__ import annotations

import sqlite3

LEVEL = 8  # 4^8 level-0 segments (one per catch-up batch) before a merge reaches it
STRUCTURE_ID = 10  # FTS5_STRUCTURE_ROWID


def lift(con: sqlite3.Connection, table: str, level: int = LEVEL) -> bool:
    """Move `table`'s lone segment to `level` inside the caller's transaction; whether it
    moved (False: another shape or layout, or already there or higher)."""
    raw = _record(con, table)
    parsed = None if raw is None else _parse(raw)
    if parsed is None:
        return False
    cookie, write_counter, levels = parsed
    filled = [i for i, (merging, segs) in enumerate(levels) if segs]
    if len(filled) != 1 or filled[0] >= level:
        return False
    merging, segs = levels[filled[0]]
    if merging or len(segs) != 1:
        return False
    new: list[Level] = [(0, []) for _ in range(level)] + [(0, segs)]
    con.execute(f"UPDATE {table}_data SET block = ? WHERE id = ?",
                (_encode(cookie, write_counter, new), STRUCTURE_ID))
    return True


Level = tuple[int, list[tuple[int, int, int]]]  # (nMerge, [(iSegid, pgnoFirst, pgnoLast)])


def read(con: sqlite3.Connection, table: str) -> list[Level] | None:
    """`table`'s levels as its structure record holds them; [] before its first segment,
    None for a record in another layout."""
    raw = _record(con, table)
    if raw is None:
        return []
    parsed = _parse(raw)
    return None if parsed is None else parsed[2]


def _record(con: sqlite3.Connection, table: str) -> bytes | None:
    row = con.execute(f"SELECT block FROM {table}_data WHERE id = ?",
                      (STRUCTURE_ID,)).fetchone()
    return None if row is None else bytes(row[0])


def _parse(raw: bytes) -> tuple[bytes, int, list[Level]] | None:
    """(cookie, write counter, levels) of a structure record in the layout above, or None
    when the bytes are not exactly that layout (re-encoding must give them back)."""
    try:
        i = 4
        n_levels, i = _get(raw, i)
        n_segments, i = _get(raw, i)
        write_counter, i = _get(raw, i)
        levels: list[Level] = []
        for _ in range(n_levels):
            merging, i = _get(raw, i)
            n_seg, i = _get(raw, i)
            segs = []
            for _ in range(n_seg):
                segid, i = _get(raw, i)
                first, i = _get(raw, i)
                last, i = _get(raw, i)
                segs.append((segid, first, last))
            levels.append((merging, segs))
    except IndexError:
        return None
    if sum(len(s) for _, s in levels) != n_segments:
        return None
    cookie = raw[:4]
    if _encode(cookie, write_counter, levels) != raw:
        return None
    return cookie, write_counter, levels


def _encode(cookie: bytes, write_counter: int, levels: list[Level]) -> bytes:
    out = bytearray(cookie)
    out += _put(len(levels)) + _put(sum(len(s) for _, s in levels)) + _put(write_counter)
    for merging, segs in levels:
        out += _put(merging) + _put(len(segs))
        for seg in segs:
            for v in seg:
                out += _put(v)
    return bytes(out)


def _get(b: bytes, i: int) -> tuple[int, int]:
    """SQLite's varint at `b[i:]`: (value, next offset)."""
    v = 0
    for k in range(9):
        c = b[i]
        i += 1
        if k == 8:
            return (v << 8) | c, i
        v = (v << 7) | (c & 0x7F)
        if not c & 0x80:
            return v, i
    return v, i  # (unreachable: the 9th byte returns)


def _put(v: int) -> bytes:
    """SQLite's varint of 0 <= v < 2^56 (7 bits a byte, high bit: more follow)."""
    if not 0 <= v < 1 << 56:
        raise ValueError(f"varint out of range: {v}")
    groups = [v & 0x7F]
    v >>= 7
    while v:
        groups.append(0x80 | (v & 0x7F))
        v >>= 7
    return bytes(reversed(groups))
