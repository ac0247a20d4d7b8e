"""opencode as an answer provider: `opencode run --pure`, permissions denied, private data dir.

Isolation: every opencode process of an answer (probe and run) gets XDG config, data and
state directories inside the run's temporary workspace, `OPENCODE_DISABLE_PROJECT_CONFIG=1`
and an `OPENCODE_CONFIG_CONTENT` that denies every permission (opencode has no flag that
disables tools), configures no MCP server and no plugin. So the run loads none of the user's
configuration, plugins or credentials, and its session is written to a database that is
deleted with the workspace, never to the opencode.db that agentlog captures. The model
catalog cache lives in `<home>/answers/opencode-cache` so it is not rebuilt each time.

Selection: opencode has no usage reader. The local verbose catalog (`opencode models
--verbose`, within `PROBE_TIMEOUT`) must list the model with numeric input and output prices
of exactly zero; `opencodeModel: null` takes the first such model. Names ("-free") never
count. Without credentials in the isolated run, a priced model cannot bill anyone either;
a free tier's own limits surface as a provider error of the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli.services.answers.base import Generation, Selection, json_lines, looks_exhausted, one_line
from cli.services.answers.run import Workspace, run_process

NAME = "opencode"
PROBE_TIMEOUT = 30.0
TITLE = "agentlog-answer"

RUN_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "permission": "deny",
    "mcp": {},
    "plugin": [],
    "autoupdate": False,
    "share": "disabled",
    "snapshot": False,
}


def isolated_env(ws: Workspace) -> dict[str, str]:
    """The environment of every opencode process of this answer attempt."""
    env = dict(ws.env)
    for name in ("config", "data", "state"):
        path = ws.state / "opencode" / name
        path.mkdir(parents=True, exist_ok=True)
        env[f"XDG_{name.upper()}_HOME"] = str(path)
    cache = (ws.home_state / "opencode-cache") if ws.home_state else ws.state / "opencode" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    env["XDG_CACHE_HOME"] = str(cache)
    env["OPENCODE_DISABLE_PROJECT_CONFIG"] = "1"
    env["OPENCODE_DISABLE_AUTOUPDATE"] = "1"
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(RUN_CONFIG)
    return env


def argv(binary: str, model: str) -> list[str]:
    """The exact command of one tool-less generation; the prompt goes to stdin."""
    return [binary, "run", "--pure", "--format", "json", "-m", model, "--title", TITLE]


def parse_catalog(text: str) -> list[tuple[str, dict[str, Any]]]:
    """`opencode models --verbose` output: a "provider/model" line, then a JSON object."""
    decoder = json.JSONDecoder()
    out: list[tuple[str, dict[str, Any]]] = []
    pos, n = 0, len(text)
    name: str | None = None
    while pos < n:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            break
        if text[pos] == "{":
            try:
                obj, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                end = text.find("\n", pos)
                pos = n if end < 0 else end + 1
                name = None
                continue
            if name and isinstance(obj, dict):
                out.append((name, obj))
            name = None
            pos = end
        else:
            end = text.find("\n", pos)
            end = n if end < 0 else end
            line = text[pos:end].strip()
            name = line if "/" in line and " " not in line else None
            pos = end + 1
    return out


def is_zero_priced(info: dict[str, Any]) -> bool:
    cost = info.get("cost")
    if not isinstance(cost, dict):
        return False
    prices = [cost.get("input"), cost.get("output")]
    if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in prices):
        return False
    return all(p == 0 for p in prices) and info.get("status") != "deprecated"


def select(ws: Workspace, model: str | None) -> Selection:
    binary = ws.which("opencode")
    if binary is None:
        return Selection(False, reason="opencode not found on PATH")
    done = run_process(
        [binary, "models", "--verbose", "--pure"],
        env=isolated_env(ws),
        cwd=ws.cwd,
        timeout=PROBE_TIMEOUT * ws.probe_scale,
    )
    if done.timed_out:
        return Selection(False, reason="model catalog timed out")
    catalog = parse_catalog(done.stdout)
    if not catalog:
        return Selection(False, reason="model catalog unreadable")
    free = [name for name, info in catalog if is_zero_priced(info)]
    if model is None:
        if not free:
            return Selection(False, reason="no zero-priced model in the local catalog")
        return Selection(True, model=free[0])
    if model not in {name for name, _ in catalog}:
        return Selection(False, reason=f"model {model!r} is not in the local catalog")
    if model not in free:
        return Selection(False, reason=f"model {model!r} is not priced at zero in the catalog")
    return Selection(True, model=model)


def generate(ws: Workspace, prompt: str, model: str) -> Generation:
    binary = ws.which("opencode")
    if binary is None:
        return Generation(error="opencode not found on PATH", capacity=True)
    done = run_process(
        argv(binary, model),
        env=isolated_env(ws),
        cwd=ws.cwd,
        timeout=ws.generation_timeout,
        stdin_text=prompt,
    )
    parts: list[str] = []
    errors: list[str] = []
    for ev in json_lines(done.stdout):
        kind = ev.get("type")
        part = ev.get("part")
        if kind == "text" and isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif kind == "tool_use":
            errors.append("the model tried to use a tool")
        elif kind == "error":
            err = ev.get("error")
            data = err.get("data") if isinstance(err, dict) else None
            msg = data.get("message") if isinstance(data, dict) else None
            name = err.get("name") if isinstance(err, dict) else None
            errors.append(str(msg or name or err))
    if errors:
        msg = one_line(errors[-1])
        return Generation(error=f"opencode: {msg}", model=model, capacity=looks_exhausted(msg))
    if done.timed_out:
        return Generation(
            error=f"opencode: no answer within {ws.generation_timeout:g} s", model=model
        )
    if not parts:
        detail = one_line(done.stderr) or f"exit {done.returncode}"
        return Generation(error=f"opencode: no text in output ({detail})", model=model)
    return Generation(text="".join(parts), model=model)


def cache_dir(home_state: Path) -> Path:
    return home_state / "opencode-cache"
