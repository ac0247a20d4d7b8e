"""Conversation items made readable: markdown to sanitized HTML, tool calls to one line.

Promises:
- transcript text is hostile input: markdown is rendered by markdown-it-py with raw HTML
  disabled (it comes out as text), then the HTML is cleaned by nh3 (ammonia) with a fixed
  allowlist of tags; the only attributes that survive are `href` (http, https, mailto only;
  `javascript:` and every other scheme are dropped, links get `rel="noopener noreferrer"`),
  `class="language-…"` on `<code>`, `title`, and `align` on table cells. No image, script,
  style, form, iframe or event handler ever survives;
- `summary` is one line: the tool name and its key argument (path, command, pattern, …),
  at most `SUMMARY_CHARS` characters, plain text;
- rendering adds fields (`html`, `summary`) and never changes the item's others.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

MARKDOWN_ROLES = frozenset({"user", "assistant", "thinking", "system"})
SUMMARY_CHARS = 160
# The arguments that say what a call did, most telling first.
KEY_ARGS = ("file_path", "path", "filePath", "notebook_path", "command", "cmd", "pattern",
            "query", "url", "description", "prompt", "subagent_type", "skill", "name")
TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
        "code", "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr",
        "th", "td"}
_LANG = re.compile(r"^language-[A-Za-z0-9_+#.-]{1,40}$")


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # commonmark + tables + strikethrough; html=False: raw HTML in a transcript stays text.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
        ["table", "strikethrough"])


def _attribute(element: str, attribute: str, value: str) -> str | None:
    if attribute == "class":
        return value if element == "code" and _LANG.match(value) else None
    return value


def to_html(text: str) -> str:
    """Sanitized HTML of markdown `text` (see the promises above)."""
    import nh3

    raw = _markdown().render(text)
    cleaned: str = nh3.clean(
        raw,
        tags=TAGS,
        attributes={"a": {"href", "title"}, "code": {"class"}, "th": {"align"},
                    "td": {"align"}},
        attribute_filter=_attribute,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
        strip_comments=True,
    )
    return cleaned


def _arguments(text: str, tool: str) -> Any:
    rest = text[len(tool):].strip() if text.startswith(tool) else text.partition(" ")[2]
    try:
        args = json.loads(rest)
        if isinstance(args, str):  # codex: arguments are a JSON string of JSON
            args = json.loads(args)
    except ValueError:
        return rest
    return args


def summary(text: str, tool: str | None) -> str:
    """`tool key-argument` on one line, e.g. `Read src/app.py`, `Bash make test`."""
    name = tool or text.partition(" ")[0] or "tool"
    args = _arguments(text, name)
    key = ""
    if isinstance(args, dict):
        for arg in KEY_ARGS:
            value = args.get(arg)
            if isinstance(value, str) and value.strip():
                key = value
                break
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                key = " ".join(value)  # codex: command as argv
                break
    elif isinstance(args, str):
        key = args
    line = " ".join(f"{name} {key}".split())
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def readable(item: dict[str, Any]) -> dict[str, Any]:
    """`item` with `html` (markdown roles) or `summary` (tool calls) added."""
    role = item.get("role")
    text = item.get("text") or ""
    if role == "tool_use":
        item["summary"] = summary(text, item.get("tool"))
    elif role in MARKDOWN_ROLES and item.get("kind") == "transcript":
        item["html"] = to_html(text)
    return item
