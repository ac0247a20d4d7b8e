"""What the capture front ends share, without click: the roots and the capture of named files.

`agentlog capture`, `capture --path` and `hooks run` call these; `CaptureConfigError` is a
failure (`cli.services.errors`: exit 1, as for any config.json problem). This is the only
place the capture roots are read from flags, `config.json` and the environment; the library
gets them as values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.services.errors import Failure

if TYPE_CHECKING:
    from cli.services.config import Home


class CaptureConfigError(Failure):
    """A capture setting of config.json that is not valid (a root that is not a path or a
    list of paths, a snapshot bound that is not a whole number of MiB in range)."""


def capture_roots(home: Home, flags: dict[str, str | None],
                  agents: list[str] | None = None) -> list[Any]:
    """The capture roots from flags, config.json and the environment (of `agents` only, when
    given: a hook knows its agent); agents that write into project folders also get the
    project folders history.db already names (cwds)."""
    from readers import registry
    from readers.roots import AGENTS, CONFIG_KEYS, PROJECT_ROOTS
    from readers.roots import resolve_roots as resolve

    for key in (*CONFIG_KEYS.values(), PROJECT_ROOTS):  # a number would become a path "5"
        value = home.config.get(key)
        if value is not None and not (
            isinstance(value, str)
            or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        ):
            raise CaptureConfigError(
                f"{home.config_path}: {key} must be a path, a comma-separated string of paths "
                f"or a list of paths; got {json.dumps(value)[:100]}"
            )
    chosen = AGENTS if agents is None else [a for a in AGENTS if a in agents]
    projects = any(registry.get(a).extra.get("projects") for a in chosen)
    return resolve(
        flags=flags,
        config=home.config,
        env=os.environ,
        user_home=Path(os.path.expanduser("~")),
        agents=chosen,
        project_dirs=_project_dirs(home) if projects else (),
    )


SNAPSHOT_MAX_MIB = 256  # the highest `capture.snapshotMaxMiB` (docs/capture.md: memory)


def engine_options(home: Home) -> dict[str, Any]:
    """`readers.capture.Options` from config.json: `capture.snapshotMaxMiB` (the bound of a
    rewritten file read whole, 1..SNAPSHOT_MAX_MIB; 32 when absent)."""
    cfg = home.config.get("capture")
    value = cfg.get("snapshotMaxMiB") if isinstance(cfg, dict) else None
    if value is None:
        return {}
    if isinstance(value, bool) or not isinstance(value, int) or not (
            1 <= value <= SNAPSHOT_MAX_MIB):
        raise CaptureConfigError(
            f"{home.config_path}: capture.snapshotMaxMiB must be an integer 1..{SNAPSHOT_MAX_MIB}"
            f" (MiB); got {json.dumps(value)[:100]}")
    return {"snapshot_max": value << 20}


def _project_dirs(home: Home) -> list[str]:
    """Project folders named by captured sessions (none before the first index)."""
    if not home.history_db.exists():
        return []
    from projections.projects import project_dirs

    return project_dirs(home.history_db)


def capture_named(home: Home, paths: list[Path], roots: list[Any], *,
                  settle: float | None, index: bool, final: bool = False) -> Any:
    """Capture `paths` into the home's log; the `readers.capture.Named` outcome.

    Raises the log's `EventLogError` (the click front end words it)."""
    from readers.capture import capture_paths
    from readers.capture_state import Options

    more = {**engine_options(home), "final": final}
    options = Options(**more) if settle is None else Options(settle_s=settle, **more)
    named = capture_paths(home.log(), roots, paths, options)
    if named.stats.appended and index:
        from cli.services import catchup

        catchup.after_append(home)
    return named
