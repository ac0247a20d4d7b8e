"""A one-shot `agentlog capture` as a process: its output and index, its errors, and how the
console's process ends (no final collection; no process machinery imported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# `agentlog ARGS` called by a program (`main(argv)`), and as the console runs it (`main()`
# reading sys.argv); click ends either with SystemExit, so the probes run in `finally`
CALLED = "import sys\nfrom cli.main import main\ntry:\n    main(sys.argv[1:])\nfinally:\n    pass\n"
CONSOLE = "import sys\nfrom cli.main import main\ntry:\n    main()\nfinally:\n    pass\n"
# objects the cyclic collector still tracks outside the permanent generation (gc.freeze)
TRACKED = "    import gc\n    sys.stderr.write(' tracked: %d' % len(gc.get_objects()))\n"


def _run(code: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_HOME"}
    env["HOME"] = str(tmp_path / "user")  # no real agent folder is seen
    return env


def _sources(base: Path) -> dict[str, Path]:
    claude = base / "claude"
    session = claude / "projects" / "-w-p" / "s1.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"type": "user", "sessionId": "s1", "cwd": "/w/p",
                                   "message": {"role": "user", "content": "hello fast"}}) + "\n")
    codex = base / "codex"
    (codex / "sessions").mkdir(parents=True)
    return {"claude": claude, "codex": codex}


@pytest.mark.parametrize("extra", [
    ["--json"], ["--json", "--no-index"], ["--json", "--settle", "0"],
    ["--no-index", "--index", "--json", "--settle=0.5"], [],
])
def test_a_capture_prints_its_summary_and_indexes_unless_told_not_to(
        tmp_path: Path, extra: list[str]) -> None:
    src = _sources(tmp_path)
    home = tmp_path / "home"
    args = ["--home", str(home), "capture", "--claude-dir", str(src["claude"]),
            f"--codex-dir={src['codex']}", "--opencode-dir", str(tmp_path / "none"), *extra]
    proc = _run(CONSOLE, args, _env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    if "--json" in extra:
        out = json.loads(proc.stdout)
        assert out["appended"] > 0 and out["new_files"] == 1, out
        assert {r["agent"] for r in out["roots"]} >= {"claude", "codex"}, out["roots"]
    else:
        assert proc.stdout.count("\n") == 1 and "appended" in proc.stdout, proc.stdout
    index = True
    for arg in extra:  # the last of --index / --no-index wins
        index = {"--index": True, "--no-index": False}.get(arg, index)
    assert (home / "history.db").exists() == index, extra


@pytest.mark.parametrize("rest", [
    ["--json", "extra"], ["--json=1"], ["--settle", "soon"], ["--claude-dir"], ["--nope"],
    ["--json", "-x"], ["--path", "x.jsonl", "--watch"],
])
def test_bad_usage_exits_2_and_captures_nothing(tmp_path: Path, rest: list[str]) -> None:
    proc = _run(CONSOLE, ["--home", str(tmp_path / "home"), "capture", *rest], _env(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.startswith("agentlog capture: "), proc.stderr
    assert not (tmp_path / "home" / "log").exists()


def test_a_failure_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """The log cannot be opened (its data file is a folder): one line, exit 1, no output."""
    src = _sources(tmp_path / "src")
    home = tmp_path / "home"
    (home / "log" / "data.mdb").mkdir(parents=True)
    for folder in (home, home / "log", home / "log" / "data.mdb"):
        folder.chmod(0o700)
    proc = _run(CONSOLE, ["--home", str(home), "capture", "--json", "--claude-dir",
                          str(src["claude"])], _env(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("agentlog capture: ") and proc.stderr.count("\n") == 1, (
        proc.stderr)


def test_the_console_process_skips_the_final_collection(tmp_path: Path) -> None:
    """`agentlog capture` (the process's own command line: `main()` without arguments)
    leaves its objects to the OS at exit (gc.freeze: the collector tracks next to nothing
    at its end), with everything committed first; `main(argv)` called by a program (tests,
    embedding) leaves its collector alone."""
    env = _env(tmp_path)
    src = _sources(tmp_path)
    home = tmp_path / "home"
    args = ["--home", str(home), "capture", "--json", "--claude-dir", str(src["claude"]),
            "--codex-dir", str(src["codex"])]
    own = _run(CONSOLE + TRACKED, args, env)
    assert own.returncode == 0, own.stderr
    assert json.loads(own.stdout)["appended"] > 0
    assert int(own.stderr.rsplit("tracked: ", 1)[1]) < 100, own.stderr
    called = _run(CALLED + TRACKED, args, env)  # the same command again: nothing new
    assert called.returncode == 0, called.stderr
    assert int(called.stderr.rsplit("tracked: ", 1)[1]) > 10_000, called.stderr
    found = _run(CONSOLE, ["--home", str(home), "search", "--json", "hello"], env)
    assert json.loads(found.stdout)["hits"], found.stderr  # committed and searchable


def test_a_capture_and_its_catch_up_import_no_process_machinery(tmp_path: Path) -> None:
    """`subprocess` and `pickle` (the rebuild's full-text child process) stay out of a +1
    capture, its catch-up and the search after it: ~4 ms of every such process."""
    env = _env(tmp_path)
    src = _sources(tmp_path)
    home = tmp_path / "home"
    roots = ["--claude-dir", str(src["claude"]), "--codex-dir", str(src["codex"])]
    first = _run(CALLED, ["--home", str(home), "capture", "--json", *roots], env)
    assert first.returncode == 0, first.stderr  # history.db made (a rebuild may spawn)
    more = src["claude"] / "projects" / "-w-p" / "s2.jsonl"
    more.write_text(json.dumps({"type": "user", "sessionId": "s2", "cwd": "/w/p",
                                "message": {"role": "user", "content": "one more"}}) + "\n")
    probe = ("    print(sorted(m for m in ('subprocess', 'pickle') if m in sys.modules),"
             " file=sys.stderr)\n")
    for args in (["capture", "--json", *roots], ["search", "--json", "more"]):
        proc = _run(CALLED + probe, ["--home", str(home), *args], env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == "[]", (args, proc.stderr)
