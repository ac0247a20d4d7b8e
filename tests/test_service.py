"""`agentlog service`: the systemd user unit (checked by systemd-analyze), idempotence, status."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
from pathlib import Path

from cli.services.settings import service_units as su
from tests.conftest import run_cli, unavailable


def _fake_systemctl(tmp_path: Path, *, ok: bool) -> tuple[dict[str, str], Path]:
    """A systemctl on PATH that logs its arguments; it fails like a container without a bus."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "systemctl.log"
    body = ('echo "ActiveState=active"; echo "ActiveEnterTimestamp=Tue 2026-12-01 10:00:00 UTC";'
            ' echo "MainPID=4242"; exit 0' if ok
            else 'echo "Failed to connect to bus: No medium found" >&2; exit 1')
    script = bin_dir / "systemctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{body}\n')
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, log


def _unit_file() -> Path:
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    found = list(units.glob("agentlog-capture-*.service"))
    assert len(found) == 1, found
    return found[0]


def test_install_writes_one_unit_and_prints_the_enable_command(home: Path,
                                                               tmp_path: Path) -> None:
    env, log = _fake_systemctl(tmp_path, ok=False)
    env["CODEX_HOME"] = str(tmp_path / "codex home %h")
    proc = run_cli(home, "service", "install", env=env)
    # no user bus (a container): a failure that says what works there, not exit 0
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode()
    unit = _unit_file()
    assert f"wrote {unit}" in out
    assert "systemctl --user daemon-reload && systemctl --user enable --now " + unit.name in out
    assert "no service manager answers here (Failed to connect to bus" in out
    assert f"--home {home} hooks install" in out
    assert f"--home {home} capture --watch\n" in out and "supervisor" in out
    assert b"could not be started here" in proc.stderr
    text = unit.read_text()
    again = run_cli(home, "service", "install", env=env)
    assert b"unchanged:" in again.stdout and unit.read_text() == text  # idempotent
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    exec_start = parser["Service"]["ExecStart"]
    words = [w.replace("%%", "%").replace("$$", "$") for w in
             json.loads("[" + exec_start.replace('" "', '", "') + "]")]
    assert words[-4:] == ["--home", str(home), "capture", "--watch"]
    assert Path(words[0]).is_absolute()
    assert f'"CODEX_HOME={tmp_path}/codex home %%h"' in parser["Service"]["Environment"]
    assert parser["Install"]["WantedBy"] == "default.target"
    assert "daemon-reload" in log.read_text()
    # another home gets its own unit; uninstall removes only ours
    other = tmp_path / "other-home"
    assert run_cli(other, "service", "install", "--no-start", env=env).returncode == 0
    units = sorted(unit.parent.iterdir())
    assert len(units) == 2
    proc = run_cli(home, "service", "uninstall", env=env)
    assert proc.returncode == 0, proc.stderr
    assert not unit.exists() and len(list(unit.parent.iterdir())) == 1


def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        unavailable("systemd-analyze not installed (Debian package systemd)")
    home = tmp_path / "a home with spaces"
    unit = su.unit_for(home, {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    exe = shutil.which("sh")
    assert exe is not None
    text = su.render(unit, [exe, "--home", str(home), "capture", "--watch"], home,
                     {"CLAUDE_CONFIG_DIR": str(tmp_path / "c$laude 50%")})
    su.write_unit(unit, text)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    proc = subprocess.run([analyze, "--user", "verify", str(unit.path)], capture_output=True,
                          text=True, env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert unit.path.name not in proc.stderr, proc.stderr  # warnings name the file
    bad = unit.path.with_name("agentlog-bad.service")
    bad.write_text(text.replace("Restart=on-failure", "Restart=sometimes"))
    proc = subprocess.run([analyze, "--user", "verify", str(bad)], capture_output=True,
                          text=True, env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
                          timeout=60)
    assert bad.name in proc.stderr  # the check can fail


def test_launchd_plist_parses(tmp_path: Path) -> None:
    import plistlib

    home = tmp_path / "h"
    unit = su.unit_for(home, {"HOME": str(tmp_path)}, kind="launchd")
    assert unit.path.parent == tmp_path / "Library" / "LaunchAgents"
    body = plistlib.loads(su.render(unit, ["/x/agentlog", "--home", str(home), "capture",
                                           "--watch"], home, {"CODEX_HOME": "/c"}).encode())
    assert body["Label"] == unit.name and body["ProgramArguments"][-1] == "--watch"
    assert body["EnvironmentVariables"] == {"CODEX_HOME": "/c"} and body["RunAtLoad"] is True


def test_status_reports_state_last_capture_and_pending(home: Path, tmp_path: Path) -> None:
    env, _ = _fake_systemctl(tmp_path, ok=True)
    proc = run_cli(home, "service", "status", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["installed"] is False and out["lastCaptureAt"] is None
    assert run_cli(home, "demo", "--no-search").returncode == 0
    assert run_cli(home, "service", "install", env=env).returncode == 0
    out = json.loads(run_cli(home, "service", "status", "--json", env=env).stdout)
    assert out["installed"] is True and out["running"] is True and out["pid"] == 4242
    assert out["since"].startswith("Tue 2026-12-01")
    assert isinstance(out["lastCaptureAt"], int) and out["sourcesPending"] == 0
    human = run_cli(home, "service", "status", env=env).stdout.decode()
    assert "running since Tue 2026-12-01" in human and "last capture:" in human
