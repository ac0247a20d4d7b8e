"""Extension points, so each shared capability lives in its own module.

- `after_append(home)`: projections catch up after `record`, `capture`, `import` and the
  background capture loop (`cli.background`); it also wakes the team syncer when
  `team.postgres` is set.
- `audit_sections(home, log)`: extra sections of `agentlog audit` (capture, archive, team).
- `verify_extras(home, log)`: extra checks of `agentlog verify` (projection drift).

Each is a plain import, done lazily inside the function so that start-up stays fast: a
wrong module or function name fails loudly (ImportError, AttributeError) the first time
the extension point is used, never silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.config import Home
    from eventlog import EventLog


def after_append(home: Home) -> None:
    from cli.catchup import after_append as catch_up

    catch_up(home)
    team = home.config.get("team")
    if isinstance(team, dict) and team.get("postgres"):  # the syncer (and click) load only then
        from cli import team_sync

        team_sync.after_append(home)


def audit_sections(home: Home, log: EventLog) -> dict[str, Any]:
    from cli import team_sync
    from cli.audit import archive as archive_audit
    from cli.audit import capture as capture_audit

    out: dict[str, Any] = {}
    for section in (capture_audit.audit_section, archive_audit.audit_section,
                    team_sync.audit_section):
        out.update(section(home, log))
    return out


def verify_extras(home: Home, log: EventLog) -> list[dict[str, Any]]:
    """Each extra check returns {"name", "ok", "detail"}."""
    from cli.audit.projection import verify_section

    return [verify_section(home, log)]
