"""Fields of logged events that become file names: checked, never trusted.

A log can come from elsewhere (`import --log`, a backup, a damaged disk), so every value
that `restore` turns into a path component is untrusted. Promises:
- `bad_component(s)` names why `s` cannot be one path component: empty, `.`/`..`, a `/`,
  a NUL or another control character, or longer than 255 bytes; None when it can;
- `bad_relpath(p)` does the same for a relative POSIX path (each component, no leading `/`);
- `bad_event(ev)` checks the fields of a `SourceSeen` (agent, the root id inside the
  source id, the path, and that the source id is `<agent>:<root id>:<path>`) and the table
  name of a `RowSnapshotted`; None for every other event.
"""

from __future__ import annotations

from eventlog.events import Event, RowSnapshotted, SourceSeen

MAX_COMPONENT = 255


def _control(s: str) -> str | None:
    for ch in s:
        o = ord(ch)
        if o < 32 or o == 127 or 0xD800 <= o <= 0xDFFF:
            return "NUL" if o == 0 else f"control character U+{o:04X}"
    return None


def bad_component(s: str) -> str | None:
    if not s:
        return "empty"
    if s in (".", ".."):
        return f"{s!r} is not a name"
    if "/" in s:
        return "contains '/'"
    ctl = _control(s)
    if ctl is not None:
        return f"contains a {ctl}"
    if len(s.encode("utf-8")) > MAX_COMPONENT:
        return f"longer than {MAX_COMPONENT} bytes"
    return None


def bad_relpath(p: str) -> str | None:
    if p.startswith("/"):
        return "absolute"
    for part in p.split("/"):
        why = bad_component(part)
        if why is not None:
            return f"component {part[:40]!r} {why}"
    return None


def bad_event(ev: Event | object) -> str | None:
    """Why `ev` cannot be restored safely, or None (see the module promises)."""
    if isinstance(ev, SourceSeen):
        why = bad_component(ev.agent)
        if why is not None:
            return f"agent {ev.agent[:40]!r} {why}"
        parts = ev.source.split(":", 2)
        if len(parts) != 3 or parts[0] != ev.agent or parts[2] != ev.path:
            return f"source id {ev.source[:80]!r} is not <agent>:<root id>:<path>"
        why = bad_component(parts[1])
        if why is not None:
            return f"root id {parts[1][:40]!r} {why}"
        why = bad_relpath(ev.path)
        if why is not None:
            return f"path {ev.path[:80]!r}: {why}"
        return None
    if isinstance(ev, RowSnapshotted):
        why = bad_component(ev.table)
        if why is not None:
            return f"table {ev.table[:40]!r} {why}"
    return None
