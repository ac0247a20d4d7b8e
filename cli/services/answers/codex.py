"""Codex CLI as an answer provider: `codex exec --ephemeral`, user config ignored, read-only.

Selection uses Codex's own usage reader, the app server (`codex app-server`, JSON-RPC over
stdio), within `PROBE_TIMEOUT` seconds and before any generation:
- `account/read` must show a ChatGPT plan login. An API key or a cloud account bills per
  token and is skipped: answers never spend paid credits.
- `account/rateLimits/read` must show capacity: `ordinaryUsageAllowed` true, or, when the
  backend leaves it null, no `rateLimitReachedType`, no spend-control stop and every
  reported window below 100 %. No window at all is unknown availability and skips Codex.
  Purchased credits never count as capacity.
- `model/list` (hidden models included) must contain the configured model. There is no
  fallback to another model.

Generation passes the model explicitly; `--ephemeral` writes no rollout under
$CODEX_HOME/sessions (what agentlog captures) while auth still comes from CODEX_HOME.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from cli.services.answers.base import Generation, Selection, json_lines, looks_exhausted, one_line
from cli.services.answers.run import Workspace, run_process

NAME = "codex"
PROBE_TIMEOUT = 15.0
MODEL_PAGES = 5


def argv(binary: str, model: str, cwd: Path) -> list[str]:
    """The exact command of one tool-less generation; the prompt goes to stdin ("-")."""
    return [
        binary,
        "exec",
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "--ignore-user-config",
        "--ignore-rules",
        "--sandbox",
        "read-only",
        "-m",
        model,
        "-c",
        'model_reasoning_effort="low"',
        "-c",
        'approval_policy="never"',
        "-c",
        "mcp_servers={}",
        "-c",
        'history.persistence="none"',
        "-C",
        str(cwd),
        "-",
    ]


class _RpcClient:
    """A minimal JSON-RPC (app-server dialect, no "jsonrpc" field) client over stdio."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        self.proc = proc
        self.deadline = deadline
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.replies: dict[int, dict[str, Any]] = {}
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def reply(self, req_id: int) -> dict[str, Any] | None:
        """The reply with this id, or None on timeout or end of output."""
        while req_id not in self.replies:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            try:
                msg = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(msg, dict) and isinstance(msg.get("id"), int) and "method" not in msg:
                self.replies[msg["id"]] = msg
        return self.replies[req_id]


