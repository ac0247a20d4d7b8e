"""The agent registry: every agent agentlog reads is one `Agent(...)` entry in `REGISTRY`.

A reader is one module in `readers/` (named by `Agent.module`) plus one entry here. Nothing
in `projections/` or `cli/` names agents: the `agent` filter values, the MCP schema enum,
the `--agent` choices, the `--<agent>-dir` flags and `<agent>_dir` config keys, dashboard
labels and resume commands all come from this table.

Promises:
- importing this module is cheap (no reader module is imported; `reader(name)` imports one
  on first use), so the search and MCP paths can list agents without loading parsers;
- `rules(name)` is the reader's (`classify`, `descend`): the very functions of its module,
  taken from `Agent.paths` (a module of discovery rules alone) when the entry names one, so
  that walking the roots (every `capture`) does not import the parsers;
- every layout name starts with "<agent name>." and has exactly one capture mode:
  APPEND (append-only file: chunks with byte cursors, parsed line by line),
  SNAPSHOT (a rewritten file: whole content, blake3-deduplicated, parsed whole), or
  ROWS (SQLite tables opened read-only, `mode=ro`/`immutable=1`, keyset-paged rows);
- the reader module exposes `classify(rel) -> layout | None` (pure, on the POSIX path
  relative to the root), `descend(rel_dir) -> bool` (whether a folder can hold history),
  and the parse functions its modes need (`parse_line`, `parse_snapshot`, `parse_row`, see
  readers/records.py); optionally `state_scope(source, prefix) -> str | None`;
- `search=False` agents (runs) are capture sources whose records name another agent.

See docs/ARCHITECTURE.md "How to add an agent" and /work/coord/registry.md.

Real annotations, not `from __future__ import annotations`: its named tuples (and msgspec
structs) read their field types when the class is made, and a string costs a
`typing.ForwardRef` compile each (docs/history/performance-journal.md, "Annotations").
"""

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType, ModuleType
from typing import Any, NamedTuple

APPEND, SNAPSHOT, ROWS = "append", "snapshot", "rows"
OTHER = "other"  # the agent value of records no registered agent claims


class Table(NamedTuple):  # not a dataclass: `dataclasses` costs the search path start-up
    """One SQLite table captured in ROWS mode: keyset-paged on (`updated`, `key`)."""

    name: str
    updated: str = "time_updated"
    key: str = "id"
    # seconds of `updated` read again at the start of each round: a column with one-second
    # resolution (Crush) can change again within the second of the last read, on a row whose
    # key sorts before the last one read; such a row would be skipped until its next update
    lookback: int = 0


class Agent(NamedTuple):  # immutable, compared by value, like the frozen dataclass it was
    """One agent. Roots: `--<name>-dir` flag, else config `<name>_dir`, else the first set
    environment variable of `env` (joined with its suffix), else `defaults` (relative to the
    user's home, "~/.config/…" follows XDG_CONFIG_HOME; an `optional_defaults` folder is used
    only when its marker sub-folder exists, "" = the folder itself)."""

    name: str
    label: str
    module: str
    layouts: Mapping[str, str]
    env: tuple[tuple[str, str], ...] = ()
    defaults: tuple[str, ...] = ()
    optional_defaults: tuple[tuple[str, str], ...] = ()  # (folder, marker inside it)
    tables: tuple[Table, ...] = ()
    resume: tuple[str, ...] | None = None  # argv template; "{session}" is replaced
    docs: str = ""  # docs/parsers.md anchor
    search: bool = True
    extra: Mapping[str, Any] = MappingProxyType({})
    # a module holding `<name>_classify`/`<name>_descend`, the functions `module` re-exports as
    # `classify`/`descend` (cheaper to import than the parsers; "" = take them from `module`)
    paths: str = ""

    @property
    def flag(self) -> str:
        return f"--{self.name}-dir"

    @property
    def config_key(self) -> str:
        return f"{self.name}_dir"


_A, _S, _R = APPEND, SNAPSHOT, ROWS
# VS Code (and forks') extension storage: Cline, Roo Code and Kilo Code keep tasks there
_EDITOR_STORAGE = tuple(f"{base}/User/globalStorage" for base in (
    ".vscode-server/data", ".cursor-server/data", ".config/Code", ".config/Code - Insiders",
    ".config/VSCodium", ".config/Cursor", ".config/Windsurf", "Library/Application Support/Code",
    "Library/Application Support/Cursor", "AppData/Roaming/Code"))
_CLINE_IDS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline", "kilocode.kilo-code")

