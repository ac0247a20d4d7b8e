"""`agentlog hooks install|uninstall|status|run`: capture from inside Claude Code and Codex.

`run` is what the agents call. It captures only the transcript they name (see
`readers.capture_one`) and always exits 0, so a failing capture never blocks a session
end or a compaction (Claude Code blocks `PreCompact` on exit 2); a failure is one line on
stderr. Transcript contents are never printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from cli.config import Home, get_home

CLIENTS = ("claude", "codex")
MAX_PAYLOAD = 1 << 20


def base_command() -> list[str]:
    """The absolute agentlog program (as registered with MCP clients)."""
    from cli.commands.mcp import program

    return program()


def install_hooks(home: Home, client: str) -> tuple[Path, str]:
    """Install our hook for `client`; (settings file, "added"|"updated"|"chained"|…)."""
    from cli.commands import agent_hooks as ah

    argv = ah.hook_argv(base_command(), home.root, client)
    if client == "claude":
        path = ah.claude_settings()
        return path, ah.install_claude(path, argv)
    path = ah.codex_config()
    return path, ah.install_codex(path, argv)


def uninstall_hooks(client: str) -> tuple[Path, bool]:
    from cli.commands import agent_hooks as ah

    if client == "claude":
        path = ah.claude_settings()
        return path, ah.uninstall_claude(path)
    path = ah.codex_config()
    return path, ah.uninstall_codex(path)


def _settings_error(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group()
def hooks() -> None:
    """Agent hooks that capture each transcript as the agent finishes with it."""


@hooks.command()
@click.argument("client", type=click.Choice(CLIENTS))
@click.pass_context
def install(ctx: click.Context, client: str) -> None:
    """Install the hook (Claude Code: SessionEnd, PreCompact; Codex: notify)."""
    from cli.settings_files import SettingsError

    try:
        path, what = install_hooks(get_home(ctx), client)
    except SettingsError as exc:
        raise _settings_error(exc) from exc
    words = {"added": "installed", "updated": "updated (replaced our earlier entry)",
             "chained": "installed (your notify program still runs after it)",
             "unchanged": "already installed"}
    click.echo(f"{client} hooks {words[what]} in {path}")


@hooks.command()
@click.argument("client", type=click.Choice(CLIENTS))
def uninstall(client: str) -> None:
    """Remove only agentlog's hook entries."""
    from cli.settings_files import SettingsError

    try:
        path, changed = uninstall_hooks(client)
    except SettingsError as exc:
        raise _settings_error(exc) from exc
    click.echo(f"{client} hooks removed from {path}" if changed
               else f"no agentlog {client} hooks in {path}")


@hooks.command()
@click.option("--json", "as_json", is_flag=True)
def status(as_json: bool) -> None:
    """Whether the hooks are installed, per client."""
    from cli.commands import agent_hooks as ah

    out = {"claude": {"file": str(ah.claude_settings()),
                      "installed": ah.claude_installed(ah.claude_settings())},
           "codex": {"file": str(ah.codex_config()),
                     "installed": ah.codex_installed(ah.codex_config())}}
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    for client, row in out.items():
        click.echo(f"{client}: {'installed' if row['installed'] else 'not installed'} "
                   f"({row['file']})")


@hooks.command(hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("client", type=click.Choice(CLIENTS))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, client: str, args: tuple[str, ...]) -> None:
    """Called by the agent: capture the transcript its payload names (always exit 0)."""
    home = get_home(ctx)
    try:
        if client == "claude":
            payload = sys.stdin.read(MAX_PAYLOAD)
            _run_claude(home, payload)
        else:
            rest = list(args)
            payload = rest.pop() if rest else "{}"
            if rest and rest[0] == "--":
                rest = rest[1:]
            try:
                _run_codex(home, payload)
            finally:
                if rest:
                    _chain(rest, payload)
    except Exception as exc:  # a hook never fails its agent
        click.echo(f"agentlog hooks run {client}: {type(exc).__name__}: {exc}", err=True)


def _payload(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"payload is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("payload is not a JSON object")
    return data


def _run_claude(home: Home, text: str) -> None:
    data = _payload(text)
    path = data.get("transcript_path")
    if not isinstance(path, str) or not path:
        raise ValueError("no transcript_path in the hook input")
    # the session is over at SessionEnd: an unterminated last line need not settle
    settle = 0.0 if data.get("hook_event_name") == "SessionEnd" else None
    _capture(home, [Path(path)], settle)


def _run_codex(home: Home, text: str) -> None:
    from readers.capture_one import codex_rollout

    data = _payload(text)
    thread = data.get("thread-id") or data.get("thread_id")
    if not isinstance(thread, str):
        raise ValueError("no thread-id in the notify payload")
    roots = _roots(home)
    path = codex_rollout(roots, thread)
    if path is None:
        raise ValueError(f"no Codex rollout file for thread {thread}")
    _capture(home, [path], None, roots=roots)


def _roots(home: Home) -> list[Any]:
    from cli.commands.capture import resolve_roots

    return resolve_roots(home, {})


def _capture(home: Home, paths: list[Path], settle: float | None,
             *, roots: list[Any] | None = None) -> None:
    from cli.commands.capture_path import capture_named

    roots = roots if roots is not None else _roots(home)
    named = capture_named(home, paths, roots, settle=settle, index=True)
    if named.outside:
        raise ValueError(f"{named.outside[0]} is under no capture root "
                         f"({', '.join(str(r.path) for r in roots if r.exists) or 'none exist'})")


def _chain(argv: list[str], payload: str) -> None:
    import subprocess

    subprocess.run([*argv, payload], check=False, timeout=120)
