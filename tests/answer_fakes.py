"""Fake `claude`, `codex` and `opencode` binaries for the answer tests.

Each fake is a small Python script written into a temp dir that the tests put alone on PATH.
It prints the output shapes of the real CLIs (Claude Code 2.1 stream-json, Codex 0.17x
`exec --json` and app-server JSON-RPC, opencode 1.18 `run --format json` and
`models --verbose`), as recorded from the real binaries, and behaves as the scenario file
named by $FAKE_AGENT_SCENARIO says. Every invocation appends {tool, argv, cwd, cwd_entries,
stdin, env} to the JSON Lines file named by $FAKE_AGENT_LOG.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

FAKE_SOURCE = r"""
import json, os, re, sys, time

tool = os.path.basename(sys.argv[0])
args = sys.argv[1:]
scenario = json.load(open(os.environ["FAKE_AGENT_SCENARIO"])).get(tool, {})
interactive = tool == "codex" and args[:1] == ["app-server"]
stdin = "" if interactive else (sys.stdin.read() if not sys.stdin.isatty() else "")
env_keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CODEX_HOME", "CLAUDE_CONFIG_DIR",
            "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
            "OPENCODE_CONFIG_CONTENT", "OPENCODE_DISABLE_PROJECT_CONFIG", "AGENTLOG_HOME",
            "AGENTLOG_ANSWER_RUN", "CLAUDECODE")
with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
    log.write(json.dumps({"tool": tool, "argv": args, "cwd": os.getcwd(),
                          "cwd_entries": sorted(os.listdir(".")), "stdin": stdin,
                          "env": {k: os.environ.get(k) for k in env_keys}}) + "\n")

def out(obj):
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()

def answer_text():
    # The scenario's answer; "{first_id}" becomes the first excerpt id of the prompt.
    found = re.search(r'<excerpt-[0-9a-f]+ id="([^"]+)"', stdin)
    return scenario.get("text", "").replace("{first_id}", found.group(1) if found else "?")

def mode(key, default="success"):
    return scenario.get(key, default)

def hang():
    time.sleep(120)

if tool == "claude":
    if args[:2] == ["auth", "status"]:
        auth = mode("auth", {"loggedIn": True, "authMethod": "claude.ai",
                             "apiProvider": "firstParty", "subscriptionType": "max"})
        if auth == "hang":
            hang()
        out(auth if isinstance(auth, str) else json.dumps(auth, indent=2))
        sys.exit(0 if isinstance(auth, dict) and auth.get("loggedIn") else 1)
    run = mode("run")
    sid = "93772167-7102-4859-ba3d-285498f260ea"
    if run == "hang":
        hang()
    if run == "garbage":
        out("<html><body>502 Bad Gateway</body></html>")
        sys.exit(1)
    out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": sid,
         "tools": [], "mcp_servers": [], "model": "claude-haiku-4-5-20251001",
         "permissionMode": "default", "apiKeySource": "none",
         "claude_code_version": "2.1.197"})
    info = {"status": "allowed", "resetsAt": int(time.time()) + 3600,
            "rateLimitType": "five_hour", "overageStatus": "allowed", "isUsingOverage": False}
    if run == "exhausted":
        info["status"] = "rejected"
    if run == "overage":
        info["isUsingOverage"] = True
    out({"type": "rate_limit_event", "rate_limit_info": info, "session_id": sid})
    if run == "exhausted":
        text = "You've hit your limit · resets 3pm (UTC)"
        out({"type": "result", "subtype": "success", "is_error": True, "result": text,
             "session_id": sid, "total_cost_usd": 0, "terminal_reason": "api_error"})
        sys.exit(1)
    text = answer_text()
    out({"type": "assistant", "message": {"model": "claude-haiku-4-5-20251001",
         "role": "assistant", "content": [{"type": "text", "text": text}]},
         "session_id": sid})
    out({"type": "result", "subtype": "success", "is_error": False, "result": text,
         "duration_ms": 812, "num_turns": 1, "session_id": sid, "total_cost_usd": 0.0011,
         "usage": {"input_tokens": 900, "output_tokens": 60}, "terminal_reason": "completed"})
    sys.exit(0)

if tool == "codex" and interactive:
    if mode("probe") == "hang":
        hang()
    account = mode("account", {"account": {"type": "chatgpt", "email": "u@example.invalid",
                                           "planType": "plus"}, "requiresOpenaiAuth": True})
    limits = mode("limits", {"rateLimits": {"primary": {"usedPercent": 12,
        "windowDurationMins": 300, "resetsAt": 1795990000}, "secondary": {"usedPercent": 40,
        "windowDurationMins": 10080, "resetsAt": 1796400000}, "planType": "plus",
        "credits": {"hasCredits": True, "unlimited": False, "balance": "25"}},
        "ordinaryUsageAllowed": None})
    models = mode("models", ["gpt-6.2-sol", "gpt-6-luna"])
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            out({"id": rid, "result": {"userAgent": "agentlog/0.171.0", "codexHome": "/x",
                                       "platformFamily": "unix", "platformOs": "linux"}})
            out({"method": "configWarning", "params": {"summary": "bubblewrap missing"}})
        elif method == "account/read":
            out({"id": rid, "result": account})
        elif method == "account/rateLimits/read":
            if "error" in limits:
                out({"id": rid, "error": limits["error"]})
            else:
                out({"id": rid, "result": limits})
        elif method == "model/list":
            data = [{"id": m, "model": m, "displayName": m, "hidden": False} for m in models]
            out({"id": rid, "result": {"data": data, "nextCursor": None}})
    sys.exit(0)

