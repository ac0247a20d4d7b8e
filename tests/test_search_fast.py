"""`cli.fast`: `search --json` without click gives what the click command gives, and hands
everything it does not fully understand to click."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli import fast
from cli.commands.search import search as click_search
from cli.group import cli as click_group
from eventlog import EventLog
from tests.conftest import run_cli
from tests.test_projections_support import append, mixed_events


@pytest.fixture
def filled(home: Path) -> Path:
    log = EventLog(home / "log")
    append(log, mixed_events())
    log.close()
    return home


def test_options_are_the_click_commands() -> None:
    values = {p.name.replace("_", "-") for p in click_search.params
              if isinstance(p, click.Option) and not p.is_flag}
    flags = {o[2:] for p in click_search.params if isinstance(p, click.Option) and p.is_flag
             for o in (*p.opts, *p.secondary_opts)}
    # --postgres/--host (the team server) and --answer go to click
    assert values - {"postgres", "host"} == set(fast.SEARCH_VALUES)
    assert flags - {"answer"} == set(fast.SEARCH_FLAGS)


@pytest.mark.parametrize("args", [
    ["search", "--json", "a"], ["search", "a", "b", "--json"], ["--home", "H", "search", "--json",
                                                                "a"],
    ["--home=H", "search", "--limit=3", "--json", "a"], ["search", "--json", "--", "-a"],
    ["search", "--project", "p", "--project", "q", "--json", "a"],
])
def test_parses_what_click_accepts(args: list[str]) -> None:
    assert fast.parse(args) is not None


def test_last_value_wins_like_click() -> None:
    got = fast.parse(["search", "--project", "p", "--project=q", "--json", "a"])
    assert got is not None and got[1] == {"project": "q"}


@pytest.mark.parametrize("args", [
    ["search", "a"], ["search", "--json"], ["search", "--help", "--json", "a"],
    ["--version"], ["search", "-j", "a"], ["search", "--json", "--answer", "a"],
    ["search", "--json", "a", "--limit"], ["search", "--json", "--bogus", "a"],
    ["show", "x", "--json"], ["--home"], [], ["search", "--json=1", "a"],
    ["search", "--json", "--postgres", "config", "a"], ["search", "--json", "--host=h", "a"],
])
def test_hands_the_rest_to_click(args: list[str]) -> None:
    assert fast.parse(args) is None
    assert fast.search_json(args) is False


@pytest.mark.parametrize("args", [
    ["café"], ["migration", "--kind", "approval"], ["café", "--limit", "1"],
    ["--session", "alice", "hello"], ["café", "--include-archived"], ["café", "--exclude-archived"],
    ["café", "--exclude-archived", "--include-archived"],
    ["café", "--include-archived", "--exclude-archived"],
])
def test_same_json_as_the_click_command(filled: Path, args: list[str]) -> None:
    assert run_cli(filled, "search", "--json", "warm").returncode == 0  # catch up first
    argv = ["--home", str(filled), "search", "--json", *args]
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert fast.search_json(argv) is True
    via_click = CliRunner().invoke(click_group, argv)
    assert via_click.exit_code == 0, via_click.output
    assert json.loads(buf.getvalue()) == json.loads(via_click.stdout)


def test_a_bad_value_is_reported_by_click(filled: Path) -> None:
    argv = ["--home", str(filled), "search", "--json", "café", "--limit", "0"]
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert fast.search_json(argv) is False
    assert buf.getvalue() == ""
    out = run_cli(filled, "search", "--json", "café", "--limit", "0")
    assert out.returncode == 2 and b"--limit" in out.stderr and not out.stdout


def test_links_quote_like_urllib() -> None:
    from urllib.parse import quote

    from hypothesis import given
    from hypothesis import strategies as st

    from projections.query import q

    @given(st.text(st.characters(blacklist_categories=("Cs",))))
    def same(text: str) -> None:
        assert q(text) == quote(text, safe="")

    same()
    for value in ("", "a b/c?d#e&f=g", "café", "中文", "~._-", "%41", 42, "\x00\n"):
        assert q(value) == quote(str(value), safe="")
