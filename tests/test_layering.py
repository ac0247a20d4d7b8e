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


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path)
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                mod = node.module or ""
            if mod:
                yield node.lineno, mod
            for alias in node.names:  # `from os import environ`, `from .. import cli`
                yield node.lineno, f"{mod}.{alias.name}" if mod else alias.name
        elif isinstance(node, ast.Call):
            # importlib.import_module("x") / __import__("x") with a literal name
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield node.lineno, arg.value


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


def import_graph(package: str) -> dict[str, set[str]]:
    """module -> the modules of `package` it imports (lazy imports included)."""
    graph: dict[str, set[str]] = {}
    for path in sources(package):
        name = ".".join(module_name(path))
        deps = {_module_of(m) for _, m in imported_modules(path) if m.split(".")[0] == package}
        graph[name] = {d for d in deps if d and d != name}
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


def test_projections_imports_run_one_way() -> None:
    """apply -> transcripts/runlogs/archive -> rows: no module of projections imports one
    that imports it back, not even lazily (shared pieces live below, in projections.rows)."""
    graph = import_graph("projections")
    assert {"projections.apply", "projections.rows", "projections.transcripts"} <= set(graph)
    assert not cycles(graph), cycles(graph)
    assert "projections.apply" not in graph["projections.transcripts"]
    assert "projections.apply" not in graph["projections.runlogs"]
    assert "projections.apply" not in graph["projections.archive"]


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


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


@pytest.mark.parametrize("start", ["projections.query", "cli.fast", "projections.catchup",
                                   "eventlog.peek", "cli.catchup"])
def test_search_path_is_free_of_the_apply_machinery(start: str) -> None:
    heavy = {"projections.apply", "projections.transcripts", "projections.runlogs",
             "projections.archive", "projections.rebuild", "eventlog.events", "eventlog.store",
             "eventlog.codec", "readers.records", "cli.group"}
    assert not loaded_by(start) & heavy, sorted(loaded_by(start) & heavy)


def test_the_search_path_walker_follows_imports() -> None:
    assert {"projections.apply", "projections.rows", "eventlog.events"} <= loaded_by(
        "projections.apply")
