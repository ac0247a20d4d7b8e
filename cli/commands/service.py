"""`agentlog service install|uninstall|status`: keep `capture --watch` running for a home.

Thin over `cli.services.settings.service_units` (unit files, the service manager) and
`projections.query.coverage` (last capture, pending sources).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click

from cli.services.config import Home, get_home


def _unit(home: Home) -> Any:
    from cli.services.settings.service_units import unit_for

    return unit_for(home.root)


@click.group()
def service() -> None:
    """A user service (systemd on Linux, launchd on macOS) running `capture --watch`."""


@service.command()
@click.option("--no-start", is_flag=True, help="Write the unit file only; print the command "
                                               "that enables it.")
@click.pass_context
def install(ctx: click.Context, no_start: bool) -> None:
    """Write this home's unit file and enable it (idempotent)."""
    from cli.services.settings import service_units as su
    from cli.services.settings.mcp_clients import program

    home = get_home(ctx)
    unit = _unit(home)
    argv = [*program(), "--home", str(home.root), "capture", "--watch"]
    written = su.write_unit(unit, su.render(unit, argv, home.root, dict(os.environ)))
    click.echo(f"{'wrote' if written else 'unchanged:'} {unit.path}")
    if no_start:
        click.echo(f"enable it with: {unit.enable_command()}")
        return
    got = su.enable(unit)
    if got.ok:
        click.echo(f"enabled and started {unit.name}")
        return
    _without_a_manager(home, argv, unit, got.detail)


def _without_a_manager(home: Home, argv: list[str], unit: Any, detail: str) -> None:
    """No service manager answers (a container, CI, no user bus): say what works here, and
    fail (exit 1): nothing will run the unit."""
    import shlex

    from cli.services.errors import Failure

    prog = shlex.join(argv[:-4])
    click.echo(
        f"no service manager answers here ({detail}): the unit file is written, but nothing\n"
        "runs it. What keeps this home captured without one (a container, CI):\n"
        f"  {prog} --home {shlex.quote(str(home.root))} hooks install\n"
        "      the agents' own hooks capture each transcript as they write it\n"
        f"  {shlex.join(argv)}\n"
        "      under the container's supervisor (its CMD or entrypoint, supervisord, s6, tini)\n"
        f"  {prog} --home {shlex.quote(str(home.root))} mcp (or serve)\n"
        "      an agent's MCP server or the dashboard captures while it runs\n"
        f"Where a user systemd runs, start the unit with:\n  {unit.enable_command()}")
    raise Failure(f"{unit.name} could not be started here ({detail})",
                  "use one of the ways above, or start it where a service manager runs")


@service.command()
@click.pass_context
def uninstall(ctx: click.Context) -> None:
    """Stop and disable this home's service and remove its unit file (only that file)."""
    from cli.services.settings import service_units as su

    unit = _unit(get_home(ctx))
    if not unit.path.exists():
        click.echo(f"no service installed for this home ({unit.path})")
        return
    got = su.disable(unit)
    su.remove_unit(unit)
    su.reload_manager(unit)
    click.echo(f"removed {unit.path}")
    if not got.ok:
        click.echo(f"could not stop it here ({got.detail}); if it runs, run:\n"
                   f"  {unit.disable_command()}")


def service_status(home: Home) -> dict[str, Any]:
    from cli.services.settings import service_units as su
    from projections.query import coverage

    unit = _unit(home)
    installed = unit.path.exists()
    st = su.state(unit) if installed else {"running": False, "since": None, "pid": None,
                                             "detail": "not installed"}
    cov = coverage(home.history_db)
    last = cov.get("lastCaptureAt")
    return {
        "unit": unit.name, "file": str(unit.path), "installed": installed, **st,
        "lastCaptureAt": last,
        "lastCaptureAgeS": None if last is None else max(0, int(time.time() - last / 1000)),
        "sourcesPending": cov.get("sourcesPending", 0),
        "enable": unit.enable_command(),
    }


@service.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Whether the service runs, since when, the last capture and what is pending."""
    home = get_home(ctx)
    out = service_status(home)
    from cli.services.capture.retention import warn_once

    warn_once(home)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    if not out["installed"]:
        runs = "not installed"
    elif out["running"] is None:
        runs = f"installed; state unknown ({out['detail']})"
    else:
        runs = "running" if out["running"] else f"installed, not running ({out['detail']})"
        if out["running"] and out["since"]:
            runs += f" since {out['since']}"
    click.echo(f"{out['unit']}: {runs}")
    if out["lastCaptureAt"] is None:
        click.echo("last capture: never (history.db is empty)")
    else:
        when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(out["lastCaptureAt"] / 1000))
        click.echo(f"last capture: {when} ({_age(out['lastCaptureAgeS'])} ago)")
    click.echo(f"pending: {out['sourcesPending']} sources with bytes not yet indexed")
    if out["installed"] and not out["running"]:
        click.echo(f"start it with: {out['enable']}")


def _age(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"
