"""requirements.lock pins what pyproject.toml asks for: every dependency and every extra's
(dev, team) at one exact version its specifier allows, so `make setup` installs the tested
set and a dependency added to pyproject.toml without `make lock` fails here, not on CI's
fresh machine."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][^\s;#]*)$")


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for n, line in enumerate((ROOT / "requirements.lock").read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = PIN.match(line)
        assert m, f"requirements.lock:{n}: not `name==version`: {line!r}"
        name = canonicalize_name(m[1])
        assert name not in pins, f"requirements.lock:{n}: {name} pinned twice"
        pins[name] = Version(m[2])
    return pins


def test_every_requirement_is_pinned_within_its_specifier() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in project["optional-dependencies"]
                                          .values() for r in extra)]
    pins = _pins()
    assert "agentlog" not in pins  # installed from the tree, with --no-deps
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements.lock (run make lock)"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside {text!r} (run make lock)")
    assert "psycopg-binary" in pins  # psycopg[binary]: the extra's own package
