"""`agentlog mcp install claude|codex|opencode`: snippets, client CLIs, config files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

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
    assert proc.returncode == 0, proc.stderr
    assert "// a comment" in cfg.read_text()


CODEX_BROKEN = """# mine
model = "o9"

[mcp_servers.agentlog]
command = "old"

[mcp_servers.other]
command = "x"

[mcp_servers.agentlog]
command = "older"
"""


def test_codex_twice_new_home_repair_and_uninstall(home: Path, tmp_path: Path) -> None:
    import tomllib

    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    cfg = codex_home / "config.toml"
    cfg.write_text(CODEX_BROKEN)  # what `--file` used to leave: Codex refused to start
    env = {"PATH": _path_without_clients(), "CODEX_HOME": str(codex_home)}
    first = run_cli(home, "mcp", "install", "codex", env=env)
    assert first.returncode == 0, first.stderr
    table = tomllib.loads(cfg.read_text())["mcp_servers"]
    assert table["other"] == {"command": "x"} and table["agentlog"]["args"][-1] == "mcp"
    second = run_cli(home, "mcp", "install", "codex", env=env)
    assert b"already registered" in second.stdout
    other = tmp_path / "other-home"
    third = run_cli(other, "mcp", "install", "codex", env=env)
    assert b"replaced our earlier entry" in third.stdout
    text = cfg.read_text()
    assert text.count("[mcp_servers.agentlog]") == 1 and str(other) in text
    assert run_cli(home, "mcp", "uninstall", "codex", env=env).returncode == 0
    left = tomllib.loads(cfg.read_text())
    assert left["mcp_servers"] == {"other": {"command": "x"}} and left["model"] == "o9"
    assert b"was not registered" in run_cli(home, "mcp", "uninstall", "codex", env=env).stdout
    clean = '# mine\nmodel = "o9"  # a comment\n\n[mcp_servers.other]\ncommand = "x"\n'
    cfg.write_text(clean)
    for _ in range(2):
        assert run_cli(home, "mcp", "install", "codex", env=env).returncode == 0
    assert run_cli(home, "mcp", "uninstall", "codex", env=env).returncode == 0
    assert cfg.read_text() == clean  # byte-identical


OPENCODE_JSONC = """{
  // my opencode settings
  "$schema": "https://opencode.ai/config.json",
  "theme": "dark", /* keep */
  "mcp": {
    "other": {"type": "local", "command": ["x"]}, // another server
  },
}
"""


def test_opencode_jsonc_is_the_file_edited(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "xdg" / "opencode"
    folder.mkdir(parents=True)
    plain = folder / "opencode.json"
    plain.write_text('{"theme": "light"}\n')
    jsonc = folder / "opencode.jsonc"
    jsonc.write_text(OPENCODE_JSONC)
    env = {"PATH": _path_without_clients(), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    for _ in range(2):
        proc = run_cli(home, "mcp", "install", "opencode", env=env)
        assert proc.returncode == 0, proc.stderr
    assert b"already registered" in proc.stdout
    text = jsonc.read_text()
    assert "// my opencode settings" in text and "/* keep */" in text
    assert "// another server" in text and plain.read_text() == '{"theme": "light"}\n'
    import json5

    data = json5.loads(text)
    assert data["mcp"]["agentlog"]["command"][-3:] == ["--home", str(home), "mcp"]
    assert data["mcp"]["other"] == {"type": "local", "command": ["x"]}
    moved = run_cli(tmp_path / "other-home", "mcp", "install", "opencode", env=env)
    assert b"replaced our earlier entry" in moved.stdout
    assert json5.loads(jsonc.read_text())["mcp"]["agentlog"]["command"][-2] == str(
        tmp_path / "other-home")
    assert run_cli(home, "mcp", "uninstall", "opencode", env=env).returncode == 0
    assert jsonc.read_text() == OPENCODE_JSONC  # byte-identical


def _registry_client(bin_dir: Path, name: str, registry: Path) -> None:
    """A fake client CLI with a real registry: `add` fails when the name exists."""
    script = bin_dir / name
    script.write_text(f"""#!/bin/sh
