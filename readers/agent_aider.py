"""Aider → records, from the history files in project roots.

Aider writes into the project (git root or cwd), so an Aider root is a folder that holds
projects (see `readers.project_scan`). Layouts, all append-only:
- `aider.chat`: `.aider.chat.history.md`, Markdown. `# aider chat started at <local time>`
  starts a session; `#### <text>` lines are the user's prompt (one line each); `> ` lines are
  aider's own tool and status output (tokens, cost, commits, "Applied edit to …"); everything
  else is the model's reply (SEARCH/REPLACE edit blocks included: Aider has no structured
  tool calls);
- `aider.input`: `.aider.input.history` (prompt_toolkit history, `# <time>` + `+<line>`) and
  `aider.llm`: `.aider.llm.history` (raw requests and responses, every line prefixed by
  SYSTEM/USER/ASSISTANT). Both are captured for the raw log and restore; their lines are
  understood and skipped: the prompts and replies are in the chat history, and the request
  log would index the same system prompt once per request.

Promises (pure, never raise):
- project = the folder holding the file; session = "aider-<start>-<hash of project>" where
  <start> is the header's time ("20250504T170236"); lines before any header belong to
  "aider-<hash of project>";
- consecutive lines of one kind form one record of at most `CHUNK_LINES` lines and
  `CHUNK_CHARS` characters (blank lines stay inside a reply). While a record grows every
  new line re-emits it with the same uid ("aider:<hash of project>:<gen>:<offset of its
  first line>"), so the longest version replaces the shorter ones;
- time: Aider records only the session start, in the writer's LOCAL time with no zone. It
  is read as if it were UTC (so it may be off by the writer's UTC offset), and every record
  of the session carries it; before the first header, `at` is unknown. Never capture time.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from readers import project_scan
from readers.parse_common import digest, iso_ms, make_record, text_of
from readers.records import ParseResult, SourceInfo

AGENT = "aider"
FILES = {
    ".aider.chat.history.md": "aider.chat",
    ".aider.input.history": "aider.input",
    ".aider.llm.history": "aider.llm",
}
CHUNK_LINES = 64
EXAMPLE_PATHS = {"aider.chat": "code/game/.aider.chat.history.md",
                 "aider.input": "code/game/.aider.input.history",
                 "aider.llm": "code/game/.aider.llm.history"}
CHUNK_CHARS = 8 * 1024
_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})")


def classify(rel: str) -> str | None:
    layout = FILES.get(rel.rsplit("/", 1)[-1])
    return layout if layout and project_scan.depth_ok(rel) else None


def descend(rel_dir: str) -> bool:
    return project_scan.descend(rel_dir)


def project_of(source: SourceInfo) -> str:
    return posixpath.dirname(posixpath.join(source.root, source.path)) or source.root


def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    result = ParseResult()
    if source.layout != "aider.chat":
        result.skipped += 1  # prompt and request logs: see the module docstring
        return result
    text = line.decode("utf-8", "replace").rstrip("\r")
    project = project_of(source)
    tag = digest(project)[:10]
    header = _HEADER.match(text)
    if header:
        day, clock = header.groups()
        state["session"] = f"aider-{day.replace('-', '')}T{clock.replace(':', '')}-{tag}"
        state["at"] = iso_ms(f"{day}T{clock}Z")
        state.pop("block", None)
        result.skipped += 1
        return result
    role, body = _kind(text)
    block = state.get("block")
    contiguous = (isinstance(block, dict) and block.get("gen") == generation
                  and block.get("end") == offset)
    if role is None:  # a blank line: inside a reply, else it ends nothing and adds nothing
        if contiguous and isinstance(block, dict):
            block["end"] = offset + len(line) + 1
            if block.get("role") == "assistant":
                block["text"] = f"{block.get('text', '')}\n"
        result.skipped += 1
        return result
    fits = (contiguous and isinstance(block, dict) and block.get("role") == role
            and isinstance(block.get("text"), str) and isinstance(block.get("lines"), int)
            and block["lines"] < CHUNK_LINES and len(block["text"]) + len(body) < CHUNK_CHARS)
    if fits and isinstance(block, dict):
        block["text"] = f"{block['text']}\n{body}"
        block["lines"] += 1
    else:
        block = {"gen": generation, "start": offset, "role": role, "text": body, "lines": 1}
    block["end"] = offset + len(line) + 1
    state["block"] = block
    words = text_of(block["text"].strip("\n"))
    if not words.strip():
        result.skipped += 1
        return result
    session = state.get("session") if isinstance(state.get("session"), str) else None
    at = state.get("at") if isinstance(state.get("at"), int) else None
    result.records.append(make_record(
        uid=f"aider:{tag}:{generation}:{block['start']}", agent=AGENT,
        session=session or f"aider-{tag}", project=project, role=role, text=words,
        cursor=f"{generation}:{block['start']}", at=at,
    ))
    return result


def _kind(text: str) -> tuple[str | None, str]:
    """(role, text) of one chat-history line; role None for a blank line."""
    if text.startswith("####"):
        return "user", text[4:].strip()
    if text.startswith(">"):
        return "system", text[1:].strip()
    if not text.strip():
        return None, ""
    return "assistant", text
