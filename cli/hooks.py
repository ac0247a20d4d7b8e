"""Extension points wired by name, so each capability lives in its own module.

- `after_append(home)`: projections catch up after `record`, `capture`, `import`.
- `after_append(home)` also wakes the team syncer when `team.postgres` is set.
- `audit_sections(home, log)`: extra sections of `agentlog audit` (capture, archive, team).
- `verify_extras(home, log)`: extra checks of `agentlog verify` (projection drift).

Entries name "module:function"; a module that does not exist (yet) is skipped, but an
existing module that fails to import is an error.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from cli.config import Home
from eventlog import EventLog

AFTER_APPEND = ["cli.catchup:after_append", "cli.team_sync:after_append"]
AUDIT_SECTIONS = [
    "cli.capture_audit:audit_section",
    "cli.archive_audit:audit_section",
    "cli.team_sync:audit_section",
]
VERIFY_EXTRAS = ["cli.projection_check:verify_section"]


def _resolve(spec: str) -> Callable[..., Any] | None:
    mod_name, func = spec.split(":")
    if importlib.util.find_spec(mod_name) is None:
        return None
    fn: Callable[..., Any] = getattr(importlib.import_module(mod_name), func)
    return fn


def after_append(home: Home) -> None:
    for spec in AFTER_APPEND:
        fn = _resolve(spec)
        if fn is not None:
            fn(home)


def audit_sections(home: Home, log: EventLog) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in AUDIT_SECTIONS:
        fn = _resolve(spec)
        if fn is not None:
            out.update(fn(home, log))
    return out


def verify_extras(home: Home, log: EventLog) -> list[dict[str, Any]]:
    """Each extra check returns {"name", "ok", "detail"}."""
    out: list[dict[str, Any]] = []
    for spec in VERIFY_EXTRAS:
        fn = _resolve(spec)
        if fn is not None:
            out.append(fn(home, log))
    return out
