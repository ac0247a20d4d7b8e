"""A project's identity: Windows paths name one folder whatever their case.

Promise: `project_key` is the form a project is stored and looked up under. A Windows-looking
path (a drive letter, `C:\\…` or `c:/…`, or any backslash) is case-insensitive on its file
system, so `C:\\Users\\Me\\Proj` and `c:\\users\\me\\proj` are one project: it is folded to
its drive letter upper case and the rest lower case. Every other path (POSIX) is kept as it
is: `/home/Me/app` and `/home/me/app` are two folders. Pure and cheap: it runs for every
transcript row.
"""

from __future__ import annotations

import re

_WINDOWS = re.compile(r"^[A-Za-z]:(?:[\\/]|$)|\\")


def project_key(project: str) -> str:
    """`project` as history.db keys it (see the module's promise)."""
    if "\\" not in project and not _WINDOWS.match(project):
        return project
    return project[:1].upper() + project[1:].lower() if project[1:2] == ":" else project.lower()
