"""`agentlog mcp install claude|codex|opencode`: snippets, client CLIs, config files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.conftest import run_cli


def _fake_client(bin_dir: Path, name: str, log: Path) -> None:
    script = bin_dir / name
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def _path_without_clients(bin_dir: Path | None = None) -> str:
    parts = [p for p in os.environ.get("PATH", "").split(os.pathsep)
             if not any((Path(p) / c).exists() for c in ("claude", "codex", "opencode"))]
    return os.pathsep.join(([str(bin_dir)] if bin_dir else []) + parts)


def test_print_snippets_name_the_home(home: Path) -> None:
    for client in ("claude", "codex", "opencode"):
        proc = run_cli(home, "mcp", "install", client, "--print")
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode()
        assert "--home" in out and str(home) in out and "mcp" in out
    claude = run_cli(home, "mcp", "install", "claude", "--print").stdout.decode()
    body = json.loads(claude.split("\n", 1)[1])
    entry = body["mcpServers"]["agentlog"]
    assert entry["type"] == "stdio" and entry["args"][-3:] == ["--home", str(home), "mcp"]
    assert claude.startswith("# claude mcp add -s user agentlog -- ")
    opencode = json.loads(
        run_cli(home, "mcp", "install", "opencode", "--print").stdout.decode().split("\n", 1)[1])
    oc = opencode["mcp"]["agentlog"]
    assert oc["type"] == "local" and oc["command"][-3:] == ["--home", str(home), "mcp"]
    codex = run_cli(home, "mcp", "install", "codex", "--print").stdout.decode()
    assert "[mcp_servers.agentlog]" in codex and f'"{home}"' in codex


def test_uses_client_cli_when_present(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv.txt"
    _fake_client(bin_dir, "claude", log)
    proc = run_cli(home, "mcp", "install", "claude", env={"PATH": _path_without_clients(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    argv = log.read_text().splitlines()
    assert argv[:6] == ["mcp", "add", "-s", "user", "agentlog", "--"]
    assert argv[-3:] == ["--home", str(home), "mcp"]


def test_claude_without_cli_is_an_error(home: Path) -> None:
    proc = run_cli(home, "mcp", "install", "claude", env={"PATH": _path_without_clients()})
    assert proc.returncode != 0 and b"--print" in proc.stderr


def test_codex_config_file(home: Path, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    cfg = codex_home / "config.toml"
    cfg.write_text('model = "o9"\n\n[mcp_servers.agentlog]\ncommand = "old"\n\n'
                   '[mcp_servers.other]\ncommand = "x"\n')
    env = {"PATH": _path_without_clients(), "CODEX_HOME": str(codex_home)}
    assert run_cli(home, "mcp", "install", "codex", env=env).returncode == 0
    assert run_cli(home, "mcp", "install", "codex", env=env).returncode == 0  # idempotent
    text = cfg.read_text()
    assert text.count("[mcp_servers.agentlog]") == 1 and '"old"' not in text
    assert 'model = "o9"' in text and "[mcp_servers.other]" in text
    import tomllib

    table = tomllib.loads(text)["mcp_servers"]["agentlog"]
    assert table["args"][-3:] == ["--home", str(home), "mcp"]


def test_opencode_config_file(home: Path, tmp_path: Path) -> None:
    cfg_dir = tmp_path / "xdg"
    (cfg_dir / "opencode").mkdir(parents=True)
    cfg = cfg_dir / "opencode" / "opencode.json"
    cfg.write_text(json.dumps({"theme": "dark", "mcp": {"other": {"type": "local"}}}))
    env = {"PATH": _path_without_clients(), "XDG_CONFIG_HOME": str(cfg_dir)}
    proc = run_cli(home, "mcp", "install", "opencode", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(cfg.read_text())
    assert data["theme"] == "dark" and "other" in data["mcp"]
    assert data["mcp"]["agentlog"]["command"][-3:] == ["--home", str(home), "mcp"]
    cfg.write_text('{ // a comment\n "theme": "dark" }')
    proc = run_cli(home, "mcp", "install", "opencode", env=env)
    assert proc.returncode != 0 and b"by hand" in proc.stderr
    assert "comment" in cfg.read_text()