REGISTRY: tuple[Agent, ...] = (
    Agent("claude", "Claude Code", "readers.parse_claude",
          {"claude.session": _A, "claude.subagent": _A, "claude.history": _A,
           "claude.subagent_meta": _S, "claude.tool_result": _S},
          env=(("CLAUDE_CONFIG_DIR", ""),), defaults=(".claude",),
          optional_defaults=((".config/claude", "projects"),),
          resume=("claude", "--resume", "{session}"), docs="claude-code",
          paths="readers.builtin_paths"),
    Agent("codex", "Codex CLI", "readers.parse_codex",
          {"codex.rollout": _A, "codex.history": _A},
          env=(("CODEX_HOME", ""),), defaults=(".codex",),
          resume=("codex", "resume", "{session}"), docs="codex-cli",
          paths="readers.builtin_paths"),
    Agent("opencode", "opencode", "readers.parse_opencode",
          {"opencode.json": _S, "opencode.db": _R},
          env=(("XDG_DATA_HOME", "opencode"),), defaults=(".local/share/opencode",),
          tables=(Table("session"), Table("message"), Table("part"), Table("project")),
          resume=("opencode", "--session", "{session}"), docs="opencode",
          paths="readers.builtin_paths"),
    Agent("runs", "Delegated runs", "readers.parse_runs",
          {"runs.log": _A, "runs.meta": _S},
          env=(("AGENTLOG_RUNS_DIR", ""),), docs="runs", search=False,
          paths="readers.builtin_paths"),
    # --- agents-a (issue 14) ---
    Agent("gemini", "Gemini CLI", "readers.agent_gemini",
          {"gemini.chat": _S, "gemini.chat_log": _A, "gemini.logs": _S,
           "gemini.checkpoint": _S, "gemini.projects": _S, "gemini.project_root": _S},
          env=(("GEMINI_CLI_HOME", ".gemini"),), defaults=(".gemini",),
          resume=("gemini", "--resume", "{session}"), docs="gemini-cli"),
    Agent("qwen", "Qwen Code", "readers.agent_qwen",
          {"qwen.session": _A, "qwen.chat": _S, "qwen.chat_log": _A, "qwen.logs": _S,
           "qwen.checkpoint": _S, "qwen.projects": _S, "qwen.project_root": _S},
          env=(("QWEN_RUNTIME_DIR", ""), ("QWEN_HOME", "")), defaults=(".qwen",),
          resume=("qwen", "--resume", "{session}"), docs="qwen-code"),
    Agent("copilot", "GitHub Copilot CLI", "readers.agent_copilot",
          {"copilot.events": _A, "copilot.flat": _A, "copilot.workspace": _S,
           "copilot.history": _S},
          env=(("COPILOT_HOME", ""),), defaults=(".copilot",),
          resume=("copilot", "--resume", "{session}"), docs="github-copilot-cli"),
    Agent("cursor", "Cursor", "readers.agent_cursor",
          {"cursor.txt": _S, "cursor.jsonl": _A, "cursor.subagent": _A},
          env=(("CURSOR_CONFIG_DIR", ""),), defaults=(".cursor",),
          resume=("cursor-agent", "--resume", "{session}"), docs="cursor"),
    Agent("continue", "Continue", "readers.agent_continue",
          {"continue.session": _S, "continue.index": _S},
          env=(("CONTINUE_GLOBAL_DIR", ""),), defaults=(".continue",), docs="continue"),
    Agent("cline", "Cline", "readers.agent_cline",
          {"cline.api": _S, "cline.ui": _S, "cline.meta": _S},
          env=(("AGENTLOG_CLINE_DIR", ""),),
          optional_defaults=tuple((d, ext) for d in _EDITOR_STORAGE for ext in _CLINE_IDS),
          docs="cline"),
    # --- agents-b (issue 14) ---
    # extra["projects"]: the agent writes into project folders; its roots are folders of
    # projects, scanned to a bounded depth (readers/project_scan.py), plus `project_roots`
    # and the cwds captured sessions name (readers/roots.py).
    Agent("aider", "Aider", "readers.agent_aider",
          {"aider.chat": _A, "aider.input": _A, "aider.llm": _A},
          env=(("AGENTLOG_AIDER_DIR", ""),), defaults=("",), docs="aider",
          extra={"projects": True}),
    Agent("amp", "Amp", "readers.agent_amp", {"amp.thread": _S, "amp.history": _A},
          env=(("XDG_DATA_HOME", "amp"),), defaults=(".local/share/amp",),
          resume=("amp", "threads", "continue", "{session}"), docs="amp"),
    Agent("crush", "Crush", "readers.agent_crush", {"crush.db": _R},
          env=(("AGENTLOG_CRUSH_DIR", ""),), defaults=("",),
          tables=(Table("sessions", "updated_at", lookback=1),
                  Table("messages", "updated_at", lookback=1)),
          docs="crush", extra={"projects": True}),
    Agent("goose", "Goose", "readers.agent_goose", {"goose.db": _R, "goose.jsonl": _A},
          env=(("XDG_DATA_HOME", "goose"),), defaults=(".local/share/goose",),
          tables=(Table("sessions", "updated_at", lookback=1), Table("messages", "id")),
          resume=("goose", "session", "--resume", "--session-id", "{session}"), docs="goose"),
    Agent("kiro", "Kiro CLI", "readers.agent_kiro", {"kiro.events": _A, "kiro.state": _S},
          env=(("AGENTLOG_KIRO_DIR", ""),), defaults=(".kiro",),
          resume=("kiro-cli", "chat", "--resume-id", "{session}"), docs="kiro"),
)

