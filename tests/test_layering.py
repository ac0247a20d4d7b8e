"""The package layering, read from the source with `ast` (every import, lazy ones too).

    eventlog  <-  readers  <-  projections  <-  cli

- eventlog imports nothing of ours; readers only eventlog; projections only eventlog and
  readers; cli anything.
- Only cli reads the environment (`os.environ`, `os.getenv`, `os.putenv`...).
- Only eventlog talks to LMDB (`import lmdb`); no sqlite3 in cli or eventlog.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("eventlog", "readers", "projections", "cli")
ALLOWED: dict[str, set[str]] = {
    "eventlog": {"eventlog"},
    "readers": {"eventlog", "readers"},
    "projections": {"eventlog", "readers", "projections"},
    "cli": set(OURS),
}
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def module_name(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def import_statements(path: Path) -> Iterator[tuple[int, str, list[str] | None]]:
    """(line, absolute module, names imported from it or None) of every import in the file,
    relative ones resolved; `import_module("x")`/`__import__("x")` with a literal count."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path)
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                mod = node.module or ""
            yield node.lineno, mod, [alias.name for alias in node.names]
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield node.lineno, arg.value, None


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file: the module, and for
    `from M import n` also `M.n` (`from os import environ`, `from .. import cli`)."""
    for line, mod, names in import_statements(path):
        if mod:
            yield line, mod
        for name in names or ():
            yield line, f"{mod}.{name}" if mod else name


def env_reads(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENV_NAMES:
            base = node.value
            if isinstance(base, ast.Name) and base.id == "os":
                yield node.lineno, f"os.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in ENV_NAMES:
                    yield node.lineno, f"from os import {alias.name}"


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


@pytest.mark.parametrize("package", OURS)
def test_import_arrows(package: str) -> None:
    assert (ROOT / package).is_dir(), f"package {package}/ is missing"
    wrong = []
    for path in sources(package):
        for line, mod in imported_modules(path):
            top = mod.split(".")[0]
            if top in OURS and top not in ALLOWED[package]:
                wrong.append(f"{where(path, line)} imports {mod}")
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package])}:\n" + "\n".join(
        wrong
    )


@pytest.mark.parametrize("package", [p for p in OURS if p != "cli"])
def test_only_cli_reads_the_environment(package: str) -> None:
    assert (ROOT / package).is_dir(), f"package {package}/ is missing"
    found = [f"{where(p, ln)} {what}" for p in sources(package) for ln, what in env_reads(p)]
    assert not found, "only cli/ may read environment variables:\n" + "\n".join(found)


@pytest.mark.parametrize("package", [p for p in OURS if p != "eventlog"])
def test_only_eventlog_imports_lmdb(package: str) -> None:
    assert (ROOT / package).is_dir(), f"package {package}/ is missing"
    found = [
        f"{where(p, ln)} imports {mod}"
        for p in sources(package)
        for ln, mod in imported_modules(p)
        if mod.split(".")[0] == "lmdb"
    ]
    assert not found, "only eventlog/ may use LMDB:\n" + "\n".join(found)


@pytest.mark.parametrize("package", ["cli", "eventlog"])
def test_no_sqlite_in_cli_or_eventlog(package: str) -> None:
    found = [
        f"{where(p, ln)} imports {mod}"
        for p in sources(package)
        for ln, mod in imported_modules(p)
        if mod.split(".")[0] in ("sqlite3", "_sqlite3", "apsw")
    ]
    assert not found, f"no SQL in {package}/ (it belongs in projections):\n" + "\n".join(found)


def test_the_checker_sees_violations(tmp_path: Path) -> None:
    """The walkers above find what they are meant to find (a test must be able to fail)."""
    pkg = ROOT / "eventlog"
    src = (
        "import os\nfrom readers import records\nfrom .. import cli\n"
        "def f():\n    import lmdb, sqlite3\n    return os.environ.get('X'), os.getenv('Y')\n"
        "from os import environ\nimport importlib\nimportlib.import_module('projections.db')\n"
    )
    fake = pkg / "_layering_probe_tmp.py"
    fake.write_text(src)
    try:
        mods = {m for _, m in imported_modules(fake)}
        envs = {w for _, w in env_reads(fake)}
    finally:
        fake.unlink()
    assert {"readers", "readers.records", "cli", "lmdb", "sqlite3", "projections.db"} <= mods
    assert {"os.environ", "os.getenv", "from os import environ"} <= envs


def _module_of(mod: str) -> str | None:
    """The module of ours that an imported name resolves to (`a.b.NAME` -> `a.b`)."""
    parts = mod.split(".")
    while parts:
        base = ROOT.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return None


def import_arrows(path: Path) -> set[str]:
    """The modules of ours that `path` imports (lazy and TYPE_CHECKING imports included).

    `from pkg import sub` is an arrow to `pkg.sub` when `sub` is a module, else to `pkg`
    (Python runs `pkg/__init__` too, but an `__init__` that loads names lazily is no
    dependency of its submodules)."""
    out: set[str] = set()
    for _, base, names in import_statements(path):
        if base.split(".")[0] not in OURS:
            continue
        for name in names or [None]:
            full = f"{base}.{name}" if name else base
            found = _module_of(full)
            if found:
                out.add(found)
    return out


def import_graph(package: str) -> dict[str, set[str]]:
    """module -> the modules of `package` it imports (lazy imports included)."""
    graph: dict[str, set[str]] = {}
    for path in sources(package):
        name = ".".join(module_name(path))
        deps = {d for d in import_arrows(path) if d.split(".")[0] == package}
        graph[name] = {d for d in deps if d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                found.append([*stack[stack.index(dep):], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


@pytest.mark.parametrize("package", OURS)
def test_no_circles(package: str) -> None:
    """No module imports one that imports it back, through any path, not even lazily."""
    graph = import_graph(package)
    assert len(graph) > 5, graph
    found = cycles(graph)
    assert not found, "circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_projections_apply_is_above_its_row_layers() -> None:
    """apply -> transcripts/runlogs/archive -> rows (shared pieces live below, in rows)."""
    graph = import_graph("projections")
    assert {"projections.apply", "projections.rows", "projections.transcripts"} <= set(graph)
    assert "projections.apply" not in graph["projections.transcripts"]
    assert "projections.apply" not in graph["projections.runlogs"]
    assert "projections.apply" not in graph["projections.archive"]


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# The floors of cli/, bottom up (docs/ARCHITECTURE.md "The house"): a module imports only
# modules on its own floor or below; the four front ends never import one another.
FRONT_END_PACKAGES = ("cli.commands", "cli.mcp", "cli.web", "cli.tui")
ENTRY = ("cli.main", "cli.registry", "cli.group", "cli.stdio")


def floor(module: str) -> tuple[int, str]:
    """(floor, room) of a module of cli/: the room is its front end on floor 2."""
    if module == "cli":
        return 0, "cli"
    if module == "cli.services" or module.startswith("cli.services."):
        return 1, "services"
    for front in FRONT_END_PACKAGES:
        if module == front or module.startswith(front + "."):
            return 2, front
    if module in ENTRY:
        return 3, "entry"
    raise AssertionError(f"{module} is on no floor of cli/ (add it to one in test_layering)")


def upward_arrows(paths: list[Path]) -> list[str]:
    wrong = []
    for path in paths:
        here = ".".join(module_name(path))
        level, room = floor(here)
        for dep in sorted(d for d in import_arrows(path) if d.split(".")[0] == "cli"):
            dep_level, dep_room = floor(dep)
            if dep_level > level or (dep_level == level == 2 and dep_room != room):
                wrong.append(f"{path.relative_to(ROOT)} ({room}) imports {dep} ({dep_room})")
    return wrong


def test_cli_floors() -> None:
    """services <- the front ends (commands, mcp, web, tui; never each other) <- the entry
    point."""
    wrong = upward_arrows(sources("cli"))
    assert not wrong, "imports against the floors of cli/:\n" + "\n".join(wrong)


def test_services_do_not_use_click() -> None:
    """cli.services is what the front ends share: no click in it (click is a front end's)."""
    found = [
        f"{where(p, ln)} imports {mod}"
        for p in sorted((ROOT / "cli" / "services").rglob("*.py"))
        for ln, mod in imported_modules(p)
        if mod.split(".")[0] == "click"
    ]
    assert not found, "click in cli/services/:\n" + "\n".join(found)


def _plant(files: dict[str, str]) -> list[Path]:
    paths = []
    for rel, text in files.items():
        path = ROOT / rel
        assert not path.exists(), path
        path.write_text(text)
        paths.append(path)
    return paths


def test_a_planted_circle_is_found() -> None:
    """Two modules that import each other inside functions form a circle the test names."""
    planted = _plant({
        "readers/_probe_circle_a.py": "def f():\n    from readers import _probe_circle_b\n",
        "readers/_probe_circle_b.py": "def g():\n    import readers._probe_circle_a\n",
    })
    try:
        found = cycles(import_graph("readers"))
    finally:
        for path in planted:
            path.unlink()
    assert ["readers._probe_circle_a", "readers._probe_circle_b",
            "readers._probe_circle_a"] in found


def test_a_planted_upward_import_is_found() -> None:
    """A service that reaches up into a front end, or one front end into another, lazily."""
    planted = _plant({
        "cli/services/_probe_up.py": "def f():\n    from cli.commands import search\n",
        "cli/web/_probe_side.py": "def f():\n    from cli.mcp.server import run\n",
    })
    try:
        wrong = upward_arrows(planted)
    finally:
        for path in planted:
            path.unlink()
    assert len(wrong) == 2, wrong


def module_level_imports(path: Path) -> set[str]:
    """Imports that run when the module is imported (not in functions, not TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            if isinstance(sub, ast.Import):
                out.update(a.name for a in sub.names)
            elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
                out.add(sub.module)
                out.update(f"{sub.module}.{a.name}" for a in sub.names)
    return out


def loaded_by(start: str) -> set[str]:
    """Every module of ours that importing `start` loads (packages' __init__ included)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        parts = mod.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parent packages
        base = ROOT.joinpath(*parts)
        path = base / "__init__.py" if (base / "__init__.py").is_file() else base.with_suffix(
            ".py")
        for name in module_level_imports(path):
            found = _module_of(name) if name.split(".")[0] in OURS else None
            if found:
                todo.append(found)
    return seen


@pytest.mark.parametrize("start", ["projections.query", "cli.main", "cli.group",
                                   "cli.commands.search", "cli.services.search",
                                   "projections.catchup", "eventlog.peek",
                                   "cli.services.catchup"])
def test_search_path_is_free_of_the_apply_machinery(start: str) -> None:
    """What `agentlog search` loads at import (the entry point, the click group, the search
    command and its service) leaves out the apply machinery, the event types and the
    settings editing of the other commands (history.db current: no catch-up to do)."""
    heavy = {"projections.apply", "projections.transcripts", "projections.runlogs",
             "projections.archive", "projections.rebuild", "eventlog.events", "eventlog.store",
             "eventlog.codec", "readers.records", "cli.services.settings"}
    assert not loaded_by(start) & heavy, sorted(loaded_by(start) & heavy)


def test_a_hook_loads_no_settings_editing() -> None:
    """`hooks run` (an agent waits for it) loads the hooks command module: the settings
    editing of `hooks install|uninstall` is imported only by those commands."""
    loaded = loaded_by("cli.commands.hooks")
    assert not {m for m in loaded if m.startswith("cli.services.settings")}, sorted(loaded)


def test_the_search_path_walker_follows_imports() -> None:
    assert {"projections.apply", "projections.rows", "eventlog.events"} <= loaded_by(
        "projections.apply")


def test_commands_live_in_their_front_ends() -> None:
    """Every registered command is a click command of a front end: the terminal's in
    cli/commands/, the MCP server's in cli/mcp/command.py, the web server's in
    cli/web/command.py, the terminal browser's in cli/tui/command.py; nothing flat at the top
    of cli/ but the entry point."""
    from cli.registry import COMMANDS

    fronts = tuple(f"{front}." for front in FRONT_END_PACKAGES)
    assert all(spec.startswith(fronts) for spec in COMMANDS.values()), COMMANDS
    flat = {p.stem for p in (ROOT / "cli").glob("*.py")} - {"__init__"}
    assert flat == {m.split(".")[1] for m in ENTRY}, flat
