"""Property tests: whatever the bytes and however they arrive, every byte is captured."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import EventLog
from readers.capture import Capturer, Options
from readers.restore import restore
from tests.capture_helpers import assert_contiguous, roots_of

_lines = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")),  # lone surrogates
    st.sampled_from([b"\n", b"\r\n", b"{", b'{"type":"user"}\n', b"\xff\xfe\x00", b"\xed\xa0\x80"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_lines, min_size=1, max_size=12), read_max=st.sampled_from([7, 64, 4096]),
       ticks=st.lists(st.integers(0, 3), min_size=12, max_size=12))
def test_random_appends_and_chunkings_restore_exactly(
    pieces: list[bytes], read_max: int, ticks: list[int]
) -> None:
    import readers.capture_files as cf

    old = cf.READ_MAX
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "codex"
        f = root / "sessions" / "2025" / "rollout-x.jsonl"
        f.parent.mkdir(parents=True)
        f.write_bytes(b"")
        log = EventLog(base / "log")
        try:
            cf.poll_append.__kwdefaults__["read_max"] = read_max
            eng = Capturer(log, roots_of(codex=root), Options(settle_s=3600))
            for piece, n in zip(pieces, ticks, strict=False):
                with open(f, "ab") as fh:
                    fh.write(piece)
                for _ in range(n):
                    eng.tick()
            eng.flush()
            # a final capture with settle 0 takes the unterminated tail too
            Capturer(log, roots_of(codex=root), Options(settle_s=0)).run_once()
            restore(log, base / "out")
            assert (base / "out" / "codex" / "sessions" / "2025" / "rollout-x.jsonl"
                    ).read_bytes() == f.read_bytes()
            assert_contiguous(log)
        finally:
            cf.poll_append.__kwdefaults__["read_max"] = old
            log.close()