_BY_NAME = {a.name: a for a in REGISTRY}
_MODE = {layout: mode for a in REGISTRY for layout, mode in a.layouts.items()}
_MODULES: dict[str, ModuleType] = {}
_RULES: dict[str, tuple[Callable[[str], str | None], Callable[[str], bool]]] = {}


def names() -> tuple[str, ...]:
    """Every registered agent (capture sources), in registry order."""
    return tuple(a.name for a in REGISTRY)


def search_agents() -> tuple[str, ...]:
    """The `agent` values of hits and filters: searchable agents, then "other"."""
    return (*(a.name for a in REGISTRY if a.search), OTHER)


def known(name: str) -> bool:
    return name in _BY_NAME


def get(name: str) -> Agent:
    """The entry of `name`; KeyError for an unknown agent."""
    return _BY_NAME[name]


def labels() -> dict[str, str]:
    """agent value -> display label (dashboard), including "other"."""
    out = {a.name: a.label for a in REGISTRY if a.search}
    out[OTHER] = "Other"
    return out


def mode_of(layout: str) -> str:
    """APPEND, SNAPSHOT or ROWS; an unregistered layout counts as SNAPSHOT."""
    return _MODE.get(layout, SNAPSHOT)


def layouts(mode: str | None = None) -> frozenset[str]:
    return frozenset(k for k, v in _MODE.items() if mode is None or v == mode)


def agent_of_layout(layout: str) -> Agent | None:
    return _BY_NAME.get(layout.split(".", 1)[0])


def reader(name: str) -> ModuleType:
    """The reader module of agent `name`, imported on first use."""
    mod = _MODULES.get(name)
    if mod is None:
        mod = _MODULES[name] = importlib.import_module(_BY_NAME[name].module)
    return mod


def rules(name: str) -> tuple[Callable[[str], str | None], Callable[[str], bool]]:
    """(`classify`, `descend`) of agent `name`'s reader, without importing its parsers when
    the entry names a `paths` module (see the module promises)."""
    found = _RULES.get(name)
    if found is None:
        agent = _BY_NAME[name]
        if agent.paths:
            mod = importlib.import_module(agent.paths)
            found = (getattr(mod, f"{name}_classify"), getattr(mod, f"{name}_descend"))
        else:
            mod = reader(name)
            found = (mod.classify, mod.descend)
        _RULES[name] = found
    return found


def family(value: object) -> str:
    """A searchable agent name from an agent or client name ("claude-code" -> "claude");
    anything unknown is "other"."""
    if not isinstance(value, str):
        return OTHER
    low = value.strip().lower()
    if low in _BY_NAME and _BY_NAME[low].search:
        return low
    for a in REGISTRY:
        if a.search and low.startswith(a.name):
            return a.name
    return OTHER


def resume_command(agent: str, session: str | None) -> list[str] | None:
    """The argv that resumes `session` in its agent (run it in the session's project), or
    None when the agent has no resume command or the session is unknown."""
    a = _BY_NAME.get(agent)
    if a is None or a.resume is None or not session:
        return None
    return [part.replace("{session}", session) for part in a.resume]


def describe() -> list[dict[str, Any]]:
    """The registry as data (for the dashboard and `agentlog audit`)."""
    return [
        {"name": a.name, "label": a.label, "search": a.search, "flag": a.flag,
         "config_key": a.config_key, "env": [e for e, _ in a.env],
         "defaults": ["~/" + d for d in a.defaults], "layouts": dict(a.layouts),
         "resume": list(a.resume) if a.resume else None, "docs": f"docs/parsers.md#{a.docs}"}
        for a in REGISTRY
    ]
