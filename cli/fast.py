"""`agentlog [--home DIR] search ... --json` and `hooks run` without click (start-up time).

Importing click costs more than the whole search (bench/startup.py measures it). This module
parses exactly the shapes the click command `cli.commands.search.search` accepts for a JSON
search — the option names below (a test holds them equal to the click command's) as
`--name VALUE` or `--name=VALUE`, the flags, query words anywhere, `--` — and runs the same
`find` as that command. Anything else (`--help`, `--version`, an unknown or short option,
`--answer`, `--postgres`/`--host` (the team server), a missing value, a bad value that `find`
rejects, human output, any failure such as a damaged history.db) returns False before any
output on stdout, and `cli.main.main` hands the arguments to click, which parses and
reports as usual (one line, never a traceback; see `cli.group`). No click, no event types, no apply
machinery are imported on this path while history.db is current.

`hooks run claude|codex` (what an agent starts at every session end or turn) runs
`cli.services.capture.hook` the same way, with the arguments click would pass it
(`parse_hook`; a test holds the two equal); anything with an option before `--` goes to click.

`capture` with only `--json`, `--index`/`--no-index`, `--settle S` and the root options
(`--<agent>-dir`, `--project-roots`) runs `cli.services.capture.run` the same way (`parse_capture`,
held equal to the click command's options by a test) unless it would draw a progress bar
(no `--json` and stderr is a terminal); `--path`, `--watch`, `--help`, anything else goes to
click. A bad root setting in config.json is left to click (nothing has run yet); an error
once the capture ran is reported in click's style (`agentlog capture: …`, exit 1).

A process whose command one of these answered ends without the interpreter's final
collection (`skip_final_collection`): freeing every object one at a time was a third of a
+1 capture's time after its work.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection


# the click command's value options and flags (dest names with "_" for "-")
SEARCH_VALUES = ("project", "session", "job", "agent", "kind", "since", "until", "limit")
SEARCH_FLAGS = ("include-archived", "exclude-archived", "json")  # the last archive flag wins


def _command(args: list[str], command: str) -> tuple[str | None, list[str]] | None:
    """(home option, the arguments after `command`) when only `--home` comes before it."""
    home: str | None = None
    i = 0
    while i < len(args) and args[i] != command:
        arg = args[i]
        if arg == "--home" and i + 1 < len(args):
            home, i = args[i + 1], i + 2
        elif arg.startswith("--home="):
            home, i = arg[len("--home="):], i + 1
        else:
            return None
    if i >= len(args):
        return None
    return home, args[i + 1:]


_OPPOSITE = {"index": "no-index", "no-index": "index",
             "include-archived": "exclude-archived", "exclude-archived": "include-archived"}


def _option(arg: str, rest: list[str], j: int, flag_names: Collection[str],
            value_names: Collection[str], flags: set[str], values: dict[str, str]) -> int | None:
    """Take one `--name[=value]` argument as click does: a flag (of two opposites the last
    wins) or a value option (after `=`, else the next argument; the last of a repeated one
    wins). The index after it, or None when click must parse the command line."""
    name, eq, value = arg[2:].partition("=")
    if name in flag_names and not eq:
        flags.discard(_OPPOSITE.get(name, ""))
        flags.add(name)
        return j
    if name not in value_names:
        return None
    if not eq:
        if j >= len(rest):
            return None
        value, j = rest[j], j + 1
    values[name] = value
    return j


def parse(args: list[str]) -> tuple[str | None, dict[str, str], set[str], list[str]] | None:
    """(home option, value options, flags, query words) of a JSON search, else None."""
    found = _command(args, "search")
    if found is None:
        return None
    home, rest = found
    values: dict[str, str] = {}
    flags: set[str] = set()
    words: list[str] = []
    j = 0
    while j < len(rest):
        arg = rest[j]
        j += 1
        if arg == "--":
            words += rest[j:]
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        if not arg.startswith("--"):
            return None
        nxt = _option(arg, rest, j, SEARCH_FLAGS, SEARCH_VALUES, flags, values)
        if nxt is None:
            return None
        j = nxt
    if "json" not in flags or not words:
        return None
    return home, values, flags, words


def parse_hook(args: list[str]) -> tuple[str | None, str, list[str]] | None:
    """(home option, client, its arguments) of `hooks run CLIENT …` as click parses them
    (`--` dropped once), else None: an option before `--` (`--help` …) goes to click."""
    found = _command(args, "hooks")
    if found is None:
        return None
    home, rest = found
    if len(rest) < 2 or rest[0] != "run" or rest[1] not in ("claude", "codex"):
        return None
    extra = rest[2:]
    cut = extra.index("--") if "--" in extra else len(extra)
    if any(a.startswith("-") for a in extra[:cut]):
        return None
    return home, rest[1], extra[:cut] + extra[cut + 1:]


CAPTURE_FLAGS = ("json", "index", "no-index")  # the last of --index/--no-index wins


def parse_capture(args: list[str]) -> tuple[str | None, dict[str, str], set[str]] | None:
    """(home option, value options, flags) of a plain one-shot `capture`, else None."""
    found = _command(args, "capture")
    if found is None:
        return None
    from readers.registry import names

    value_names = {f"{a}-dir" for a in names()} | {"project-roots", "settle"}
    home, rest = found
    values: dict[str, str] = {}
    flags: set[str] = set()
    j = 0
    while j < len(rest):
        arg = rest[j]
        j += 1
        if not arg.startswith("--"):
            return None  # no arguments (click says so), no short options
        nxt = _option(arg, rest, j, CAPTURE_FLAGS, value_names, flags, values)
        if nxt is None:
            return None
        j = nxt
    return home, values, flags




def capture_plain(args: list[str]) -> bool:
    """Run a plain `capture` without click (`cli.services.capture.run`); False when click must."""
    from cli import lean

    lean.pathlib()  # before the first import of pathlib (cli.services.config, readers.registry)
    parsed = parse_capture(args)
    if parsed is None:  # click's commands (`capture --watch`…) keep the real modules
        return False
    lean.platform()
    lean.msgspec()
    home_opt, values, flags = parsed
    as_json = "json" in flags
    if not as_json and sys.stderr.isatty():
        return False  # the progress bar is click's path's (rich)
    try:
        settle = float(values.pop("settle", "2.0"))
    except ValueError:
        return False
    from cli.services.capture.ops import capture_roots
    from cli.services.config import resolve_home
    from readers.registry import names

    try:
        home = resolve_home(home_opt)
        home.command = "agentlog capture"
        flags_by_root: dict[str, str | None] = {a: values.get(f"{a}-dir") for a in names()}
        flags_by_root["project_roots"] = values.get("project-roots")
        roots = capture_roots(home, flags_by_root)
    except Exception:
        return False  # click words a bad config.json or home (nothing has run)
    from cli.services.capture.run import CaptureFailed, run

    try:
        run(home, roots, as_json=as_json, index="no-index" not in flags, settle=settle,
            progress=False)
    except CaptureFailed as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write("Aborted!\n")
        raise SystemExit(1) from None
    except Exception as exc:
        import os

        if os.environ.get("AGENTLOG_DEBUG"):
            raise
        from cli.services.errors import from_exception

        _fail(from_exception(exc).message)
    return True


def _fail(message: str) -> None:
    """Exit 1 with the one-line error of `cli.services.errors` (as click's path prints it)."""
    from cli.services.errors import line

    sys.stderr.write(line("agentlog capture", message) + "\n")
    sys.stderr.flush()
    raise SystemExit(1)


def hooks_run(args: list[str]) -> bool:
    """Run an agent's hook without click (`cli.services.capture.hook`); False when click
    must do it."""
    parsed = parse_hook(args)
    if parsed is None:
        return False
    from cli import lean

    lean.pathlib()
    lean.platform()
    lean.msgspec()
    home_opt, client, extra = parsed
    from cli.services.config import resolve_home

    try:
        home = resolve_home(home_opt)
    except Exception:
        return False
    home.command = "agentlog hooks"
    from cli.services.capture.hook import run
    from cli.services.startup import startup_done

    startup_done()
    run(home, client, extra)
    return True


def search_json(args: list[str]) -> bool:
    """Answer a JSON search without click; False (nothing printed) when click must do it."""
    parsed = parse(args)
    if parsed is None:
        return False
    home_opt, values, flags, words = parsed
    from cli.services.config import resolve_home
    from cli.services.search import find
    from cli.services.startup import startup_done
    from projections.errors import QueryError

    startup_done()

    try:
        home = resolve_home(home_opt)
    except Exception:
        return False
    if not home.root.is_dir():
        return False  # click reports a home that does not exist
    home.command = "agentlog search"
    opts = {k: v for k, v in values.items() if k != "limit"}
    try:
        result = find(home, " ".join(words), opts, values.get("limit"),
                      include_archived="exclude-archived" not in flags)
    except QueryError:
        return False  # click reports the parameter (validation comes before any output)
    except Exception:  # a broken config.json, a damaged history.db or log, a full disk:
        return False  # click's path names it (one line) or rebuilds and answers
    from cli.services.output import emit_json

    emit_json(result)
    sys.stdout.flush()
    return True
