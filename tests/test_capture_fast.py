"""`cli.fast`: a plain `capture` without click does what the click command does (same
options, same output, same errors) and hands everything else to click."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli import fast
from tests.conftest import ROOT, json_of_each

# the click command, run in a child process (the way `agentlog` would run it without cli.fast)
VIA_CLICK = ("import sys\nfrom cli.group import cli\n"
             "cli.main(args=sys.argv[1:], prog_name='agentlog')\n")
VIA_MAIN = ("import sys\nfrom cli.main import main\nmain(sys.argv[1:])\n"
            "sys.stderr.write('click imported: %s' % ('click' in sys.modules))\n")


def _run(code: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def _sources(base: Path) -> dict[str, Path]:
    claude = base / "claude"
    session = claude / "projects" / "-w-p" / "s1.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"type": "user", "sessionId": "s1", "cwd": "/w/p",
                                   "message": {"role": "user", "content": "hello fast"}}) + "\n")
    codex = base / "codex"
    (codex / "sessions").mkdir(parents=True)
    return {"claude": claude, "codex": codex}


def test_the_options_are_the_click_commands() -> None:
    from cli.commands.capture import capture

    names = {opt[2:] for p in capture.params for opt in (*p.opts, *p.secondary_opts)}
    click_only = {"path", "watch", "help"}
    from readers.registry import names as agents

    mine = set(fast.CAPTURE_FLAGS) | {f"{a}-dir" for a in agents()} | {"project-roots",
                                                                          "settle"}
    assert names - click_only == mine


@pytest.mark.parametrize("extra", [
    ["--json"], ["--json", "--no-index"], ["--json", "--settle", "0"],
    ["--no-index", "--index", "--json", "--settle=0.5"], [],
])
def test_same_output_as_the_click_command(tmp_path: Path, extra: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_HOME"}
    env["HOME"] = str(tmp_path / "user")  # no real agent folder is seen
    outs = []
    for how, code in (("click", VIA_CLICK), ("fast", VIA_MAIN)):
        src = _sources(tmp_path / how)  # the same tree, each its own home
        home = tmp_path / how / "home"
        args = ["--home", str(home), "capture", "--claude-dir", str(src["claude"]),
                f"--codex-dir={src['codex']}", "--opencode-dir", str(tmp_path / "none"),
                *extra]
        proc = _run(code, args, env)
        assert proc.returncode == 0, proc.stderr
        if how == "fast":
            assert proc.stderr.endswith("click imported: False"), proc.stderr
        text = proc.stdout.replace(str(tmp_path / how), "<base>")
        if "--json" in extra:
            data = json.loads(text)
            for root in data["roots"]:  # a root's id hashes its path
                root.pop("id")
            text = json.dumps(data)
        outs.append(text)
        index = True
        for arg in extra:  # the last of --index / --no-index wins
            index = {"--index": True, "--no-index": False}.get(arg, index)
        assert (home / "history.db").exists() == index, extra
    assert outs[0] == outs[1]


@pytest.mark.parametrize("rest", [
    ["--help"], ["-h"], ["--watch"], ["--path", "x.jsonl"], ["--json", "extra"],
    ["--json=1"], ["--settle", "soon"], ["--claude-dir"], ["--nope"], ["--json", "-x"],
])
def test_hands_the_rest_to_click(tmp_path: Path, rest: list[str]) -> None:
    argv = ["--home", str(tmp_path), "capture", *rest]
    parsed = fast.parse_capture(argv)
    assert parsed is None or rest == ["--settle", "soon"]
    assert fast.capture_plain(argv) is False
    assert not (tmp_path / "log").exists()


def test_parse_keeps_the_last_of_a_repeated_option() -> None:
    got = fast.parse_capture(["capture", "--claude-dir", "a", "--claude-dir=b", "--index",
                              "--no-index", "--json"])
    assert got == (None, {"claude-dir": "b"}, {"no-index", "json"})
    assert fast.parse_capture(["--home=h", "capture"]) == ("h", {}, set())
    assert fast.parse_capture(["search", "capture"]) is None


def test_a_failure_reads_as_the_click_commands(tmp_path: Path) -> None:
    """The log cannot be opened (its data file is a folder): one line, exit 1, both ways."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_HOME"}
    env["HOME"] = str(tmp_path / "user")
    src = _sources(tmp_path / "src")
    errs = []
    for how, code in (("click", VIA_CLICK), ("fast", VIA_MAIN)):
        home = tmp_path / how
        (home / "log" / "data.mdb").mkdir(parents=True)
        for folder in (home, home / "log", home / "log" / "data.mdb"):
            folder.chmod(0o700)
        proc = _run(code, ["--home", str(home), "capture", "--json", "--claude-dir",
                           str(src["claude"])], env)
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout == ""
        errs.append(proc.stderr.split("click imported")[0].replace(str(home), "<home>"))
    assert errs[0] == errs[1]
    assert errs[0].startswith("agentlog capture: ") and errs[0].count("\n") == 1, errs[0]


