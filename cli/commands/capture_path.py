"""`agentlog capture --path FILE…` and the hooks: capture named files only, then index.

Thin: `cli.services.capture.ops.capture_named` does the work (open the log, capture, bring
history.db up to date when something was added); this maps the log's errors to click's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli.services.config import Home


def capture_named(home: Home, paths: list[Path], roots: list[Any], *,
                  settle: float | None, index: bool) -> Any:
    """Capture `paths` into the home's log; the `readers.capture.Named` outcome."""
    from cli.services.capture.ops import capture_named as capture

    return capture(home, paths, roots, settle=settle, index=index)


def summary(named: Any) -> dict[str, Any]:
    out: dict[str, Any] = named.stats.to_dict()
    out["files"] = len(named.sources)
    out["sources"] = named.sources
    out["outside_roots"] = named.outside
    out["not_history"] = named.ignored
    out["refused"] = named.refused
    return out
