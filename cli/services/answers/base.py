"""What every answer provider returns: a selection verdict and a generation outcome.

Promises:
- A provider is chosen only on a positive verdict (`Selection.ok`). Exhausted limits,
  a failed probe and an unreadable or unknown availability all give `ok=False` with a
  reason naming what was seen; nothing is guessed in the provider's favour.
- `Generation` carries either answer text or an error, never both. `capacity=True` marks
  an error that means "this provider has no capacity now" (usage limit, paid credits);
  the orchestrator then moves on to the next provider instead of failing the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cli.services.errors import Unavailable


class AnswerError(Unavailable):
    """Base error of the answer package (bad config, unusable provider output)."""


@dataclass(frozen=True)
class Selection:
    """A provider's verdict: usable with this model, or skipped for this reason."""

    ok: bool
    model: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class Generation:
    """The outcome of one tool-less generation."""

    text: str = ""
    error: str | None = None
    model: str | None = None
    capacity: bool = False


def json_lines(data: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL stream; lines that are not JSON objects are skipped."""
    out: list[dict[str, Any]] = []
    for line in data.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def one_line(text: str, limit: int = 200) -> str:
    """A provider message made safe for an error string: one line, bounded."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


USAGE_LIMIT_MARKERS = (
    "hit your limit",
    "hit your session limit",
    "hit your usage limit",
    "usage limit",
    "usage_limit_reached",
    "rate limit",
    "rate_limit",
    "quota",
    "insufficient_quota",
    "credits",
)


def looks_exhausted(message: str) -> bool:
    """Whether a provider error message says the usage allowance is used up."""
    low = message.lower()
    return any(marker in low for marker in USAGE_LIMIT_MARKERS)
