"""The once-a-day warning about Claude Code's transcript cleanup (readers.retention).

`capture`, `mcp install` and `service status` call `warn_once(home)`: when
`cleanupPeriodDays` is unset or below 90 it prints, on stderr and at most once a day per
home (state: `<home>/retention-warning.json`), how many transcripts Claude Code will delete
within 7 days and how many of them are already captured in full. It never raises. Without
click, and cheap when not due (no Claude folder, or warned within the day: nothing more is
read or imported), since every `capture` calls it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home

STATE_FILE = "retention-warning.json"
EVERY_S = 86_400


def claude_dir(env: dict[str, str] | None = None) -> Path:
    """Claude Code's folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    env = dict(os.environ) if env is None else env
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base)


def claude_settings(env: dict[str, str] | None = None) -> Path:
    return claude_dir(env) / "settings.json"


def report(home: Home, now_ns: int | None = None) -> Any:
    """The `readers.retention.AtRisk` of this machine's Claude Code."""
    from readers.retention import at_risk, read_setting

    lookup = None
    if home.has_log():
        log = home.log(readonly=True)
        lookup = log.get_state
    return at_risk(claude_dir(), read_setting(claude_settings()),
                   time.time_ns() if now_ns is None else now_ns, lookup)


def message(risk: Any) -> str:
    setting = ("unset (Claude Code's default: 30 days)" if risk.setting is None
               else f"{risk.setting} days")
    n = len(risk.files)
    missing = risk.not_captured
    lines = [f"warning: Claude Code deletes transcripts older than cleanupPeriodDays, "
             f"which is {setting}: {n} transcript{'s' if n != 1 else ''} will be deleted "
             f"within 7 days; {n - len(missing)} of them are captured in full"
             + (f", {len(missing)} are not (run: agentlog capture)" if missing else "") + "."]
    for rel in missing[:5]:
        lines.append(f"  not captured in full: {rel}")
    lines.append("  keep them longer: agentlog retention claude --days 365")
    return "\n".join(lines)


def warn_once(home: Home, *, now_ns: int | None = None) -> bool:
    """Print the warning when due; True when printed."""
    try:
        if not claude_dir().is_dir():
            return False
        now = time.time_ns() if now_ns is None else now_ns
        state = home.root / STATE_FILE
        if now / 1e9 - _last(state) < EVERY_S:
            return False
        from readers.retention import SAFE_DAYS, read_setting

        setting = read_setting(claude_settings())
        if setting is not None and setting >= SAFE_DAYS:
            return False
        _say(message(report(home, now)))
        if home.root.is_dir():
            from eventlog.files import write_atomic

            write_atomic(state, (json.dumps({"lastWarningAt": int(now / 1e6)}) + "\n").encode(),
                         fsync=False)
        return True
    except Exception as exc:  # a warning never breaks the command it rides on
        _say(f"agentlog: retention check failed: {exc}")
        return False


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _last(state: Path) -> float:
    try:
        data = json.loads(state.read_text())
        return float(data.get("lastWarningAt", 0)) / 1000
    except (OSError, ValueError, AttributeError):
        return 0.0