SCHEMAS = """
import json, sys
if sys.argv[1] == "guarded":
    from cli import lean
    lean.msgspec()
import msgspec
from eventlog import codec
from eventlog.events import ALL_EVENT_TYPES, UnknownEvent
from projections.envelope import _Head
from readers import cursor, records
types = [*ALL_EVENT_TYPES, UnknownEvent, codec.Envelope, codec.EnvelopeOut, cursor.Cursor,
         cursor.RowCursor, cursor.StatCache, cursor.DirCache, records.SourceInfo,
         records.Record, records.SessionTitle, records.SubagentNamed, records.ParseResult, _Head]
print(json.dumps({"schemas": msgspec.json.schema_components(types),
                  "typing_extensions": "typing_extensions" in sys.modules}, sort_keys=True))
"""


def test_msgspec_reads_every_type_the_same_without_typing_extensions() -> None:
    """The hook and capture processes load msgspec with `typing.get_type_hints` instead of
    typing_extensions' (start-up time): every struct of the log, the cursors, the records
    and the export header has the very same schema either way."""
    out = json_of_each(SCHEMAS, ("guarded", "plain"))
    assert out["guarded"]["typing_extensions"] is False
    assert out["guarded"]["schemas"] == out["plain"]["schemas"]
    code = ("import sys\nfrom cli.lean import msgspec as f\nf()\n"
            "import typing_extensions\nprint(typing_extensions.__name__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.stdout == "typing_extensions\n", proc.stderr  # importable again afterwards


def test_a_process_answered_by_a_fast_path_skips_the_final_collection(tmp_path: Path) -> None:
    """`agentlog capture` (the process's own command line: `main()` without arguments)
    leaves its objects to the OS at exit (gc.freeze), with everything committed first;
    `main(argv)` called by a program (tests, embedding) leaves its collector alone."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_HOME"}
    env["HOME"] = str(tmp_path / "user")
    src = _sources(tmp_path)
    home = tmp_path / "home"
    args = ["--home", str(home), "capture", "--json", "--claude-dir", str(src["claude"]),
            "--codex-dir", str(src["codex"])]
    probe = "import gc\nsys.stderr.write(' frozen: %d' % gc.get_freeze_count())\n"
    own = _run("import sys\nfrom cli.main import main\nsys.argv[1:] = sys.argv[1:]\nmain()\n"
               + probe, args, env)
    assert own.returncode == 0, own.stderr
    assert json.loads(own.stdout)["appended"] > 0
    assert int(own.stderr.rsplit("frozen: ", 1)[1]) > 0
    called = _run(VIA_MAIN + probe, args, env)  # the same command again: nothing new
    assert called.returncode == 0, called.stderr
    assert int(called.stderr.rsplit("frozen: ", 1)[1]) == 0
    found = _run("import sys\nfrom cli.main import main\nmain()\n",
                 ["--home", str(home), "search", "--json", "hello"], env)
    assert json.loads(found.stdout)["hits"], found.stderr  # committed and searchable


def test_a_capture_and_its_catch_up_import_no_process_machinery(tmp_path: Path) -> None:
    """`subprocess` and `pickle` (the rebuild's full-text child process) stay out of a +1
    capture, its catch-up and the search after it: ~4 ms of every such process."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_HOME"}
    env["HOME"] = str(tmp_path / "user")
    src = _sources(tmp_path)
    home = tmp_path / "home"
    probe = "print(sorted(m for m in ('subprocess', 'pickle') if m in sys.modules))\n"
    first = _run(VIA_MAIN, ["--home", str(home), "capture", "--json", "--claude-dir",
                            str(src["claude"]), "--codex-dir", str(src["codex"])], env)
    assert first.returncode == 0, first.stderr  # history.db made (a rebuild may spawn)
    more = src["claude"] / "projects" / "-w-p" / "s2.jsonl"
    more.write_text(json.dumps({"type": "user", "sessionId": "s2", "cwd": "/w/p",
                                "message": {"role": "user", "content": "one more"}}) + "\n")
    for args in (["capture", "--json", "--claude-dir", str(src["claude"]), "--codex-dir",
                  str(src["codex"])], ["search", "--json", "more"]):
        proc = _run("import sys\nfrom cli.main import main\nimport io, contextlib\n"
                    "with contextlib.redirect_stdout(io.StringIO()):\n"
                    f"    main({['--home', str(home), *args]!r})\n" + probe, [], env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "[]", (args, proc.stdout)
