"""Plain dates on the terminal: `--since 2026-01-01` means midnight local time that day.

The query API takes epoch milliseconds or ISO-8601 with a timezone (`projections.filters`:
a time without a zone is ambiguous). People type dates; the terminal's commands turn a plain
`YYYY-MM-DD` into the epoch ms of that day's local midnight before the query sees it (the
local zone is the terminal's business, not the library's). Anything else passes unchanged,
so the query API's own checks and messages apply to it.
"""

from __future__ import annotations

import re
from typing import Any

_DATE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})\s*$")
HELP = ("Epoch ms, ISO-8601 with a timezone, or a plain date YYYY-MM-DD (midnight local "
        "time; inclusive).")


def local_midnight(value: Any) -> Any:
    """`value` as epoch ms (a string) when it is a plain `YYYY-MM-DD`, else unchanged."""
    if not isinstance(value, str):
        return value
    m = _DATE.match(value)
    if m is None:
        return value
    import datetime as dt

    try:
        day = dt.datetime(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return value  # "2026-02-30": the query API names the parameter and the value
    return str(int(day.astimezone().timestamp() * 1000))


def plain_dates(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with `since`/`until` plain dates turned into local midnights."""
    return {k: local_midnight(v) if k in ("since", "until") else v for k, v in options.items()}
