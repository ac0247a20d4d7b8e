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
