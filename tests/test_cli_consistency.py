"""The terminal, consistently: one error style, INTEGER options, the same filter names,
mistakes that are not silent, and output that says what to do next.

Commands run in-process through click's runner (the real `cli.main` group) over a real
history (LMDB log + history.db); capture runs against real files in a temp root.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from cli.group import cli
from cli.registry import COMMANDS, READ_ONLY
from tests.webdata import SESSION, make_history

STYLE = re.compile(r"^agentlog( [a-z-]+)*: \S.* — \S.*$")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("consistency")
    home = root / "home"
    home.mkdir()
    make_history(home, transcripts=root / "sources")
    return home


def run(home: Path, *args: str, env: dict[str, str] | None = None,
        stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args], env=env, input=stdin,
                              catch_exceptions=False, prog_name="agentlog")


def styled_error(result: Result) -> str:
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert lines, result.output
    assert STYLE.match(lines[-1]), lines[-1]
    return lines[-1]


@pytest.mark.parametrize("args,code,words", [
    (["search"], 2, "Missing argument"),
    (["search", "--limit", "x", "quokka"], 2, "'--limit'"),
    (["search", "--limit", "0", "quokka"], 2, "--limit"),
    (["search", "--agent", "gpt", "quokka"], 2, "--agent"),
    (["search", "!!! ..."], 2, "no searchable word"),
    (["search", "--project", "/p/nope", "quokka"], 2, "known projects: /p/alpha, /p/beta"),
    (["history", "--project", "/p/nope"], 2, "known projects: /p/alpha"),
    (["history", "--project", "/p/alpha", "--agent", "main"], 2, "agent"),
    (["history", "--project", "/p/alpha", "--thread", "nope"], 2, "thread"),
    (["export", "--project", "/p/nope"], 2, "unknown project"),
    (["show", "message:nope"], 1, "not found"),
    (["conversation", "nope:nope"], 1, "not found"),
    (["restore", "--to", "{never}", "--session", "no-such-session"], 2,
     "no-such-session"),
    (["nosuch"], 2, "No such command"),
    (["record"], 2, "bad line"),
])
def test_every_error_is_one_styled_line(filled: Path, tmp_path: Path, args: list[str],
                                        code: int, words: str) -> None:
    never = tmp_path / "agentlog-never"  # a path of this test's own (the machine is shared)
    args = [str(never) if a == "{never}" else a for a in args]
    stdin = "not json\n" if args == ["record"] else None
    result = run(filled, *args, stdin=stdin)
    assert result.exit_code == code, (result.stdout, result.stderr)
    line = styled_error(result)
    assert line.startswith(f"agentlog {args[0]}:") or args == ["nosuch"]
    assert words in line
    assert not never.exists()


def test_the_same_filter_name_means_the_same_thing(filled: Path) -> None:
    searched = json.loads(run(filled, "search", "--agent", "claude", "--json",
                              "platypus").stdout)
    assert {h["agent"] for h in searched["hits"]} == {"claude"}
    page = json.loads(run(filled, "history", "--project", "/p/alpha", "--agent", "claude",
                          "--json").stdout)
    assert page["turns"] and {t["agent"] for t in page["turns"]} == {"claude"}
    none = json.loads(run(filled, "history", "--project", "/p/alpha", "--agent", "codex",
                          "--json").stdout)
    assert none["turns"] == []
    main = json.loads(run(filled, "history", "--project", "/p/alpha", "--thread", "main",
                          "--json").stdout)
    assert len(main["turns"]) == len(page["turns"])


def test_integer_options_show_as_integer() -> None:
    seen = set()
    ctx = click.Context(cli)
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)  # as `agentlog NAME --help` loads it
        assert cmd is not None
        commands = [cmd, *getattr(cmd, "commands", {}).values()]
        for c in commands:
            for param in c.params:
                if isinstance(param, click.Option) and isinstance(param.type,
                                                                  click.types.IntParamType):
                    record = param.get_help_record(click.Context(c))
                    assert record is not None and record[0].endswith(" INTEGER"), record
                    seen.add(f"{name} {param.opts[0]}")
    assert {"search --limit", "conversation --limit", "history --page", "archive --after-days",
            "serve --port"} <= seen


@pytest.mark.parametrize("args", [
    ["search", "quokka"], ["show", "message:m1"], ["conversation", "thread:t1"],
    ["history"], ["export", "--project", "/p/alpha"], ["verify"], ["audit"],
    ["restore", "--to", "{never}"], ["reindex"], ["backup"],
])
def test_a_missing_home_is_an_error_for_commands_that_only_read(tmp_path: Path,
                                                                args: list[str]) -> None:
    args = [str(tmp_path / "never") if a == "{never}" else a for a in args]
    typo = tmp_path / "typo-home"
    result = run(typo, *args)
    assert result.exit_code == 2, result.output
    assert f"home {typo} does not exist" in styled_error(result)
    assert not typo.exists()
    assert set(args[:1]) <= READ_ONLY


def test_commands_that_write_create_the_home(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    home = tmp_path / "new-home"
    result = run(home, "capture", "--claude-dir", str(empty), "--codex-dir", str(empty),
                 "--opencode-dir", str(empty), "--runs-dir", str(empty))
    assert result.exit_code == 0, result.output
    assert home.is_dir()
    assert run(home, "search", "anything").exit_code == 0


def test_search_output_names_the_conversation_to_open(filled: Path) -> None:
    out = run(filled, "search", "platypus").stdout
    assert f"agentlog conversation claude:{SESSION}" in out
    assert "agentlog conversation thread:t1" in run(filled, "search", "wombat").stdout


def test_a_capture_with_nothing_new_says_so(tmp_path: Path) -> None:
    root = tmp_path / "claude" / "projects" / "-p"
    root.mkdir(parents=True)
    (root / f"{SESSION}.jsonl").write_text(json.dumps(_line("u1", "hello there")) + "\n")
    home = tmp_path / "home"
    empty = tmp_path / "empty"
    empty.mkdir()
    flags = ["--claude-dir", str(tmp_path / "claude"), "--codex-dir", str(empty),
             "--opencode-dir", str(empty), "--runs-dir", str(empty)]
    first = run(home, "capture", *flags).stdout
    assert first.startswith("captured 1 files")
    again = run(home, "capture", *flags).stdout
    assert again.startswith("nothing new in 1 files"), again


def test_audit_tables_fit_80_columns_and_keep_rows_apart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run(home, "demo").exit_code == 0
    out = run(home, "audit", env={"COLUMNS": "80"}).stdout
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "…" not in out.split("captured by layout", 1)[1].split("files ", 1)[0]
    table = out.split("captured by layout", 1)[1]
    layouts = [ln.split()[0] for ln in table.splitlines()[3:] if ln[:1].isalpha()
               and "." in ln.split()[0]]
    assert len(layouts) == len(set(layouts)) >= 8, layouts
    assert {"claude.subagent", "claude.subagent_meta", "claude.tool_result"} <= set(layouts)
    writers = out.split("writers", 1)[1]
    assert "agentlog demo" in writers


def _line(uuid: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "sessionId": SESSION, "cwd": "/work/proj",
            "timestamp": "2025-06-01T08:00:00.000Z",
            "message": {"role": "user", "content": text}, **extra}


def test_claude_tool_result_sidecars_get_their_session_time_and_project(tmp_path: Path) -> None:
    """A persisted tool output is dated by the result line naming it, in its project."""
    project = tmp_path / "claude" / "projects" / "-work-proj"
    outputs = project / SESSION / "tool-results"
    outputs.mkdir(parents=True)
    result_line = {"type": "user", "uuid": "u2", "sessionId": SESSION, "cwd": "/work/proj",
                   "timestamp": "2025-06-01T08:05:00.000Z",
                   "message": {"role": "user", "content": [
                       {"type": "tool_result", "tool_use_id": "toolu_big",
                        "content": "Output too large. Saved to tool-results/toolu_big.txt"}]}}
    (project / f"{SESSION}.jsonl").write_text(
        json.dumps(_line("u1", "run the big listing")) + "\n" + json.dumps(result_line) + "\n")
    (outputs / "toolu_big.txt").write_text("sidecar-marker " * 50)
    home = tmp_path / "home"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(home, "capture", "--claude-dir", str(tmp_path / "claude"), "--codex-dir",
               str(empty), "--opencode-dir", str(empty), "--runs-dir",
               str(empty)).exit_code == 0
    hits = json.loads(run(home, "search", "--json", "sidecar", "marker").stdout)["hits"]
    (hit,) = hits
    assert hit["id"].startswith("transcript:claude:tool-result:")
    assert hit["project"] == "/work/proj"
    assert hit["at"] == 1748765100000  # 2025-06-01T08:05:00Z, not the capture time
    old = json.loads(run(home, "search", "--json", "--until", "2025-06-02T00:00:00Z",
                         "sidecar").stdout)["hits"]
    assert [h["id"] for h in old] == [hit["id"]]
