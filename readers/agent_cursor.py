"""Cursor agent transcripts (`~/.cursor/projects/<slug>/agent-transcripts/`): discovery and
the pure parser.

Layouts (capture mode in readers/registry.py), three generations:
- `cursor.txt` (snapshot): `<uuid>.txt`, plain text: `user:` / `assistant:` blocks, user text
  in `<user_query>…</user_query>`, `[Thinking] …`, `[Tool call] Name` + indented `arg: value`
  lines, `[Tool result] Name` + its (often empty) body;
- `cursor.jsonl` (append): `<uuid>.jsonl` next to the `.txt` (about Feb 2026) and
  `<uuid>/<uuid>.jsonl` (spring 2026 on): `{"role", "message": {"content": [text |
  tool_use]}}` lines; no tool results are written;
- `cursor.subagent` (append): `<uuid>/subagents/<id>.jsonl`, the same lines.

Promises: pure and never raising. The formats have no ids and no timestamps: `at` is None
(the projection then uses the time capture first saw the bytes, see docs/parsers.md); uids
are `cursor:<session>:<role>:<key>:<n>` where key is a hash of the normalised text (or the
tool name) and n counts the same key before it in the file, so a session present as both
`.txt` and `.jsonl` yields the same uids from both and is ONE session in results (the newer
copy of a record replaces the older). Project: the slug is a lossy encoding of the
workspace path, so the project is the longest prefix of an absolute path named in the
session's tool inputs whose encoding equals the slug (the real spelling); a numeric or
`empty-window` slug has none. JSONL records read before that path is known (at most 16,
96,000 characters in all, kept in the state meanwhile) are re-emitted with it, same uid.
State per file is bounded (4,096 counters).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from readers.parse_common import (
    compact_json,
    digest,
    load_json,
    make_record,
    str_or_none,
    text_of,
    trim_map,
)
from readers.records import ParseResult, SourceInfo

AGENT = "cursor"
_U = "11111111-2222-4333-8444-555555555555"
EXAMPLE_PATHS = {  # one path per layout (tests: classify, fuzzing)
    "cursor.txt": f"projects/Users-x-proj/agent-transcripts/{_U}.txt",
    "cursor.jsonl": f"projects/Users-x-proj/agent-transcripts/{_U}/{_U}.jsonl",
    "cursor.subagent": f"projects/Users-x-proj/agent-transcripts/{_U}/subagents/a1.jsonl",
}
_QUERY = re.compile(r"^\s*<user_query>\s*(.*?)\s*</user_query>\s*$", re.S)
_MARK = re.compile(r"^\[(Thinking|Tool call|Tool result)\] ?(.*)$")
_ABS = re.compile(r"^(?:/|[A-Za-z]:[\\/])")
_ABS_IN = re.compile(r"(?:^|(?<=[\s'\"=]))((?:/|[A-Za-z]:[\\/])[^\s'\"]*)")
_SEP = re.compile(r"[/\\:]+")
_PENDING = 16
_PENDING_CHARS = 96_000
_COUNTERS = 4096


def classify(rel: str) -> str | None:
    parts = rel.split("/")
    if len(parts) < 4 or parts[0] != "projects" or parts[2] != "agent-transcripts":
        return None
    name = parts[-1]
    if len(parts) == 4:
        if name.endswith(".txt"):
            return "cursor.txt"
        return "cursor.jsonl" if name.endswith(".jsonl") else None
    if len(parts) == 5 and name == f"{parts[3]}.jsonl":
        return "cursor.jsonl"
    if len(parts) == 6 and parts[4] == "subagents" and name.endswith(".jsonl"):
        return "cursor.subagent"
    return None


def descend(rel_dir: str) -> bool:
    parts = rel_dir.split("/")
    if parts[0] != "projects":
        return False
    if len(parts) >= 3 and parts[2] != "agent-transcripts":
        return False
    return len(parts) <= 4 or (len(parts) == 5 and parts[4] == "subagents")


def state_scope(source: SourceInfo, prefix: str) -> str | None:
    """A session's `.txt` and `.jsonl` share one state (the project learned from either)."""
    if source.layout == "cursor.subagent":
        return None
    parts = source.path.split("/")
    session = parts[-1].rsplit(".", 1)[0]
    return f"{prefix}{'/'.join(parts[:3])}/{session}"


