"""Property tests: whatever the bytes and however they arrive, every byte is captured.

40 examples on a laptop, 200 under CI=true (tests/conftest.py `examples`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventlog import EventLog
from readers.capture import Capturer, Options
from readers.restore import restore
from tests.capture_helpers import assert_contiguous, chunk_map, roots_of
from tests.conftest import examples

_lines = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")),  # lone surrogates
    st.sampled_from([b"\n", b"\r\n", b"{", b'{"type":"user"}\n', b"\xff\xfe\x00", b"\xed\xa0\x80"]),
)


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_lines, min_size=1, max_size=12), read_max=st.sampled_from([7, 64, 4096]),
       ticks=st.lists(st.integers(0, 3), min_size=12, max_size=12))
def test_random_appends_and_chunkings_restore_exactly(
    pieces: list[bytes], read_max: int, ticks: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "codex"
        f = root / "sessions" / "2025" / "rollout-x.jsonl"
        f.parent.mkdir(parents=True)
        f.write_bytes(b"")
        log = EventLog(base / "log")
        try:
            eng = Capturer(log, roots_of(codex=root), Options(settle_s=3600, read_max=read_max))
            for piece, n in zip(pieces, ticks, strict=False):
                with open(f, "ab") as fh:
                    fh.write(piece)
                for _ in range(n):
                    eng.tick()
            eng.flush()
            # One final pass with settle 0 takes everything, the unterminated tail too.
            Capturer(log, roots_of(codex=root), Options(settle_s=0, read_max=read_max)).run_once()
            restore(log, base / "out")
            data = f.read_bytes()
            assert (base / "out" / "codex" / "sessions" / "2025" / "rollout-x.jsonl"
                    ).read_bytes() == data
            assert_contiguous(log)
            spans = [s for v in chunk_map(log).values() for s in v]
            # The read size is a real option: no chunk is longer than one read, so a file
            # longer than a read was written as more than one chunk.
            assert all(size <= read_max for _, size in spans)
            if len(data) > read_max:
                assert len(spans) > 1
        finally:
            log.close()
