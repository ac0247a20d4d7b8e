"""What keeps a home's history current: the sentence `mcp install` ends with.

Background capture runs inside `agentlog mcp` and `agentlog serve` while a client runs
them; the hooks and the service are reported only when installed (read from their files).
"""

from __future__ import annotations

from cli.services.config import Home


def keepers(home: Home, client: str) -> list[str]:
    from cli.services.settings import agent_hooks as ah
    from cli.services.settings.service_units import unit_for

    out = [f"the MCP server captures in the background while {client} runs it"]
    if client == "claude" and ah.claude_installed(ah.claude_settings()):
        out.append("Claude Code's SessionEnd/PreCompact hooks capture each session")
    if client == "codex" and ah.codex_installed(ah.codex_config()):
        out.append("Codex's notify hook captures after every turn")
    unit = unit_for(home.root)
    if unit.path.exists():
        out.append(f"the service {unit.name} runs `capture --watch` ({unit.path})")
    return out


def describe(home: Home, client: str) -> str:
    lines = ["history stays current through: " + "; ".join(keepers(home, client)) + "."]
    missing = []
    if client in ("claude", "codex"):
        from cli.services.settings import agent_hooks as ah

        installed = (ah.claude_installed(ah.claude_settings()) if client == "claude"
                     else ah.codex_installed(ah.codex_config()))
        if not installed:
            missing.append(f"agentlog hooks install {client}")
    from cli.services.settings.service_units import unit_for

    if not unit_for(home.root).path.exists():
        missing.append("agentlog service install")
    if missing:
        lines.append("also capture when no agent runs it: " + " / ".join(missing))
    return "\n".join(lines)
