"""Search by meaning: an embedding projection of history.db's documents (docs/search.md
"By meaning"). Derived like history.db: `step` catches it up from where it stopped (the
capture loop runs it in a niced child, `agentlog embed` in the foreground), a model change or
a renumbered history.db drops it and it is rebuilt; `drop` deletes it (forget, reindex).

`model.py` (the encoder, from a PyPI package), `store.py` (int8 rows + SQLite, append-only,
crash-safe), `build.py` (chunks and the step), `find.py` (the nearest chunks).
"""

from __future__ import annotations

from projections.meaning.build import Step, describe, step
from projections.meaning.find import nearest
from projections.meaning.model import model_id
from projections.meaning.store import Store, drop

__all__ = ["Step", "Store", "describe", "drop", "model_id", "nearest", "step"]
