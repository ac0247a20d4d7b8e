"""The background capture service: a systemd user unit (Linux) or a launchd agent (macOS).

Promises:
- the unit runs `<agentlog> --home <home> capture --watch` for one home; its name carries
  a short hash of the home, so services of two homes never replace each other;
- only the unit's own file is written (Linux: `$XDG_CONFIG_HOME/systemd/user/`, macOS:
  `~/Library/LaunchAgents/`), atomically, and only when its content changes: install twice
  writes once;
- the service manager is asked to (re)load and start it; where that cannot be done
  (no systemctl, no user bus: containers, CI) the one command that does it is returned;
- the environment variables that choose capture roots (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
  `XDG_DATA_HOME`, `AGENTLOG_RUNS_DIR`) are written into the unit when set at install
  time, because a service manager does not pass a login shell's environment.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from readers.roots import root_id

ROOT_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "AGENTLOG_RUNS_DIR")


@dataclass(frozen=True)
class Unit:
    """Where a home's service lives and how it is named."""

    kind: str  # "systemd" | "launchd"
    name: str  # systemd unit name, or launchd label
    path: Path

    def enable_command(self) -> str:
        if self.kind == "systemd":
            return (f"systemctl --user daemon-reload && systemctl --user enable --now "
                    f"{self.name}")
        return f"launchctl bootstrap gui/$(id -u) {shlex.quote(str(self.path))}"

    def disable_command(self) -> str:
        if self.kind == "systemd":
            return f"systemctl --user disable --now {self.name}"
        return f"launchctl bootout gui/$(id -u)/{self.name}"


def platform_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def unit_for(home: Path, env: dict[str, str] | None = None, kind: str | None = None) -> Unit:
    env = dict(os.environ) if env is None else env
    kind = kind or platform_kind()
    tag = root_id(home)[:8]
    user_home = Path(env.get("HOME") or os.path.expanduser("~"))
    if kind == "launchd":
        label = f"dev.agentlog.capture.{tag}"
        return Unit(kind, label, user_home / "Library" / "LaunchAgents" / f"{label}.plist")
    config = Path(env.get("XDG_CONFIG_HOME") or user_home / ".config")
    name = f"agentlog-capture-{tag}.service"
    return Unit(kind, name, config / "systemd" / "user" / name)


def _systemd_quote(arg: str) -> str:
    """One ExecStart word: double-quoted, with systemd's `%` and `$` expansions escaped."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def _env_value(value: str) -> str:
    return value.replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')


def render_systemd(argv: list[str], home: Path, env: dict[str, str]) -> str:
    lines = [
        "# Written by `agentlog service install`; `agentlog service uninstall` removes it.",
        "[Unit]",
        f"Description=agentlog: keep capturing AI agent history into {home}",
        "",
        "[Service]",
        "Type=simple",
        "ExecStart=" + " ".join(_systemd_quote(a) for a in argv),
    ]
    pairs = [f'"{key}={_env_value(env[key])}"' for key in ROOT_ENV if env.get(key)]
    if pairs:
        lines.append("Environment=" + " ".join(pairs))
    lines += [
        "Restart=on-failure",
        "RestartSec=10",
        "Nice=10",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def render_launchd(label: str, argv: list[str], home: Path, env: dict[str, str]) -> str:
    body: dict[str, object] = {
        "Label": label,
        "ProgramArguments": argv,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Background",
        "StandardErrorPath": str(home / "service.log"),
    }
    extra = {k: env[k] for k in ROOT_ENV if env.get(k)}
    if extra:
        body["EnvironmentVariables"] = extra
    return plistlib.dumps(body).decode("utf-8")


def render(unit: Unit, argv: list[str], home: Path, env: dict[str, str]) -> str:
    if unit.kind == "launchd":
        return render_launchd(unit.name, argv, home, env)
    return render_systemd(argv, home, env)


def write_unit(unit: Unit, text: str) -> bool:
    """Write the unit file when its content differs; True when written."""
    try:
        if unit.path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    from eventlog.files import write_atomic

    write_atomic(unit.path, text.encode(), mode=0o644)
    return True


def remove_unit(unit: Unit) -> bool:
    try:
        unit.path.unlink()
    except FileNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class Managed:
    """What the service manager said: ok, or why not (then the user runs `command`)."""

    ok: bool
    detail: str


def _run(argv: list[str]) -> Managed:
    if shutil.which(argv[0]) is None:
        return Managed(False, f"{argv[0]} not found")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Managed(False, str(exc))
    out = (proc.stderr or proc.stdout).strip().splitlines()
    return Managed(proc.returncode == 0, out[-1][:300] if out else f"exit {proc.returncode}")


def enable(unit: Unit) -> Managed:
    if unit.kind == "systemd":
        reload = _run(["systemctl", "--user", "daemon-reload"])
        if not reload.ok:
            return reload
        return _run(["systemctl", "--user", "enable", "--now", unit.name])
    uid = str(os.getuid())
    _run(["launchctl", "bootout", f"gui/{uid}/{unit.name}"])  # a loaded older version
    return _run(["launchctl", "bootstrap", f"gui/{uid}", str(unit.path)])


def disable(unit: Unit) -> Managed:
    if unit.kind == "systemd":
        return _run(["systemctl", "--user", "disable", "--now", unit.name])
    return _run(["launchctl", "bootout", f"gui/{os.getuid()}/{unit.name}"])


def reload_manager(unit: Unit) -> None:
    if unit.kind == "systemd":
        _run(["systemctl", "--user", "daemon-reload"])


def state(unit: Unit) -> dict[str, object]:
    """{"running": bool|None, "since": str|None, "pid": int|None, "detail": str}."""
    if unit.kind == "systemd":
        if shutil.which("systemctl") is None:
            return {"running": None, "since": None, "pid": None, "detail": "systemctl not found"}
        try:
            proc = subprocess.run(
                ["systemctl", "--user", "show", unit.name, "-p", "ActiveState",
                 "-p", "ActiveEnterTimestamp", "-p", "MainPID"],
                capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"running": None, "since": None, "pid": None, "detail": str(exc)}
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            return {"running": None, "since": None, "pid": None,
                    "detail": detail[-1][:300] if detail else f"exit {proc.returncode}"}
        props = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
        active = props.get("ActiveState", "")
        pid = int(props.get("MainPID") or 0) or None
        return {"running": active == "active", "since": props.get("ActiveEnterTimestamp") or None,
                "pid": pid, "detail": active or "unknown"}
    got = _run(["launchctl", "print", f"gui/{os.getuid()}/{unit.name}"])
    return {"running": got.ok, "since": None, "pid": None, "detail": got.detail}
