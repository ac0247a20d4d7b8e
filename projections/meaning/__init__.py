"""Search by meaning: an embedding projection of history.db's documents (docs/search.md
"By meaning"). Derived like history.db: `step` catches it up from where it stopped (the
capture loop runs it in a niced child, `agentlog embed` in the foreground), a model change or
a renumbered history.db drops it and it is rebuilt; `drop` deletes it (forget).

`model.py` (the encoders), `store.py` (int8 rows + sign bits + SQLite, append-only,
crash-safe), `build.py` (chunks and the step), `helper.py` (a second encoder process for a
long step), `find.py` (the nearest chunks), `serve.py`
(the query server), `progress.py` (how far behind, with sqlite3 alone). The names below load
their module on first use: the search path of a home without embeddings imports none of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from projections.meaning.build import Step, describe, step
    from projections.meaning.find import nearest
    from projections.meaning.model import model_id
    from projections.meaning.store import Store, drop

__all__ = ["Step", "Store", "describe", "drop", "model_id", "nearest", "step"]

_WHERE = {"Step": "build", "describe": "build", "step": "build", "nearest": "find",
          "model_id": "model", "Store": "store", "drop": "store"}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'projections.meaning' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"projections.meaning.{mod}"), name)
    globals()[name] = value
    return value
