"""A child interpreter that runs one function of ours: `argv("pkg.module:function", *args)`.

A fresh interpreter (not multiprocessing: its spawn re-runs the caller's `__main__`), given
this process's import path; the function is called with `args` (JSON). The command line
names the module, so a process listing (and bench/timeline.py) tells the children apart.
The caller starts it (`subprocess.Popen`) with the pipes it wants.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["argv"]


def argv(target: str, *args: Any) -> list[str]:
    """The command line of a child interpreter calling `target` ("module:function") with
    `args` (JSON values)."""
    module, function = target.split(":")
    boot = ("import json, sys; a = json.loads(sys.argv[1]); sys.path[:] = a[0];"
            f" from {module} import {function}; {function}(*a[1:])")
    return [sys.executable, "-c", boot, json.dumps([sys.path, *args])]
