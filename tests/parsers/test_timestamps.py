"""`parse_common.iso_ms`'s shortcut for stamps ending in "Z" (read by `datetime.fromisoformat`
itself, without the rewrite to "+00:00") gives exactly what the general path gives, to the
millisecond, for valid and invalid stamps alike (the parsers' records and so history.db must
not change with it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from readers import parse_common

_general = parse_common.general_ms  # the path `iso_ms` takes for any other shape


EDGES = [
    "2025-09-16T06:12:37.392Z", "2025-09-16T06:12:37Z", "2025-09-16T06:12:37.123456Z",
    "1970-01-01T00:00:00.001Z", "1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z",
    "9999-12-31T23:59:59.999Z", "2024-02-29T12:00:00.500Z", "2025-02-29T12:00:00.500Z",
    "2025-13-16T06:12:37.392Z", "2025-09-16T24:12:37.392Z", "2025-09-16T06:60:37.392Z",
    "2025-09-16T06:12:60.392Z", "2025-09-16T06:12:37.3a2Z", "2025-09-16T06:+1:37.392Z",
    "2025-09-16T06:12:37,392Z", "２０２５-09-16T06:12:37.392Z", "2025-09-16T0６:12:37.392Z",
    "2025-09-16t06:12:37.392Z", "2025-09-16T06:12:37.392z", "+025-09-16T06:12:37.392Z",
    "2025-09-16T-6:12:37.392Z", "2025_09_16T06:12:37.392Z", "2025-09-16T06:12:37.3924Z",
    "2025-09-16T06:12:37.392+00:00", "2025-09-16T06:12:37+01:00", "2025-09-16 06:12:37.392Z",
]


def test_edge_stamps_match_the_general_path() -> None:
    for value in EDGES:
        assert parse_common.iso_ms(value) == _general(value), value
    assert parse_common.iso_ms("2025-09-16T06:12:37.392Z") == 1758003157392


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 10000), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25),
       st.integers(0, 61), st.integers(0, 61),
       st.sampled_from(["", ".{:03d}", ".{:06d}", ".{:d}"]), st.integers(0, 999999))
def test_random_stamps_match_the_general_path(
    y: int, mo: int, d: int, h: int, mi: int, s: int, frac: str, f: int
) -> None:
    value = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac.format(f)}Z"
    assert parse_common.iso_ms(value) == _general(value), value


@given(st.text(min_size=10, max_size=40))
def test_any_text_matches_the_general_path(value: str) -> None:
    assert parse_common.iso_ms(value) == _general(value)


@given(st.text(min_size=9, max_size=39))
def test_any_text_ending_in_z_matches_the_general_path(value: str) -> None:
    value += "Z"
    assert parse_common.iso_ms(value) == _general(value)
