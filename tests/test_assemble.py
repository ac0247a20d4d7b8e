"""`projections.assemble.assemble` (lines of captured chunks, split in one C call) gives the
same lines, offsets, unfinished tail, skipping flag and oversized count as the plain
line-by-line reference below, for any chunk sequence, partial line and line bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections import assemble


def _reference(
    partial: bytes, skipping: int, offset: int, data: bytes, limit: int
) -> tuple[list[tuple[int, bytes]], bytes, int, int]:
    lines: list[tuple[int, bytes]] = []
    oversized, pos, line_start = 0, 0, offset - len(partial)
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        piece = data[pos:nl]
        if skipping:
            skipping = 0
        elif len(partial) + len(piece) > limit:
            oversized += 1
        else:
            lines.append((line_start, partial + piece))
        partial, pos = b"", nl + 1
        line_start = offset + pos
    tail = data[pos:]
    if skipping:
        partial = b""
    elif len(partial) + len(tail) > limit:
        oversized, skipping, partial = oversized + 1, 1, b""
    else:
        partial = partial + tail
    return lines, partial, skipping, oversized


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab\n", max_size=30).map(str.encode), max_size=6),
       st.integers(1, 12))
def test_chunks_assemble_as_the_reference(chunks: list[bytes], limit: int) -> None:
    mp = pytest.MonkeyPatch()
    mp.setattr(assemble, "MAX_LINE", limit)
    try:
        got = ref = (b"", 0)
        offset = 0
        for data in chunks:
            a = assemble.assemble(got[0], got[1], offset, data)
            b = _reference(ref[0], ref[1], offset, data, limit)
            assert a == b
            got, ref = (a[1], a[2]), (b[1], b[2])
            offset += len(data)
    finally:
        mp.undo()


def test_lines_carry_their_start_offsets() -> None:
    lines, partial, skipping, oversized = assemble.assemble(b"ab", 0, 10, b"c\n\nde\nf")
    assert lines == [(8, b"abc"), (12, b""), (13, b"de")]
    assert (partial, skipping, oversized) == (b"f", 0, 0)
