"""The named tuples a catch-up hands out: `Checkpoint` (history.db's checkpoint row, read by
`projections.db`) and `BuildResult` (what a catch-up or a rebuild did, `projections.rebuild`).

They live here, not beside their makers, so that a catch-up imports neither `rebuild` nor a
string annotation: these annotations are real objects (no `from __future__ import
annotations`), because `typing.NamedTuple` compiles a `typing.ForwardRef` for every string
one (docs/history/performance-journal.md, "Annotations"). Named tuples, not dataclasses:
`dataclasses` costs the search path's start-up.
"""

from pathlib import Path
from typing import NamedTuple


class Checkpoint(NamedTuple):
    last_seq: int
    last_hash: str
    schema_version: int
    parser_version: str
    engine: str


class BuildResult(NamedTuple):
    path: Path
    last_seq: int
    events: int
    documents: int
    seconds: float
    engine: str
    rebuilt: bool = True
