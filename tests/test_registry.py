"""The agent registry is the one list of agents: layouts, reader modules, flags, enums."""

from __future__ import annotations

import inspect
from pathlib import Path

from click.testing import CliRunner

from readers import registry
from readers.records import LAYOUTS


def test_every_agent_has_a_reader_with_the_protocol() -> None:
    assert len(set(registry.names())) == len(registry.REGISTRY)
    for agent in registry.REGISTRY:
        mod = registry.reader(agent.name)
        assert callable(mod.classify) and callable(mod.descend), agent.name
        for layout, mode in agent.layouts.items():
            assert layout.startswith(agent.name + "."), layout
            assert registry.agent_of_layout(layout) is agent
            need = {"append": "parse_line", "snapshot": "parse_snapshot", "rows": "parse_row"}
            assert callable(getattr(mod, need[mode])), (layout, mode)
        assert bool(agent.tables) == (registry.ROWS in agent.layouts.values()), agent.name
        examples = getattr(mod, "EXAMPLE_PATHS", None)
        if agent.name not in ("claude", "codex", "opencode", "runs"):
            assert examples is not None and set(examples) == set(agent.layouts), agent.name
            for layout, rel in examples.items():
                assert mod.classify(rel) == layout, rel
                parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
                steps = parent.split("/") if parent else []
                assert all(mod.descend("/".join(steps[:i + 1])) for i in range(len(steps))), rel
        if agent.resume is not None:
            assert "{session}" in agent.resume
    assert registry.layouts() == LAYOUTS


def test_discovery_rules_are_the_readers_own_functions() -> None:
    """`rules` (what every capture's walk uses, without the parsers when `paths` is set) gives
    the very `classify`/`descend` each reader module exports."""
    for agent in registry.REGISTRY:
        mod = registry.reader(agent.name)
        assert registry.rules(agent.name) == (mod.classify, mod.descend), agent.name


def test_walking_the_roots_imports_no_parser(tmp_path: Path) -> None:
    import subprocess
    import sys

    for rel in ("projects/-w-p/s.jsonl", "sessions/2025/01/01/rollout-x.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}\n")
    code = ("import sys\nfrom readers.discovery import walk\n"
            "from readers.statcache import cached_files\n"
            f"for a in ('claude', 'codex', 'opencode', 'runs'):\n"
            f"    list(walk(a, {str(tmp_path)!r}))\n"
            f"    list(cached_files(a, {str(tmp_path)!r}, {{}}, {{}}, {{}}))\n"
            "print(sorted(m for m in sys.modules if m.startswith('readers.parse')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "[]\n"


def test_front_ends_take_their_agent_lists_from_the_registry() -> None:
    from cli.commands.capture import capture, restore
    from cli.mcp.server import SEARCH_SCHEMA
    from cli.services import calls
    from projections import filters, rows

    want = registry.search_agents()
    assert want[-1] == "other" and "runs" not in want
    assert filters.AGENTS == rows.AGENTS == calls.AGENTS == want
    assert SEARCH_SCHEMA["properties"]["filters"]["properties"]["agent"]["enum"] == list(want)
    flags = {o for p in capture.params for o in p.opts}
    assert {a.flag for a in registry.REGISTRY} <= flags
    choices = next(p for p in restore.params if p.name == "agent").type
    assert list(getattr(choices, "choices", [])) == list(registry.names())
    out = CliRunner().invoke(capture, ["--help"]).output
    assert all(a.flag in out for a in registry.REGISTRY)


def test_family_and_resume() -> None:
    assert registry.family("claude-code") == "claude"
    assert registry.family("Codex") == "codex"
    assert registry.family("runs") == "other"  # not a searchable agent value
    assert registry.family(None) == "other" and registry.family("mystery") == "other"
    argv = registry.resume_command("claude", "abc")
    assert argv == ["claude", "--resume", "abc"]
    assert registry.resume_command("runs", "abc") is None
    assert registry.resume_command("claude", None) is None
    described = {d["name"]: d for d in registry.describe()}
    assert described["codex"]["flag"] == "--codex-dir"
    assert described["opencode"]["config_key"] == "opencode_dir"
    assert inspect.ismodule(registry.reader("claude"))


def test_roots_of_the_new_agents(tmp_path: Path) -> None:
    from readers.roots import resolve_roots

    def roots(agent: str, env: dict[str, str], flags: dict[str, str] | None = None
              ) -> list[tuple[str, str]]:
        got = resolve_roots(flags=flags or {}, config={}, env=env, user_home=tmp_path,
                            agents=(agent,))
        return [(str(r.path), r.origin) for r in got]

    assert roots("gemini", {"GEMINI_CLI_HOME": "/g"}) == [("/g/.gemini", "env")]
    assert roots("gemini", {}) == [(str(tmp_path / ".gemini"), "default")]
    assert roots("qwen", {"QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/rt"}) == [("/rt", "env")]
    assert roots("copilot", {"COPILOT_HOME": "/c"}, {"copilot": "/flag"}) == [("/flag", "flag")]
    assert roots("continue", {"CONTINUE_GLOBAL_DIR": "/k"}) == [("/k", "env")]
    # Cline: only editor storage folders that hold a Cline / Roo / Kilo folder; XDG moves ~/.config
    assert roots("cline", {}) == []
    storage = tmp_path / "xdg" / "Code" / "User" / "globalStorage"
    (storage / "rooveterinaryinc.roo-cline").mkdir(parents=True)
    assert roots("cline", {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}) == [
        (str(storage), "default")]
