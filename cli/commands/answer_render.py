"""The human view of an answer, printed above the hits by `agentlog search --answer`.

An error goes to stderr (the hits still follow on stdout); the answer text is printed as
plain text, never interpreted, followed by its numbered source links.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import click

# Model output may echo escape sequences from a snippet; a terminal must not act on them.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def _safe(text: Any) -> str:
    return _UNSAFE.sub("", str(text))


def echo_answer(ans: dict[str, Any]) -> None:
    color = sys.stdout.isatty()
    if ans.get("error"):
        click.echo(f"agentlog search: answer: {_safe(ans['error'])}", err=True)
        return
    who = " · ".join(_safe(x) for x in (ans.get("agent"), ans.get("model")) if x)
    head = f"Answer ({who})" if who else "Answer"
    click.echo(click.style(head, bold=True) if color else head)
    click.echo(_safe(ans.get("text", "")))
    for src in ans.get("sources", []):
        line = _safe(f"  [{src.get('id')}] {src.get('link')}")
        click.echo(click.style(line, fg="cyan") if color else line)
    click.echo("")
