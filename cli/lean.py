"""Imports a one-shot process (a +1 `capture`, an agent's hook) does without.

A +1 process is mostly start-up: about two thirds of its instructions are the imports
(docs/performance.md, "+1 session"). Some of them come with libraries agentlog needs
and are never used by such a process:

- msgspec imports `typing_extensions` when it can (and `inspect`, `ast`, `dis`,
  `tokenize` with it) for `get_type_hints`; `typing`'s own reads agentlog's types the same.
- msgspec imports `msgspec.inspect` (~40 structs; `decimal`…) and `msgspec._json_schema`
  (`textwrap`) at its import, for type introspection and JSON Schema, which agentlog's
  +1 path never asks for. They are imported at their first use instead (`_deferred`).
- `uuid` (imported by msgspec's core for its `UUID` type) and `zstandard` import
  `platform` (9 regular expressions, ~2.5 % of a +1 capture) only to ask
  `platform.system()` or `platform.python_implementation()` once, at their import.
- `pathlib` imports `urllib.parse` (and `ipaddress`) only for `Path.as_uri`.

Invariants:
- nothing changes for code that uses these modules: a stand-in is in `sys.modules` only
  while the one import that would pull the module in runs, and is removed right after
  (`platform`'s stays for the process: it answers its two questions as `platform` does);
  whatever is imported later gets the real module, and the few names bound to a stand-in
  (`msgspec.inspect`, `msgspec.json.schema`, `pathlib`'s quoting function, `platform`)
  load or call the real one at their first use (tests/test_startup_cost.py holds the
  answers equal and the modules out of a +1 process);
- it is only done when the module that would be replaced is not imported yet; otherwise
  (or under another Python whose modules import differently) the import is a plain one.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any


def _deferred(name: str, functions: tuple[str, ...] = ()) -> types.ModuleType:
    """A stand-in for module `name` that imports the real one at its first use: any
    attribute it lacks, or a call of one of `functions` (names taken by `from name import
    f` while the stand-in was in place). Not put into sys.modules here."""
    stub = types.ModuleType(name)
    loaded: list[types.ModuleType] = []

    def load() -> types.ModuleType:
        if not loaded:
            if sys.modules.get(name) is stub:
                del sys.modules[name]
            __import__(name)
            real = sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent in sys.modules:
                setattr(sys.modules[parent], child, real)
            loaded.append(real)
        return loaded[0]

    def getattr_(attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # the import system's own questions: no import
        return getattr(load(), attr)

    def shim(fname: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(load(), fname)(*args, **kwargs)

        call.__name__ = call.__qualname__ = fname
        return call

    stub.__getattr__ = getattr_  # type: ignore[method-assign]  # PEP 562
    for fname in functions:
        setattr(stub, fname, shim(fname))
    return stub


def _with_stand_ins(stand_ins: dict[str, types.ModuleType | None], module: str) -> None:
    """Import `module` with `stand_ins` in sys.modules (None: that import fails), each
    removed again right after (unless the import replaced it)."""
    put = {k: v for k, v in stand_ins.items() if k not in sys.modules}
    sys.modules.update(put)  # type: ignore[arg-type]  # None makes that import fail
    try:
        __import__(module)
    finally:
        for key, value in put.items():
            if key in sys.modules and sys.modules[key] is value:
                del sys.modules[key]


# platform.python_implementation()'s answers for the implementations it names
_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython",
                    "jython": "Jython"}


def platform() -> None:
    """A stand-in for `platform` for this process: `uuid` (imported by msgspec's core) and
    `zstandard` import it only to ask `system()` and `python_implementation()` at their
    import, which the stand-in answers from `os.uname()` and `sys.implementation` as
    platform does; any other name imports the real module (and puts it in sys.modules)."""
    if "platform" in sys.modules or not hasattr(os, "uname"):
        return
    name = sys.implementation.name
    if name not in _IMPLEMENTATIONS:
        return
    stub = _deferred("platform")
    stub.system = lambda: os.uname().sysname  # type: ignore[attr-defined]
    stub.python_implementation = lambda: _IMPLEMENTATIONS[name]  # type: ignore[attr-defined]
    sys.modules["platform"] = stub


def msgspec() -> None:
    """Import msgspec (the log's events and the capture cursors are made of it) without
    `typing_extensions`, `platform`, `msgspec.inspect` and `msgspec._json_schema`."""
    if "msgspec" in sys.modules:
        return
    stand_ins: dict[str, types.ModuleType | None] = {
        "typing_extensions": None,  # msgspec falls back to typing.get_type_hints
        "msgspec.inspect": _deferred("msgspec.inspect"),
        "msgspec._json_schema": _deferred("msgspec._json_schema",
                                          ("schema", "schema_components")),
    }
    _with_stand_ins(stand_ins, "msgspec")


def pathlib() -> None:
    """Import pathlib without `urllib.parse` (and `ipaddress`): `Path.as_uri` imports it
    at its first call."""
    if "pathlib" in sys.modules:
        return
    _with_stand_ins({"urllib.parse": _deferred("urllib.parse", ("quote_from_bytes",))},
                    "pathlib")