def _ids(path: str) -> tuple[str, str | None, str]:
    """(session, subagent, slug) of a transcript path."""
    parts = path.split("/")
    slug = parts[1] if len(parts) > 1 else ""
    if len(parts) == 6:
        return parts[3], parts[-1].rsplit(".", 1)[0], slug
    return parts[-1].rsplit(".", 1)[0], None, slug


def slug_of(path: str) -> str:
    return _SEP.sub("-", path).strip("-").lower()


def project_from(value: Any, slug: str) -> str | None:
    """The longest prefix of an absolute path inside `value` whose slug is `slug`."""
    if not slug or slug.isdigit() or slug == "empty-window":
        return None
    want = slug.lower()
    stack, seen = [value], 0
    while stack and seen < 64:
        v = stack.pop()
        seen += 1
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v[:16])
        elif isinstance(v, str) and len(v) < 4096:
            for p in [v] if _ABS.match(v) else _ABS_IN.findall(v)[:8]:
                cut = [m.start() for m in re.finditer(r"[/\\]", p)] + [len(p)]
                for end in reversed(cut):
                    if slug_of(p[:end]) == want:
                        return p[:end]
    return None


class _Emitter:
    def __init__(self, path: str, counters: dict[str, int], cursor: str) -> None:
        self.session, self.subagent, self.slug = _ids(path)
        self.counters = counters
        self.cursor = cursor
        self.project: str | None = None
        self.result = ParseResult()

    def emit(self, role: str, key: str, text: str, **extra: Any) -> None:
        if not text:
            return
        ck = f"{role}:{key}"
        n = self.counters.get(ck, 0)
        self.counters[ck] = n + 1
        self.result.records.append(make_record(
            uid=f"cursor:{self.session}:{self.subagent or ''}:{role}:{key}:{n}", agent=AGENT,
            session=self.session, subagent=self.subagent, role=role, text=text,
            cursor=self.cursor, project=self.project, **extra))

    def text(self, role: str, raw: str) -> None:
        if role == "user":
            m = _QUERY.match(raw)
            raw = m.group(1) if m else raw
        text = text_of(raw.strip())
        self.emit(role, digest(text), text)

    def tool(self, role: str, name: str, args: Any) -> None:
        tool = str_or_none(name, 200) or "tool"
        if role == "tool_use":
            body = compact_json(args if args is not None else {})
            self.emit(role, tool, f"{tool} {body}", tool=tool, tool_input=body)
        else:
            self.emit(role, tool, text_of(str(args).strip()), tool=tool)


# --- JSONL -----------------------------------------------------------------------------

