"""A conversation item as Rich renderables for the preview pane.

Promises: user, assistant, system and thinking turns are rendered as markdown (Rich's
renderer: fenced code highlighted by Pygments in the fence's language); tool calls and tool
results are folded to one line (`cli.services.render.summary`, the page's tool line) unless
`unfold`; thinking is folded like the page folds it; transcript text is shown, never
interpreted as console markup; at most `PREVIEW_CHARS` characters of an item are rendered;
`as_text` renders to styled lines of a given width, so the work (markdown parsing, Pygments)
can run in a worker thread and the app's thread only draws the lines.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.text import Text

PREVIEW_CHARS = 6000
CODE_THEME = "monokai"


def when(ms: Any) -> str:
    if not isinstance(ms, int):
        return "?"
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def _first_line(text: str, n: int = 100) -> str:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= n else line[: n - 1] + "…"


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "\n\n…"


def folded_line(item: dict[str, Any]) -> str | None:
    """The one line a folded item shows (None: the item is not folded)."""
    from cli.services.render import summary

    role = item.get("role")
    text = str(item.get("text") or "")
    if role == "tool_use":
        return "▸ " + summary(text, item.get("tool"))
    if role == "tool_result":
        tool = f" · {item['tool']}" if item.get("tool") else ""
        return f"▸ result{tool} · {_first_line(text)}"
    if role == "thinking":
        return f"▸ thinking · {_first_line(text)}"
    return None


def render(item: dict[str, Any], *, unfold: bool = False, hit: bool = False) -> RenderableType:
    """One item: a dim heading (role, agent, subagent, time) and its body."""
    role = str(item.get("role") or item.get("kind") or "")
    text = str(item.get("text") or "")
    line = folded_line(item)
    mark = "● " if hit else ""
    if line is not None and not unfold:
        return Text(mark + line + "  " + when(item.get("at")),
                    style="bold yellow" if hit else "dim")
    head = f"{mark}{role}"
    if item.get("subagent"):
        head += f" [{item.get('subagent_name') or item['subagent']}]"
    head += f" · {item.get('agent') or ''} · {when(item.get('at'))}"
    style = "bold yellow" if hit else ("bold cyan" if role == "user" else "bold green")
    body: RenderableType
    if role in ("tool_use", "tool_result"):
        body = Text(_cut(text))
    else:
        body = Markdown(_cut(text), code_theme=CODE_THEME)
    parts: list[RenderableType] = [Text(head, style=style), body]
    if item.get("truncated"):
        parts.append(Text("(shortened; the full record is kept in the log)", style="dim"))
    return Group(*parts)


def as_text(renderable: RenderableType, width: int) -> Text:
    """`renderable` rendered to styled lines `width` cells wide."""
    import io

    console = Console(width=max(width, 20), file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False)
    out = Text(no_wrap=True, overflow="crop")
    for segment in console.render(renderable):
        if not segment.control:
            out.append(segment.text, segment.style)
    out.rstrip()
    return out
