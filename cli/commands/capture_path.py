"""`agentlog capture --path FILE…` and the hooks: capture named files only, then index.

Thin: `readers.capture_one.capture_paths` does the work; this opens the log, maps
engine errors to click errors and brings history.db up to date when something was added.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.config import Home


def capture_named(home: Home, paths: list[Path], roots: list[Any], *,
                  settle: float | None, index: bool) -> Any:
    """Capture `paths` into the home's log; the `readers.capture_one.Named` outcome."""
    from eventlog import EventLogError
    from readers.capture_one import capture_paths
    from readers.capture_state import Options

    options = Options() if settle is None else Options(settle_s=settle)
    try:
        named = capture_paths(home.log(), roots, paths, options)
    except EventLogError as exc:
        raise click.ClickException(str(exc)) from exc
    if named.stats.appended and index:
        from cli import hooks

        hooks.after_append(home)
    return named


def summary(named: Any) -> dict[str, Any]:
    out: dict[str, Any] = named.stats.to_dict()
    out["files"] = len(named.sources)
    out["sources"] = named.sources
    out["outside_roots"] = named.outside
    out["not_history"] = named.ignored
    return out
