"""`agentlog hooks run claude|codex`: what the agents call, without click.

`cli.commands.hooks` runs it (an agent waits for it at every session end or turn, so
start-up time is the product). It captures only the transcript the payload names (see
`readers.capture`), brings history.db up to date, prints nothing on stdout, and never
fails its agent: every error becomes one line on stderr and the exit status stays 0
(Claude Code blocks `PreCompact` on exit 2). Transcript contents are never printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cli.services.config import Home

CLIENTS = ("claude", "codex")
MAX_PAYLOAD = 1 << 20


def run(home: Home, client: str, args: list[str]) -> None:
    """Capture what `client`'s hook payload names; errors become one line on stderr."""
    try:
        if client == "claude":
            _run_claude(home, sys.stdin.read(MAX_PAYLOAD))
        else:
            rest = list(args)
            payload = rest.pop() if rest else "{}"
            if rest and rest[0] == "--":
                rest = rest[1:]
            try:
                _run_codex(home, payload)
            finally:
                if rest:
                    _chain(rest, payload)
    except Exception as exc:  # a hook never fails its agent
        # a ValueError is this module's own word on the payload or the transcript (a link,
        # a FIFO, a folder, a missing file): said as it is; anything else names its type
        said = str(exc) if type(exc) is ValueError else f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"agentlog hooks run {client}: {said}\n")
        sys.stderr.flush()


def _payload(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"payload is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    return data


def _run_claude(home: Home, text: str) -> None:
    data = _payload(text)
    path = data.get("transcript_path")
    if not isinstance(path, str) or not path:
        raise ValueError("no transcript_path in the hook input")
    # the session is over at SessionEnd: an unterminated last line need not settle, and it
    # is final (searchable: `ChunkCaptured.final`); before it, it is held back as ever
    ended = data.get("hook_event_name") == "SessionEnd"
    _capture(home, [Path(path)], 0.0 if ended else None, "claude", final=ended)


def _run_codex(home: Home, text: str) -> None:
    from cli.services.capture.ops import capture_roots
    from readers.capture import codex_rollout

    data = _payload(text)
    thread = data.get("thread-id") or data.get("thread_id")
    if not isinstance(thread, str):
        raise ValueError("no thread-id in the notify payload")
    path = codex_rollout(capture_roots(home, {}, ["codex"]), thread)
    if path is None:
        raise ValueError(f"no Codex rollout file for thread {thread}")
    _capture(home, [path], None, "codex", final=False)


def _capture(home: Home, paths: list[Path], settle: float | None, agent: str, *,
             final: bool) -> None:
    """Capture `paths` under `agent`'s roots (what a full capture would file them under:
    they are its files), else under any root (as `capture --path` does)."""
    from cli.services.capture.ops import capture_named, capture_roots
    from readers.capture import locate

    roots = capture_roots(home, {}, [agent])
    if any(locate(roots, p) is None for p in paths):
        roots = capture_roots(home, {})
    named = capture_named(home, paths, roots, settle=settle, index=True, final=final)
    if named.refused:
        first = named.refused[0]
        raise ValueError(f"{first['path']} {first['reason']}: nothing recorded")
    if named.outside:
        raise ValueError(f"{named.outside[0]} is under no capture root "
                         f"({', '.join(str(r.path) for r in roots if r.exists) or 'none exist'})")


def _chain(argv: list[str], payload: str) -> None:
    import subprocess

    subprocess.run([*argv, payload], check=False, timeout=120)
