"""Every registered agent has a parser test on real data and a docs/parsers.md entry.

A real-data test is one marked `@pytest.mark.real_data("<agent>")` (per test or in a
module's `pytestmark`) that reads ../shared/corpus or ../shared/corpus-more. The markers are
found by reading the test sources (no test is imported or run here). Agents with
`search=False` (runs: agentlog's own run logs, whose records name another agent) have no
public sample; their parser is covered by golden fixtures.
"""

from __future__ import annotations

import re
from pathlib import Path

from readers import registry

ROOT = Path(__file__).resolve().parent.parent
_MARK = re.compile(r"""real_data\(\s*["']([\w.-]+)["']\s*\)""")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)


def _slug(heading: str) -> str:
    """The GitHub anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _real_data_tests() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        source = path.read_text(encoding="utf-8")
        if "corpus" not in source:  # a real-data test reads a shared corpus fixture
            continue
        for name in _MARK.findall(source):
            out.setdefault(name, []).append(path.relative_to(ROOT).as_posix())
    return out


def test_every_agent_has_a_real_data_parser_test() -> None:
    found = _real_data_tests()
    missing = [a.name for a in registry.REGISTRY if a.search and a.name not in found]
    assert missing == [], f"no @pytest.mark.real_data(...) test for {missing}"
    unknown = sorted(set(found) - set(registry.names()))
    assert unknown == [], f"real_data markers name unregistered agents: {unknown}"


def test_every_agent_has_a_docs_entry() -> None:
    doc = (ROOT / "docs" / "parsers.md").read_text(encoding="utf-8")
    anchors = {_slug(h) for h in _HEADING.findall(doc)}
    missing = [a.name for a in registry.REGISTRY if not a.docs or a.docs not in anchors]
    assert missing == [], f"docs/parsers.md has no section for {missing}"
    for a in registry.REGISTRY:  # and the section names its layouts
        assert all(f"`{layout}`" in doc for layout in a.layouts), a.name
