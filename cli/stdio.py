"""Standard output and error that always write whole.

With PYTHONUNBUFFERED set (or `python -u`), CPython makes `sys.stdout.buffer` and
`sys.stderr.buffer` the raw files, and its text layer hands each write to them once,
ignoring how many bytes write(2) took. A write to a full pipe returns short when the
process is stopped and continued meanwhile (Ctrl-Z and `fg`, a debugger attaching), and the
rest of the output was lost without a word: `agentlog export --project P | ...` wrote a
broken envelope (tests/test_export_import.py). `whole_writes` puts a buffered writer, which
writes until every byte is across, between each text stream and its raw file, flushed at
every write as the unbuffered stream was. A process started without PYTHONUNBUFFERED keeps
its streams as they are.
"""

from __future__ import annotations

import io
import sys
from typing import Any


class _Flushing(io.BufferedWriter):
    """A buffered writer that sends each write at once (and whole)."""

    def write(self, data: Any) -> int:
        n = super().write(data)
        self.flush()
        return n


def whole_writes() -> None:
    """Give `sys.stdout` and `sys.stderr` a writer that loops over short writes, where
    they write straight to their raw file (an unbuffered interpreter)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        raw = getattr(stream, "buffer", None)
        if not isinstance(raw, io.FileIO):
            continue  # buffered already, or replaced by whoever runs us
        setattr(sys, name, io.TextIOWrapper(
            _Flushing(raw), encoding=stream.encoding, errors=stream.errors,
            line_buffering=stream.line_buffering, write_through=True))