def parse_line(
    source: SourceInfo, state: dict[str, Any], line: bytes, offset: int, generation: int
) -> ParseResult:
    shared = state
    state = shared.setdefault("jsonl", {})
    if state.get("gen") != generation:  # a rewritten file counts afresh
        state.clear()
        state["gen"] = generation
    counters = state.setdefault("n", {})
    em = _Emitter(source.path, counters, f"{generation}:{offset}")
    em.project = shared.get("project")
    obj = load_json(line)
    message = obj.get("message") if isinstance(obj, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    role = obj.get("role") if isinstance(obj, dict) else None
    if role not in ("user", "assistant") or not isinstance(content, (list, str)):
        em.result.count_unknown(f"{source.layout}:{'line' if obj is not None else 'undecodable'}")
        return em.result
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if em.project is None:
        inputs = [b.get("input") for b in blocks if isinstance(b, dict) and b.get(
            "type") == "tool_use"]
        em.project = project_from(inputs, em.slug) if inputs else None
        if em.project:
            shared["project"] = em.project
            _flush(state, em)
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            em.text(role, block["text"])
        elif kind == "tool_use":
            em.tool("tool_use", str(block.get("name") or ""), block.get("input"))
        elif kind in ("thinking", "reasoning"):
            em.text("thinking", str(block.get("thinking") or block.get("text") or ""))
        else:
            em.result.count_unknown(f"{source.layout}:{str(kind)[:40]}")
    trim_map(counters, _COUNTERS)
    if em.project is None and em.slug and not em.slug.isdigit():
        pending = state.setdefault("pending", [])
        budget = _PENDING_CHARS - sum(len(p["text"]) for p in pending)
        for rec in em.result.records:
            if len(pending) < _PENDING and len(rec.text) <= budget:
                pending.append(msgspec.structs.asdict(rec))
                budget -= len(rec.text)
    return em.result


def _flush(state: dict[str, Any], em: _Emitter) -> None:
    for rec in state.pop("pending", []):
        em.result.records.append(make_record(**{**rec, "project": em.project}))


# --- TXT -------------------------------------------------------------------------------

def parse_snapshot(source: SourceInfo, state: dict[str, Any], data: bytes) -> ParseResult:
    em = _Emitter(source.path, {}, "0:0")
    text = data.decode("utf-8", "replace")
    segments = _segments(text.split("\n"))
    for kind, _name, body in segments:
        if kind == "tool_use":
            em.project = em.project or project_from(_args(body), em.slug)
    if em.project:
        state["project"] = em.project  # the .jsonl of the same session learns it too
    em.project = em.project or state.get("project")
    for kind, name, body in segments:
        if kind in ("user", "assistant", "thinking"):
            em.text(kind, "\n".join(body))
        elif kind == "tool_use":
            em.tool("tool_use", name, _args(body))
        elif kind == "tool_result":
            em.tool("tool_result", name, "\n".join(body))
        else:
            em.result.count_unknown(f"{source.layout}:{kind}")
    if text.strip() and not segments:
        em.result.count_unknown(f"{source.layout}:no-blocks")
    return em.result


def _segments(lines: list[str]) -> list[tuple[str, str, list[str]]]:
    """(kind, tool name, body lines): kind user | assistant | thinking | tool_use |
    tool_result | preamble (text before the first block)."""
    out: list[tuple[str, str, list[str]]] = []
    role = None
    cur: tuple[str, str, list[str]] | None = None
    for line in lines:
        low = line.strip().lower()
        if low in ("user:", "assistant:") and not line.startswith(" "):
            role = low[:-1]
            cur = (role, "", [])
            out.append(cur)
            continue
        m = _MARK.match(line)
        if m and role is not None:
            kind = {"Thinking": "thinking", "Tool call": "tool_use"}.get(m.group(1), "tool_result")
            cur = (kind, "" if kind == "thinking" else m.group(2).strip(),
                   [m.group(2)] if kind == "thinking" else [])
            out.append(cur)
            continue
        if cur is None:
            if line.strip():
                cur = ("preamble", "", [line])
                out.append(cur)
            continue
        if cur[0] == "tool_use" and line.strip() and not line.startswith((" ", "\t")):
            cur = (role or "assistant", "", [line])  # text after a call's arguments
            out.append(cur)
            continue
        cur[2].append(line)
    return [s for s in out if s[0] != "preamble" or any(x.strip() for x in s[2])]


def _args(body: list[str]) -> dict[str, str]:
    """`  name: value` argument lines (deeper-indented lines continue the value)."""
    args: dict[str, str] = {}
    key = None
    for line in body:
        m = re.match(r"^ {1,3}(\w[\w.-]*): ?(.*)$", line)
        if m:
            key = m.group(1)
            args[key] = m.group(2)
        elif key is not None and line.strip():
            args[key] += "\n" + line.strip()
    return args