def probe(binary: str, ws: Workspace) -> dict[str, Any]:
    """Account, rate limits and model ids as the app server reports them.

    Returns {"account": reply|None, "limits": reply|None, "models": [ids]|None}; a reply is
    the raw JSON-RPC response ({"result": ...} or {"error": ...}); None means no reply.
    """
    deadline = time.monotonic() + PROBE_TIMEOUT * ws.probe_scale
    try:
        proc = subprocess.Popen(
            # No user MCP server is started just to read limits.
            [binary, "app-server", "-c", "mcp_servers={}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ws.cwd,
            env=ws.env,
            start_new_session=True,
        )
    except OSError:
        return {"account": None, "limits": None, "models": None, "started": False}
    out: dict[str, Any] = {"account": None, "limits": None, "models": None, "started": True}
    try:
        rpc = _RpcClient(proc, deadline)
        rpc.send(
            {
                "method": "initialize",
                "id": 0,
                "params": {"clientInfo": {"name": "agentlog", "version": "0.1.0"}},
            }
        )
        if rpc.reply(0) is None:
            return out
        rpc.send({"method": "initialized", "params": {}})
        rpc.send({"method": "account/read", "id": 1, "params": {"refreshToken": False}})
        rpc.send(
            {
                "method": "account/rateLimits/read",
                "id": 2,
                "params": {"excludeResetCreditDetails": True},
            }
        )
        out["account"] = rpc.reply(1)
        out["limits"] = rpc.reply(2)
        ids: list[str] = []
        cursor: str | None = None
        for page in range(MODEL_PAGES):
            params: dict[str, Any] = {"includeHidden": True, "cursor": cursor}
            rpc.send({"method": "model/list", "id": 10 + page, "params": params})
            reply = rpc.reply(10 + page)
            result = reply.get("result") if reply else None
            if not isinstance(result, dict) or not isinstance(result.get("data"), list):
                return out
            for m in result["data"]:
                if isinstance(m, dict):
                    ids.extend(str(m[k]) for k in ("id", "model") if isinstance(m.get(k), str))
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        out["models"] = ids
        return out
    except (BrokenPipeError, OSError):
        return out
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


def _account_problem(reply: dict[str, Any] | None) -> str | None:
    if reply is None:
        return "account unreadable (app-server gave no reply)"
    result = reply.get("result")
    if not isinstance(result, dict):
        return f"account unreadable: {one_line(str(reply.get('error')))}"
    account = result.get("account")
    if account is None:
        return "not logged in"
    kind = account.get("type") if isinstance(account, dict) else None
    if kind != "chatgpt":
        return f"login {kind} bills per token; answers use only a ChatGPT plan"
    return None


def capacity_problem(reply: dict[str, Any] | None) -> str | None:
    """Why the rate-limit reply does not show capacity, or None when it does."""
    if reply is None:
        return "usage limits unreadable (app-server gave no reply)"
    result = reply.get("result")
    if not isinstance(result, dict):
        err = reply.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        return f"usage limits unreadable: {one_line(str(msg))}"
    allowed = result.get("ordinaryUsageAllowed")
    if allowed is False:
        return "usage limit reached (ordinary usage not allowed)"
    snap = result.get("rateLimits")
    if not isinstance(snap, dict):
        return "usage limits unknown"
    if snap.get("rateLimitReachedType"):
        return f"usage limit reached ({snap['rateLimitReachedType']})"
    if snap.get("spendControlReached") is True:
        return "spend control reached"
    windows = [w for w in (snap.get("primary"), snap.get("secondary")) if isinstance(w, dict)]
    used = [w.get("usedPercent") for w in windows]
    if any(not isinstance(u, (int, float)) or isinstance(u, bool) for u in used):
        return "usage limits unreadable"
    if any(float(u) >= 100 for u in used):  # type: ignore[arg-type]
        return "usage limit reached (a window is at 100 %)"
    if allowed is True:
        return None
    if not windows:
        return "usage limits unknown (no window reported)"
    return None


def select(ws: Workspace, model: str | None) -> Selection:
    binary = ws.which("codex")
    if binary is None:
        return Selection(False, reason="codex not found on PATH")
    if not model:
        return Selection(False, reason="no codexModel configured")
    seen = probe(binary, ws)
    if not seen.get("started"):
        return Selection(False, reason="app-server did not start")
    problem = _account_problem(seen["account"]) or capacity_problem(seen["limits"])
    if problem:
        return Selection(False, reason=problem)
    models = seen["models"]
    if models is None:
        return Selection(False, reason="model list unreadable")
    if model not in models:
        return Selection(False, reason=f"model {model!r} is not in codex's model list")
    return Selection(True, model=model)


def generate(ws: Workspace, prompt: str, model: str) -> Generation:
    binary = ws.which("codex")
    if binary is None:
        return Generation(error="codex not found on PATH", capacity=True)
    done = run_process(
        argv(binary, model, ws.cwd),
        env=ws.env,
        cwd=ws.cwd,
        timeout=ws.generation_timeout,
        stdin_text=prompt,
    )
    text: str | None = None
    completed = False
    errors: list[str] = []
    for ev in json_lines(done.stdout):
        kind = ev.get("type")
        item = ev.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                text = item["text"]
        elif kind == "turn.completed":
            completed = True
        elif kind == "turn.failed":
            err = ev.get("error")
            errors.append(str(err.get("message") if isinstance(err, dict) else err))
        elif kind == "error":
            errors.append(str(ev.get("message")))
    if text is not None and completed:
        return Generation(text=text, model=model)
    if done.timed_out:
        return Generation(error=f"codex: no answer within {ws.generation_timeout:g} s", model=model)
    if errors:
        msg = one_line(errors[-1])
        return Generation(error=f"codex: {msg}", model=model, capacity=looks_exhausted(msg))
    if text is not None:
        return Generation(text=text, model=model)
    detail = one_line(done.stderr) or f"exit {done.returncode}"
    return Generation(error=f"codex: unreadable output ({detail})", model=model)
