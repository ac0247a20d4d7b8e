"""Conversation items made readable: markdown to sanitized HTML, tool calls to one line.

Promises:
- transcript text is hostile input: markdown is rendered by markdown-it-py with raw HTML
  disabled (it comes out as text), then the HTML is cleaned by nh3 (ammonia) with a fixed
  allowlist of tags; the only attributes that survive are `href` (http, https, mailto only;
  `javascript:` and every other scheme are dropped, links get `rel="noopener noreferrer"`),
  `class="language-…"` on `<code>`, `class="hl-…"` on `<span>` (Pygments' token classes),
  `title`, and `align` on table cells. No image, script, style, form, iframe or event handler
  ever survives;
- fenced code with a language Pygments knows is highlighted server side into class-only
  spans (`hl-` + the token's short class); `stylesheet()` is their colours, light and dark,
  with the reader's rules (`reader.css` beside this module): the one stylesheet of the page's
  reader and of `export --format html`, so both draw a conversation alike. No inline style:
  the page's Content-Security-Policy (`style-src 'self'`) forbids it;
- tool results (a subagent's report, a fetched page) are markdown when they look like it
  (`looks_markdown`: headings, fences, emphasis, lists, tables) and do not come from a shell
  (`SHELL_TOOLS`: a compiler's `# package` line is no heading), and are then rendered like
  turns (`markdown_result`); other results stay plain text (command output keeps its lines);
- `summary` is one line: the tool name and its key argument (path, command, pattern, …),
  at most `SUMMARY_CHARS` characters, plain text;
- rendering adds fields (`html`, `summary`) and never changes the item's others.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

MARKDOWN_ROLES = frozenset({"user", "assistant", "thinking", "system"})
SHELL_TOOLS = frozenset({"Bash", "BashOutput", "shell", "exec_command", "local_shell",
                         "run_terminal_cmd", "run_shell_command", "bash", "terminal"})
HIGHLIGHT_CHARS = 100_000  # a longer fence is shown plain: highlighting it costs seconds
CLASS_PREFIX = "hl-"
LIGHT_STYLE, DARK_STYLE = "default", "github-dark"
READER_CSS = Path(__file__).resolve().parent / "reader.css"
SUMMARY_CHARS = 160
# The arguments that say what a call did, most telling first.
KEY_ARGS = ("file_path", "path", "filePath", "notebook_path", "command", "cmd", "pattern",
            "query", "url", "description", "prompt", "subagent_type", "skill", "name")
TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
        "code", "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr",
        "th", "td", "span"}
_LANG = re.compile(r"^language-[A-Za-z0-9_+#.-]{1,40}$")
_TOKEN = re.compile(r"^hl-[a-z0-9]{1,6}$")
# lines that make a text markdown: a heading, a fence, a list item, a table rule, a quote
_MD_LINE = re.compile(
    r"^(?:#{1,6} \S|```|~~~|[ ]{0,3}(?:[-*+]|\d{1,3}[.)]) \S|\|?[ ]*:?-{3,}:?[ ]*\||> \S)",
    re.M)
_MD_SPAN = re.compile(r"\*\*[^*\n]+\*\*|\[[^\]\n]+\]\(https?://")
_NUMBERED = re.compile(r"^\s*\d+(?:→|\t)", re.M)  # a file read with line numbers


def _highlight(code: str, lang: str, attrs: str) -> str:
    """Pygments' class-only spans of `code` in `lang` ("" when unknown: markdown-it then
    escapes the code itself)."""
    if not lang or len(code) > HIGHLIGHT_CHARS:
        return ""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang.lower())
    except ClassNotFound:
        return ""
    out: str = highlight(code, lexer, HtmlFormatter(nowrap=True, classprefix=CLASS_PREFIX))
    return out


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    # commonmark + tables + strikethrough; html=False: raw HTML in a transcript stays text.
    return MarkdownIt("commonmark", {"html": False, "linkify": False,
                                     "highlight": _highlight}).enable(
        ["table", "strikethrough"])


def _attribute(element: str, attribute: str, value: str) -> str | None:
    if attribute == "class":
        if element == "code":
            return value if _LANG.match(value) else None
        if element == "span":
            return value if _TOKEN.match(value) else None
        return None
    return value


@lru_cache(maxsize=1)
def stylesheet() -> str:
    """The reader's CSS: `reader.css` and the highlighted code's colours (light, and dark
    under `prefers-color-scheme: dark`)."""
    from pygments.formatters import HtmlFormatter

    def tokens(style: str) -> str:
        rules = HtmlFormatter(style=style, classprefix=CLASS_PREFIX).get_token_style_defs(
            ".md pre")
        return "\n".join(r for r in rules if not r.lstrip().startswith(".md pre .hll"))

    return (READER_CSS.read_text(encoding="utf-8")
            + "/* code colours: Pygments' " + LIGHT_STYLE + " and " + DARK_STYLE + " */\n"
            + tokens(LIGHT_STYLE)
            + "\n@media (prefers-color-scheme: dark) {\n" + tokens(DARK_STYLE) + "\n}\n")


def looks_markdown(text: str) -> bool:
    """True when `text` reads as markdown (a heading, fence, list, table, quote, emphasis or
    link), and is not a file listed with line numbers."""
    head = text[:20_000]
    if _NUMBERED.search(head) and len(_NUMBERED.findall(head)) * 2 >= head.count("\n"):
        return False
    return bool(_MD_LINE.search(head) or _MD_SPAN.search(head))


def to_html(text: str) -> str:
    """Sanitized HTML of markdown `text` (see the promises above)."""
    import nh3

    raw = _markdown().render(text)
    cleaned: str = nh3.clean(
        raw,
        tags=TAGS,
        attributes={"a": {"href", "title"}, "code": {"class"}, "span": {"class"},
                    "th": {"align"}, "td": {"align"}},
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
    """`item` with `html` (markdown roles, markdown-looking tool results) or `summary`
    (tool calls) added."""
    role = item.get("role")
    text = item.get("text") or ""
    if role == "tool_use":
        item["summary"] = summary(text, item.get("tool"))
    elif item.get("kind") == "transcript" and (role in MARKDOWN_ROLES or markdown_result(item)):
        item["html"] = to_html(text)
    return item


def markdown_result(item: dict[str, Any]) -> bool:
    """True for a tool result to render as markdown (see the module's promises)."""
    return (item.get("role") == "tool_result" and item.get("tool") not in SHELL_TOOLS
            and looks_markdown(str(item.get("text") or "")))
