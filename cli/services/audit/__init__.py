"""Sections of `agentlog audit` and checks of `agentlog verify` beyond the log's own.

- `audit_sections(home, log)`: capture, archive and team sections of `agentlog audit`;
- `verify_extras(home, log)`: extra checks of `agentlog verify` (projection drift).

Each section is imported when asked for (start-up time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home
    from eventlog import EventLog


def audit_sections(home: Home, log: EventLog) -> dict[str, Any]:
    from cli.services import team_sync
    from cli.services.audit import archive as archive_audit
    from cli.services.audit import capture as capture_audit

    out: dict[str, Any] = {}
    for section in (capture_audit.audit_section, archive_audit.audit_section,
                    team_sync.audit_section):
        out.update(section(home, log))
    return out


def verify_extras(home: Home, log: EventLog) -> list[dict[str, Any]]:
    """Each extra check returns {"name", "ok", "detail"}."""
    from cli.services.audit.projection import verify_section

    return [verify_section(home, log)]
