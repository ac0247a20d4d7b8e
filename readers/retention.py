"""Claude Code's transcript retention: what its cleanup will delete soon, and is it kept.

Claude Code deletes session transcripts whose modification time is older than
`cleanupPeriodDays` (default 30) from `settings.json` when it starts (docs/capture.md).
Promises: read-only (settings and transcripts are only read, cursors only looked up);
the clock and the cursor lookup are passed in; a period of 90 days or more is "safe".
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from readers import cursor as cur
from readers.roots import source_id

DEFAULT_DAYS = 30  # Claude Code's default when the key is unset
SAFE_DAYS = 90
HORIZON_DAYS = 7
DAY_NS = 86_400 * 10**9


@dataclass
class AtRisk:
    """Transcripts Claude Code will delete within the horizon."""

    setting: int | None  # cleanupPeriodDays as set (None: unset)
    period_days: int  # the period in force
    files: list[str] = field(default_factory=list)  # relative to the claude root
    captured: list[bool] = field(default_factory=list)  # captured in full, per file

    @property
    def risky(self) -> bool:
        return self.setting is None or self.setting < SAFE_DAYS

    @property
    def not_captured(self) -> list[str]:
        return [f for f, ok in zip(self.files, self.captured, strict=True) if not ok]

    def to_dict(self) -> dict[str, object]:
        return {"cleanupPeriodDays": self.setting, "periodDays": self.period_days,
                "safeDays": SAFE_DAYS, "horizonDays": HORIZON_DAYS, "risky": self.risky,
                "deletedWithinHorizon": len(self.files),
                "capturedInFull": sum(self.captured), "notCaptured": self.not_captured[:50]}


def read_setting(settings_path: Path) -> int | None:
    """`cleanupPeriodDays` from Claude Code's settings.json (None when unset or unreadable)."""
    try:
        data = json.loads(settings_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("cleanupPeriodDays") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def at_risk(
    claude_root: Path,
    setting: int | None,
    now_ns: int,
    lookup: Callable[[bytes], bytes | None] | None,
) -> AtRisk:
    """Session transcripts under `claude_root/projects` older than period - horizon days.

    `lookup(state_key)` reads the capture state of the log (None: nothing captured)."""
    period = setting if setting is not None and setting > 0 else DEFAULT_DAYS
    cutoff = now_ns - max(period - HORIZON_DAYS, 0) * DAY_NS
    out = AtRisk(setting, period)
    projects = claude_root / "projects"
    try:
        folders = sorted(os.scandir(projects), key=lambda e: e.name)
    except OSError:
        return out
    root = Path(os.path.abspath(claude_root))
    for folder in folders:
        if not folder.is_dir():
            continue
        try:
            entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith(".jsonl") or not entry.is_file():
                continue
            st = entry.stat()
            if st.st_mtime_ns >= cutoff:
                continue
            rel = f"projects/{folder.name}/{entry.name}"
            out.files.append(rel)
            out.captured.append(_captured(lookup, source_id("claude", root, rel), st.st_size))
    return out


def _captured(lookup: Callable[[bytes], bytes | None] | None, source: str, size: int) -> bool:
    if lookup is None:
        return False
    raw = lookup(cur.cursor_key(source))
    if raw is None:
        return False
    c = cur.decode_cursor(raw)
    return not c.missing and c.offset >= size