if tool == "codex":
    run = mode("run")
    if run == "hang":
        for i in range(1, 100):
            out({"type": "error", "message": f"Reconnecting... {i}/5"})
            time.sleep(0.5)
    if run == "garbage":
        out("thread 'main' panicked at codex-rs/exec/src/lib.rs:1:1")
        sys.exit(101)
    out({"type": "thread.started", "thread_id": "019a-fake"})
    out({"type": "turn.started"})
    if run == "exhausted":
        out({"type": "error", "message": "You've hit your usage limit. Upgrade to Pro or "
             "try again at 12:16 PM."})
        out({"type": "turn.failed", "error": {"message": "You've hit your usage limit."}})
        sys.exit(1)
    out({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning",
         "text": "Looking at the excerpts"}})
    out({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
         "text": answer_text()}})
    out({"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 0,
         "output_tokens": 80}})
    sys.exit(0)

if tool == "opencode":
    if args[:1] == ["models"]:
        if mode("probe") == "hang":
            hang()
        for name, cost in mode("catalog", [["opencode/big-pickle", [0, 0]]]):
            provider, model = name.split("/", 1)
            info = {"id": model, "providerID": provider, "name": model, "status": "active"}
            if cost is not None:
                info["cost"] = {"input": cost[0], "output": cost[1],
                                "cache": {"read": 0, "write": 0}}
            out(name)
            out(json.dumps(info, indent=2))
        sys.exit(0)
    run = mode("run")
    sid = "ses_dd70606e3ffeNIE5DtO9vXIHLi"
    if run == "hang":
        hang()
    out({"type": "step_start", "timestamp": 1, "sessionID": sid,
         "part": {"type": "step-start"}})
    if run == "error":
        out({"type": "error", "timestamp": 2, "sessionID": sid, "error": {
            "name": "APIError", "data": {"message": scenario.get("message", "boom")}}})
        sys.exit(0)
    if run == "tool":
        out({"type": "tool_use", "timestamp": 2, "sessionID": sid,
             "part": {"type": "tool", "tool": "bash", "state": {"status": "error"}}})
    text = answer_text()
    half = len(text) // 2
    for chunk in (text[:half], text[half:]):
        out({"type": "text", "timestamp": 3, "sessionID": sid,
             "part": {"type": "text", "text": chunk}})
    out({"type": "step_finish", "timestamp": 4, "sessionID": sid,
         "part": {"type": "step-finish", "reason": "stop", "cost": 0,
                  "tokens": {"input": 1000, "output": 50}}})
    sys.exit(0)

sys.exit(2)
"""


class Fakes:
    """The fake binaries of one test, their scenario and their invocation log."""

    def __init__(self, root: Path, tools: tuple[str, ...] = ("claude", "codex", "opencode")):
        self.bin = root / "fakebin"
        self.bin.mkdir()
        self.scenario_path = root / "scenario.json"
        self.log_path = root / "calls.jsonl"
        self.scenario: dict[str, Any] = {}
        self.save()
        for name in tools:
            self.add(name)

    def add(self, name: str) -> None:
        path = self.bin / name
        path.write_text(f"#!{sys.executable}\n" + FAKE_SOURCE, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def remove(self, name: str) -> None:
        (self.bin / name).unlink()

    def set(self, tool: str, **values: Any) -> None:
        self.scenario.setdefault(tool, {}).update(values)
        self.save()

    def save(self) -> None:
        self.scenario_path.write_text(json.dumps(self.scenario), encoding="utf-8")

    def env(self) -> dict[str, str]:
        return {
            "PATH": str(self.bin),
            "FAKE_AGENT_SCENARIO": str(self.scenario_path),
            "FAKE_AGENT_LOG": str(self.log_path),
        }

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        rows = [json.loads(x) for x in self.log_path.read_text().splitlines() if x.strip()]
        return [r for r in rows if tool is None or r["tool"] == tool]

    def runs(self, tool: str) -> list[dict[str, Any]]:
        """Generation calls only (not probes)."""
        probes = {("auth", "status"), ("app-server",), ("models",)}
        return [
            c
            for c in self.calls(tool)
            if tuple(c["argv"][:2]) not in probes and tuple(c["argv"][:1]) not in probes
        ]


def install(monkeypatch: Any, fakes: Fakes) -> None:
    for key, value in fakes.env().items():
        monkeypatch.setenv(key, value)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(key, "sk-must-not-reach-the-cli")
    monkeypatch.setenv("CLAUDECODE", "1")  # as inside a Claude Code session
    os.environ.setdefault("FAKE_AGENT_LOG", str(fakes.log_path))