reg={registry}
if [ "$2" = add ]; then
  if [ -f "$reg" ]; then echo "MCP server agentlog already exists in user config" >&2; exit 1; fi
  printf "%s\\n" "$@" > "$reg"; exit 0
fi
if [ "$2" = remove ]; then
  if [ -f "$reg" ]; then rm "$reg"; exit 0; fi
  echo "No MCP server found with name: agentlog" >&2; exit 1
fi
exit 2
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_claude_cli_second_run_replaces(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    registry = tmp_path / "registry.txt"
    _registry_client(bin_dir, "claude", registry)
    env = {"PATH": _path_without_clients(bin_dir)}
    first = run_cli(home, "mcp", "install", "claude", env=env)
    assert first.returncode == 0 and b"registered" in first.stdout, first.stderr
    second = run_cli(tmp_path / "h2", "mcp", "install", "claude", env=env)
    assert second.returncode == 0, second.stderr
    assert b"replaced our earlier entry" in second.stdout
    assert registry.read_text().splitlines()[-3:] == ["--home", str(tmp_path / "h2"), "mcp"]
    assert b"removed from" in run_cli(home, "mcp", "uninstall", "claude", env=env).stdout
    assert not registry.exists()


def test_claude_file_twice_keeps_other_keys(home: Path) -> None:
    path = Path(os.environ["HOME"]) / ".claude.json"
    original = '{\n  "numStartups": 3,\n  "mcpServers": {\n    "x": {"command": "y"}\n  }\n}\n'
    path.write_text(original)
    env = {"PATH": _path_without_clients()}
    for _ in range(2):
        proc = run_cli(home, "mcp", "install", "claude", "--file", env=env)
        assert proc.returncode == 0, proc.stderr
    data = json.loads(path.read_text())
    assert data["numStartups"] == 3 and data["mcpServers"]["x"] == {"command": "y"}
    assert data["mcpServers"]["agentlog"]["args"][-3:] == ["--home", str(home), "mcp"]
    assert run_cli(home, "mcp", "uninstall", "claude", "--file", env=env).returncode == 0
    assert path.read_text() == original


def test_install_with_hooks_says_what_keeps_history_current(home: Path) -> None:
    env = {"PATH": _path_without_clients()}
    proc = run_cli(home, "mcp", "install", "claude", "--file", "--with-hooks", env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "capture hooks: added" in out
    assert "MCP server captures in the background" in out
    assert "SessionEnd/PreCompact hooks" in out and "agentlog service install" in out
    settings = json.loads((Path(os.environ["HOME"]) / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"SessionEnd", "PreCompact"}


def test_codex_file_of_the_wrong_shape_is_a_one_line_error(home: Path, tmp_path: Path) -> None:
    """`mcp_servers` (or our entry) that is not a table: a clean error, the file untouched."""
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    cfg = codex_home / "config.toml"
    env = {"PATH": _path_without_clients(), "CODEX_HOME": str(codex_home)}
    for text in ("mcp_servers = [1]\n", "mcp_servers = 3\n", "[mcp_servers]\nagentlog = 1\n"):
        cfg.write_text(text)
        for verb in ("install", "uninstall"):
            proc = run_cli(home, "mcp", verb, "codex", "--file", env=env)
            err = proc.stderr.decode()
            assert proc.returncode == 1, (text, verb, err)
            assert "internal error" not in err and "Traceback" not in err, err
            assert "mcp_servers" in err and str(cfg) in err, err
            assert len(err.strip().splitlines()) == 1, err
            assert cfg.read_text() == text


def test_a_symlinked_config_is_edited_through_the_link(home: Path, tmp_path: Path) -> None:
    """Dotfiles folders link the agents' settings: the target changes, the link stays, and
    uninstall gives the target its bytes back; a dangling link gets its target made."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude.json"
    original = '{\n  "numStartups": 3\n}\n'
    target.write_text(original)
    link = Path(os.environ["HOME"]) / ".claude.json"
    link.symlink_to(target)
    env = {"PATH": _path_without_clients()}
    assert run_cli(home, "mcp", "install", "claude", "--file", env=env).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "agentlog" in json.loads(target.read_text())["mcpServers"]
    assert run_cli(home, "mcp", "uninstall", "claude", "--file", env=env).returncode == 0
    assert link.is_symlink() and target.read_text() == original

    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    absent = dotfiles / "codex" / "config.toml"  # the link's target does not exist yet
    (codex_home / "config.toml").symlink_to(absent)
    env = {"PATH": _path_without_clients(), "CODEX_HOME": str(codex_home)}
    proc = run_cli(home, "mcp", "install", "codex", env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (codex_home / "config.toml").is_symlink() and "[mcp_servers.agentlog]" in \
        absent.read_text()


def test_uninstall_removes_the_hooks_install_added(home: Path) -> None:
    env = {"PATH": _path_without_clients()}
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    original = '{\n  "theme": "dark"\n}\n'
    settings.write_text(original)
    claude_json = Path(os.environ["HOME"]) / ".claude.json"
    claude_json.write_text('{\n  "numStartups": 1\n}\n')
    assert run_cli(home, "mcp", "install", "claude", "--file", "--with-hooks",
                   env=env).returncode == 0
    assert "hooks" in json.loads(settings.read_text())
    proc = run_cli(home, "mcp", "uninstall", "claude", "--file", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "capture hooks removed" in proc.stdout.decode()
    assert settings.read_text() == original  # byte-identical
    assert claude_json.read_text() == '{\n  "numStartups": 1\n}\n'
    kept = run_cli(home, "mcp", "install", "claude", "--file", "--with-hooks", env=env)
    assert kept.returncode == 0
    proc = run_cli(home, "mcp", "uninstall", "claude", "--file", "--keep-hooks", env=env)
    assert "hooks removed" not in proc.stdout.decode()
    assert "hooks" in json.loads(settings.read_text())


NEW_CLIENTS = ("gemini", "qwen", "cursor", "copilot", "kiro", "amp", "cline", "crush")


def test_every_json_client_round_trips_byte_identical(home: Path, tmp_path: Path) -> None:
    """install + uninstall leaves each client's settings as they were: a file with other
    settings and servers (kept byte for byte), and no file at all (none left behind)."""
    from cli.services.settings.mcp_clients import json_client_config, servers_key

    env = {"PATH": _path_without_clients(), "COPILOT_HOME": str(tmp_path / "copilot-home")}
    for client in NEW_CLIENTS:
        path = json_client_config(client, {**os.environ, **env})
        for original in ('{\n    "theme": "dark",\n    "mcpServers": {\n        "x": {\n'
                         '            "command": "y"\n        }\n    }\n}\n', "", "\n", None):
            if original is None:
                path.unlink(missing_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(original)
            got = run_cli(home, "mcp", "install", client, env=env)
            assert got.returncode == 0, (client, got.stderr.decode())
            assert "registered" in got.stdout.decode(), client
            again = run_cli(home, "mcp", "install", client, env=env)
            assert "already registered (unchanged)" in again.stdout.decode(), client
            entry = json.loads(path.read_text())[servers_key(client)]["agentlog"]
            assert entry["args"][-3:] == ["--home", str(home), "mcp"], client
            if client == "copilot":
                assert entry["type"] == "local" and entry["tools"] == ["*"]
            if client == "crush":
                assert entry["type"] == "stdio" and entry["command"].endswith(
                    ("agentlog", "python", "python3")), entry
            gone = run_cli(home, "mcp", "uninstall", client, env=env)
            assert gone.returncode == 0 and "removed from" in gone.stdout.decode(), client
            if original is None:
                assert not path.exists(), client
            else:
                assert path.read_text() == original, client
            leftovers = [p.name for p in path.parent.iterdir() if "agentlog" in p.name]
            assert leftovers == [], (client, leftovers)


def test_codex_is_always_registered_in_its_file(home: Path, tmp_path: Path) -> None:
    """With `codex` on PATH the file is still edited by agentlog (its CLI drops a user's
    inline comments and its `remove` exits 0 when nothing is there): the first install says
    "registered", the second "unchanged", comments stay, the CLI is never run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "argv.txt"
    _fake_client(bin_dir, "codex", log)
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    cfg = codex_home / "config.toml"
    original = 'model = "o9"  # my favourite\n'
    cfg.write_text(original)
    env = {"PATH": _path_without_clients(bin_dir), "CODEX_HOME": str(codex_home)}
    first = run_cli(home, "mcp", "install", "codex", env=env)
    assert first.returncode == 0 and "registered (" in first.stdout.decode()
    second = run_cli(home, "mcp", "install", "codex", env=env)
    assert "already registered (unchanged)" in second.stdout.decode()
    assert "# my favourite" in cfg.read_text() and not log.exists()
    assert run_cli(home, "mcp", "uninstall", "codex", env=env).returncode == 0
    assert cfg.read_text() == original and not log.exists()


@pytest.mark.parametrize("original", [
    None, "", "\n", '{\n  "theme": "x"\n}\n', '{"mcp": {}}\n',
    '{\n  // hi\n  "mcp": {"o": {"type": "local", "command": ["x"]}},\n}\n',
])
def test_opencode_round_trips_byte_identical(home: Path, tmp_path: Path,
                                             original: str | None) -> None:
    """install + uninstall leaves opencode.json as it was (no empty "mcp" left, a created
    file removed, no backups beside it) for a missing, empty, plain and commented file."""
    xdg = tmp_path / "xdg"
    folder = xdg / "opencode"
    folder.mkdir(parents=True)
    path = folder / "opencode.json"
    if original is not None:
        path.write_text(original)
    env = {"PATH": _path_without_clients(), "XDG_CONFIG_HOME": str(xdg)}
    assert run_cli(home, "mcp", "install", "opencode", env=env).returncode == 0
    gone = run_cli(home, "mcp", "uninstall", "opencode", env=env)
    assert gone.returncode == 0 and "removed from" in gone.stdout.decode()
    if original is None:
        assert not path.exists()
    else:
        assert path.read_text() == original
    assert [p.name for p in folder.iterdir() if "agentlog" in p.name] == []


@pytest.mark.parametrize("client", ["gemini", "amp", "opencode", "crush", "goose", "continue"])
def test_dangling_link_stays_dangling(home: Path, tmp_path: Path, client: str) -> None:
    """A settings file that is a dangling link into a dotfiles folder: install writes the
    target through the link, uninstall removes the target it created; the link stays."""
    from cli.services.settings.mcp_clients import (
        continue_block,
        goose_config,
        json_client_config,
        opencode_config,
    )

    env = {"PATH": _path_without_clients(), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    full = {**os.environ, **env}
    where = {"opencode": opencode_config, "goose": goose_config, "continue": continue_block}
    path = where[client](full) if client in where else json_client_config(client, full)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "dots" / "settings.json"
    target.parent.mkdir()
    path.symlink_to(target)
    assert run_cli(home, "mcp", "install", client, env=env).returncode == 0
    assert path.is_symlink() and "agentlog" in target.read_text()
    assert run_cli(home, "mcp", "uninstall", client, env=env).returncode == 0
    assert path.is_symlink() and not target.exists()
    assert [p.name for p in path.parent.iterdir() if "agentlog" in p.name and p != path] == []


JSONC_SETTINGS = """{
  // my settings: agentlog must keep this comment
  "theme": "dark", /* and this one */
  "%s": {
    "x": {"command": "y"}, // another server
  },
}
"""


@pytest.mark.parametrize("client", ["gemini", "qwen", "amp", "crush"])
@pytest.mark.parametrize("shape", ["servers", "no servers", "comment only"])
def test_jsonc_settings_round_trip_byte_identical(home: Path, tmp_path: Path, client: str,
                                                  shape: str) -> None:
    """A settings file with comments and trailing commas (JSONC, which these clients read)
    is edited surgically: comments stay while installed, the second install is unchanged,
    another home replaces our entry, and uninstall gives the exact bytes back."""
    import json5

    from cli.services.settings.mcp_clients import json_client_config, servers_key

    key = servers_key(client)
    original = {
        "servers": JSONC_SETTINGS % key,
        "no servers": '{\n  // only a comment and a setting\n  "theme": "dark",\n}\n',
        "comment only": "// nothing set yet\n{}\n",
    }[shape]
    env = {"PATH": _path_without_clients()}
    path = json_client_config(client, {**os.environ, **env})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(original)
    first = run_cli(home, "mcp", "install", client, env=env)
    assert first.returncode == 0, first.stderr.decode()
    assert "registered (" in first.stdout.decode()
    again = run_cli(home, "mcp", "install", client, env=env)
    assert "already registered (unchanged)" in again.stdout.decode(), again.stderr.decode()
    text = path.read_text()
    for comment in ("// my settings", "/* and this one */", "// another server",
                    "// only a comment", "// nothing set yet"):
        assert (comment in text) == (comment in original), (comment, text)
    data = json5.loads(text)
    assert data[key]["agentlog"]["args"][-3:] == ["--home", str(home), "mcp"]
    if shape == "servers":
        assert data[key]["x"] == {"command": "y"}
    moved = run_cli(tmp_path / "other-home", "mcp", "install", client, env=env)
    assert "replaced our earlier entry" in moved.stdout.decode(), moved.stderr.decode()
    assert json5.loads(path.read_text())[key]["agentlog"]["args"][-2] == str(
        tmp_path / "other-home")
    gone = run_cli(home, "mcp", "uninstall", client, env=env)
    assert gone.returncode == 0 and "removed from" in gone.stdout.decode(), gone.stderr
    assert path.read_text() == original
    assert [p.name for p in path.parent.iterdir() if "agentlog" in p.name] == []
    absent = run_cli(home, "mcp", "uninstall", client, env=env)
    assert "was not registered" in absent.stdout.decode() and path.read_text() == original


GOOSE_CONFIG = """# my goose settings
GOOSE_PROVIDER: anthropic  # the provider
GOOSE_MODEL: "claude-sonnet-4-5"
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  filesystem:
    type: stdio
    name: filesystem
    enabled: false
    cmd: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]  # flow style kept
    envs: {}
    timeout: 300
"""


@pytest.mark.parametrize("original", [
    None, "", "\n", GOOSE_CONFIG, "GOOSE_MODE: smart_approve  # no extensions yet\n",
    "extensions: {}\n",
])
def test_goose_round_trips_byte_identical(home: Path, tmp_path: Path,
                                          original: str | None) -> None:
    """`extensions.agentlog` in Goose's config.yaml: a stdio extension as its config-files
    guide shows it; comments kept while installed; install + uninstall gives the exact bytes
    back, and a file the install created goes again."""
    from ruamel.yaml import YAML

    from cli.services.settings.mcp_clients import goose_config

    env = {"PATH": _path_without_clients()}
    path = goose_config({**os.environ, **env})
    path.parent.mkdir(parents=True, exist_ok=True)
    if original is not None:
        path.write_text(original)
    first = run_cli(home, "mcp", "install", "goose", env=env)
    assert first.returncode == 0, first.stderr.decode()
    assert "registered (" in first.stdout.decode()
    again = run_cli(home, "mcp", "install", "goose", env=env)
    assert "already registered (unchanged)" in again.stdout.decode(), again.stderr.decode()
    text = path.read_text()
    data = YAML(typ="safe").load(text)
    entry = data["extensions"]["agentlog"]
    assert entry["type"] == "stdio" and entry["enabled"] is True and entry["name"] == "agentlog"
    assert entry["args"][-3:] == ["--home", str(home), "mcp"] and entry["timeout"] == 300
    if original == GOOSE_CONFIG:
        assert "# my goose settings" in text and "# the provider" in text
        assert "# flow style kept" in text and data["extensions"]["filesystem"]["cmd"] == "npx"
        moved = run_cli(tmp_path / "other-home", "mcp", "install", "goose", env=env)
        assert "replaced our earlier entry" in moved.stdout.decode()
        assert YAML(typ="safe").load(path.read_text())["extensions"]["agentlog"]["args"][-2] \
            == str(tmp_path / "other-home")
    gone = run_cli(home, "mcp", "uninstall", "goose", env=env)
    assert gone.returncode == 0 and "removed from" in gone.stdout.decode(), gone.stderr
    if original is None:
        assert not path.exists()
    else:
        assert path.read_text() == original
    assert [p.name for p in path.parent.iterdir() if "agentlog" in p.name] == []


def test_goose_keeps_keys_the_user_added_and_refuses_wrong_shapes(home: Path) -> None:
    from ruamel.yaml import YAML

    from cli.services.settings.mcp_clients import goose_config

    env = {"PATH": _path_without_clients()}
    path = goose_config({**os.environ, **env})
    path.parent.mkdir(parents=True, exist_ok=True)
    assert run_cli(home, "mcp", "install", "goose", env=env).returncode == 0
    path.write_text(path.read_text().replace("timeout: 300", "timeout: 600\n    bundled: false")
                    .replace("enabled: true", "enabled: false"))
    again = run_cli(home, "mcp", "install", "goose", env=env)
    assert "replaced our earlier entry" in again.stdout.decode()  # enabled again
    entry = YAML(typ="safe").load(path.read_text())["extensions"]["agentlog"]
    assert entry["bundled"] is False and entry["timeout"] == 600 and entry["enabled"] is True
    third = run_cli(home, "mcp", "install", "goose", env=env)
    assert "already registered (unchanged)" in third.stdout.decode()
    for text in ("extensions: [1]\n", "extensions:\n  agentlog: 3\n", "a: [\n"):
        path.write_text(text)
        for verb in ("install", "uninstall"):
            proc = run_cli(home, "mcp", verb, "goose", env=env)
            err = proc.stderr.decode()
            assert proc.returncode == 1, (text, verb, err)
            assert "Traceback" not in err and str(path) in err, err
            assert len(err.strip().splitlines()) == 1, err
            assert path.read_text() == text


def test_continue_block_file_is_written_and_removed(home: Path, tmp_path: Path) -> None:
    """Continue reads every YAML block in its global mcpServers folder: agentlog writes its
    own `agentlog.yaml` there (name, version, schema, one stdio server), leaves the others
    alone, and uninstall deletes it; a foreign `agentlog.yaml` is never overwritten."""
    from ruamel.yaml import YAML

    from cli.services.settings.mcp_clients import continue_block

    env = {"PATH": _path_without_clients()}
    path = continue_block({**os.environ, **env})
    path.parent.mkdir(parents=True)
    theirs = path.parent / "playwright.yaml"
    theirs.write_text("name: Playwright\nversion: 0.0.1\nschema: v1\nmcpServers: []\n")
    config = path.parent.parent / "config.yaml"
    config.write_text("name: mine  # untouched\n")
    first = run_cli(home, "mcp", "install", "continue", env=env)
    assert first.returncode == 0 and "registered (" in first.stdout.decode(), first.stderr
    again = run_cli(home, "mcp", "install", "continue", env=env)
    assert "already registered (unchanged)" in again.stdout.decode()
    block = YAML(typ="safe").load(path.read_text())
    assert (block["name"], block["version"], block["schema"]) == ("agentlog", "0.0.1", "v1")
    (server,) = block["mcpServers"]
    assert server["name"] == "agentlog" and server["type"] == "stdio"
    assert server["args"][-3:] == ["--home", str(home), "mcp"]
    moved = run_cli(tmp_path / "other-home", "mcp", "install", "continue", env=env)
    assert "replaced our earlier entry" in moved.stdout.decode()
    gone = run_cli(home, "mcp", "uninstall", "continue", env=env)
    assert gone.returncode == 0 and "removed from" in gone.stdout.decode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["playwright.yaml"]
    assert config.read_text() == "name: mine  # untouched\n"
    assert "was not registered" in run_cli(home, "mcp", "uninstall", "continue",
                                           env=env).stdout.decode()
    foreign = "name: agentlog\nversion: 9\nschema: v1\n"
    path.write_text(foreign)
    for verb in ("install", "uninstall"):
        proc = run_cli(home, "mcp", verb, "continue", env=env)
        assert proc.returncode == 1 and "not written by agentlog" in proc.stderr.decode()
        assert path.read_text() == foreign


def test_print_snippets_of_the_yaml_and_crush_clients(home: Path) -> None:
    from ruamel.yaml import YAML

    for client in ("crush", "goose", "continue"):
        proc = run_cli(home, "mcp", "install", client, "--print")
        assert proc.returncode == 0, proc.stderr
        head, body = proc.stdout.decode().split("\n", 1)
        assert head.startswith(("# edit ", "# write ")), head
        data = YAML(typ="safe").load(body)  # JSON is YAML too
        entry = {"crush": lambda d: d["mcp"]["agentlog"],
                 "goose": lambda d: d["extensions"]["agentlog"],
                 "continue": lambda d: d["mcpServers"][0]}[client](data)
        assert entry["args"][-3:] == ["--home", str(home), "mcp"], client


@pytest.mark.parametrize("client", ["gemini", "cursor", "crush"])
def test_an_empty_servers_object_of_the_user_stays(home: Path, client: str) -> None:
    """A file whose servers object was already empty gets it back, empty, byte for byte."""
    from cli.services.settings.mcp_clients import json_client_config, servers_key

    env = {"PATH": _path_without_clients()}
    path = json_client_config(client, {**os.environ, **env})
    path.parent.mkdir(parents=True, exist_ok=True)
    original = '{\n  "' + servers_key(client) + '": {}\n}\n'
    path.write_text(original)
    assert run_cli(home, "mcp", "install", client, env=env).returncode == 0
    assert run_cli(home, "mcp", "uninstall", client, env=env).returncode == 0
    assert path.read_text() == original
    assert [p.name for p in path.parent.iterdir() if "agentlog" in p.name] == []


@pytest.mark.parametrize("text", [
    '{ // broken\n  "a": [1,\n', '{ // servers of the wrong shape\n  "mcpServers": [1],\n}\n',
])
def test_a_jsonc_file_agentlog_cannot_edit_is_left_alone(home: Path, text: str) -> None:
    from cli.services.settings.mcp_clients import json_client_config

    env = {"PATH": _path_without_clients()}
    path = json_client_config("gemini", {**os.environ, **env})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    for verb in ("install", "uninstall"):
        proc = run_cli(home, "mcp", verb, "gemini", env=env)
        err = proc.stderr.decode()
        assert proc.returncode == 1 and "Traceback" not in err, (verb, err)
        assert str(path) in err and len(err.strip().splitlines()) == 1, err
        assert path.read_text() == text
        assert [p.name for p in path.parent.iterdir() if "agentlog" in p.name] == []
