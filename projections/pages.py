"""The log's mapped pages released as a long replay reads on (`eventlog.pages`; kept here
for the projections that call it by this name)."""

from __future__ import annotations

from eventlog.pages import release

__all__ = ["release"]
