"""Benchmark of `agentlog capture` on a synthetic home it writes itself.

    .venv/bin/python bench/capture.py --quick   # 6,000 small files + one 20 MB file
    .venv/bin/python bench/capture.py           # 6,000 files (~250 MB) + one 200 MB file
    .venv/bin/python bench/capture.py --gb      # ~1 GB
    .venv/bin/python bench/capture.py --quick --live-only   # only the live figures

Prints, in one run: cold capture MB/s and its ratio to reading + SHA-256 of the same files
(baseline measured here), peak RSS of the capture process, a no-change re-capture of all
files as a whole process (goal <= 0.12 s), capture of one new session (goal <= 0.2 s), and
log bytes on disk against bytes captured. Every capture is a real `agentlog` subprocess.
Then the live figures (bench/capture_live.py): `agentlog mcp` capturing 2,000 transcripts by
itself, append-to-searchable latency p50/p95 through MCP and idle CPU, with file events and
with polling as the baseline. Between them, the no-change capture with and without the
eleven readers issue 14 added (bench/capture_agents.py; goal: at most +20 %).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import capture_agents
import capture_live

# bench/mcp.py is named like the SDK: keep this folder off the import path from here on.
_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))
# `agentlog` itself, reporting its peak RSS (VmHWM: ru_maxrss would include the parent's,
# which Linux carries across exec)
PROBE = (
    "import sys\nfrom cli.main import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\nelse:\n"
    "    code = 0\n"
    "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0]\n"
    "print(hwm.split()[1], file=sys.stderr)\nsys.exit(code)\n"
)
WORDS = ("capture", "restore", "lmdb", "cursor", "tick", "session", "refactor", "parser",
         "the", "a", "and", "to", "of", "test", "function", "error", "file", "query", "index")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _claude_line(rng: random.Random, sid: str, i: int, width: int) -> bytes:
    role = "user" if i % 2 == 0 else "assistant"
    rec = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w/p",
           "sessionId": sid, "version": "2.1.90", "gitBranch": "main", "type": role,
           "message": {"role": role, "content": [{"type": "text", "text": _text(rng, width)}]},
           "uuid": f"{sid[:8]}-{i:06d}", "timestamp": "2026-04-07T15:31:35.362Z"}
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


# A text-sparse home (issue 32): less text per byte, as real homes have. Claude Code lines
# carry the API's metadata (message id, model, usage, request id), a tool call's input, a
# tool result's output twice (the message's content and `toolUseResult`, as Claude Code
# writes it); Codex rollouts carry encrypted reasoning (never text) and tool calls.
_B64 = string.ascii_letters + string.digits + "-_"
_COMMANDS = ("pytest -q tests/", "git status --short", "ls -la src/", "rg -n TODO src",
             "python -m build", "npm test -- --watch=false", "cat pyproject.toml")


def _claude_sparse(rng: random.Random, sid: str, i: int) -> tuple[bytes, int]:
    """(a line, the bytes of text an indexer reads from it) of a text-sparse Claude file."""
    base = {"parentUuid": f"{sid[:8]}-{i - 1:06d}" if i else None, "isSidechain": False,
            "userType": "external", "cwd": "/w/p", "sessionId": sid, "version": "2.1.90",
            "gitBranch": "main", "uuid": f"{sid[:8]}-{i:06d}",
            "timestamp": "2026-04-07T15:31:35.362Z"}
    kind = i % 4
    if kind == 0:  # a short prompt
        text = _text(rng, rng.randint(3, 40))
        rec = {**base, "type": "user", "message": {"role": "user", "content": text}}
        return json.dumps(rec, separators=(",", ":")).encode() + b"\n", len(text)
    tool_id = f"toolu_{rng.getrandbits(96):024x}"
    if kind == 3:  # the tool's result: its output in the content and again in toolUseResult
        out = _text(rng, rng.randint(10, 300))
        rec = {**base, "type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": out,
             "is_error": False}]},
            "toolUseResult": {"stdout": out, "stderr": "", "interrupted": False,
                              "isImage": False}}
        return json.dumps(rec, separators=(",", ":")).encode() + b"\n", len(out)
    content: list[dict[str, object]]
    if kind == 1:  # a short answer
        text = _text(rng, rng.randint(3, 80))
        content = [{"type": "text", "text": text}]
    else:  # a tool call
        text = rng.choice(_COMMANDS)
        content = [{"type": "tool_use", "id": tool_id, "name": "Bash",
                    "input": {"command": text, "description": "Run the command"}}]
    rec = {**base, "type": "assistant", "requestId": f"req_{rng.getrandbits(96):024x}",
           "message": {"id": f"msg_{rng.getrandbits(96):024x}", "type": "message",
                       "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                       "content": content, "stop_reason": None, "stop_sequence": None,
                       "usage": {"input_tokens": rng.randint(1, 9),
                                 "cache_creation_input_tokens": rng.randint(0, 9999),
                                 "cache_read_input_tokens": rng.randint(0, 99999),
                                 "output_tokens": rng.randint(1, 999),
                                 "service_tier": "standard"}}}
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n", len(text)


def _codex_sparse(rng: random.Random, i: int) -> tuple[bytes, int]:
    if i % 3 == 0:  # encrypted reasoning: bytes no indexer reads
        blob = "gAAAAA" + "".join(rng.choice(_B64) for _ in range(rng.randint(400, 2400)))
        rec = {"timestamp": "2025-09-16T06:12:37.392Z", "type": "response_item",
               "payload": {"type": "reasoning", "summary": [], "content": None,
                           "encrypted_content": blob}}
        return json.dumps(rec, separators=(",", ":")).encode() + b"\n", 0
    text = _text(rng, rng.randint(3, 40))
    line = _codex_line(rng, i, 0).replace(b'"text":""', json.dumps(
        {"text": text}, separators=(",", ":"))[1:-1].encode())
    return line, len(text)


def _codex_line(rng: random.Random, i: int, width: int) -> bytes:
    rec = {"timestamp": "2025-09-16T06:12:37.392Z", "type": "response_item",
           "payload": {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": _text(rng, width)}]}}
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def write_home(base: Path, files: int, target_bytes: int, big_mb: int, seed: int = 7,
               sparse: bool = False) -> dict[str, Path]:
    """Claude sessions (~45%), Codex rollouts (~25%), opencode JSON files (~30%). `sparse`:
    Claude and Codex files with less text per byte (`_claude_sparse`, `_codex_sparse`);
    the share of text is written to `base/text-share.json`."""
    rng = random.Random(seed)
    text_bytes = {"claude": 0, "codex": 0}
    claude, codex, oc = base / "claude", base / "codex", base / "opencode"
    n_claude, n_codex = int(files * 0.45), int(files * 0.25)
    n_oc = files - n_claude - n_codex
    per_file = max(target_bytes // max(n_claude + n_codex, 1), 600)
    for i in range(n_claude):
        sid = f"{rng.getrandbits(128):032x}"
        sid = f"{sid[:8]}-{sid[8:12]}-{sid[12:16]}-{sid[16:20]}-{sid[20:]}"
        p = claude / "projects" / f"-w-proj{i % 40}" / f"{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            size, j = 0, 0
            while size < per_file:
                if sparse:
                    line, n = _claude_sparse(rng, sid, j)
                else:
                    line = _claude_line(rng, sid, j, rng.randint(10, 120))
                    n = len(line) - 306  # (measured: the record around the text)
                text_bytes["claude"] += n
                f.write(line)
                size += len(line)
                j += 1
    for i in range(n_codex):
        p = codex / "sessions" / "2025" / f"{1 + i % 12:02d}" / f"{1 + i % 28:02d}" / (
            f"rollout-2025-01-01T00-00-00-{i:08d}.jsonl")
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            size, j = 0, 0
            while size < per_file:
                if sparse:
                    line, n = _codex_sparse(rng, j)
                else:
                    line = _codex_line(rng, j, rng.randint(10, 120))
                    n = len(line) - 157
                text_bytes["codex"] += n
                f.write(line)
                size += len(line)
                j += 1
    for i in range(n_oc):
        ses = f"ses_{i // 30:012x}"
        if i % 30 == 0:
            p = oc / "storage" / "session" / "global" / f"{ses}.json"
            body = {"id": ses, "title": _text(rng, 6), "directory": "/w/p"}
        else:
            p = oc / "storage" / "part" / f"msg_{i // 3:012x}" / f"prt_{i:012x}.json"
            body = {"id": f"prt_{i:012x}", "sessionID": ses, "type": "text",
                    "text": _text(rng, rng.randint(10, 200))}
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(body, indent=2))
    if big_mb:
        p = claude / "projects" / "-w-big" / "big-session.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            written, j = 0, 0
            while written < big_mb * 1024 * 1024:
                if sparse:
                    line, n = _claude_sparse(rng, "big-session-0000", j)
                else:
                    line = _claude_line(rng, "big", j, 400)
                    n = len(line) - 306
                text_bytes["claude"] += n
                f.write(line)
                written += len(line)
                j += 1
    (base / "text-share.json").write_text(json.dumps(text_bytes))
    return {"claude": claude, "codex": codex, "opencode": oc}


def all_files(roots: dict[str, Path]) -> list[Path]:
    return [p for r in roots.values() for p in r.rglob("*") if p.is_file()]


def read_and_hash(files: list[Path]) -> float:
    t0 = time.perf_counter()
    for p in files:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return time.perf_counter() - t0


def run_capture(
    home: Path, roots: dict[str, Path], *, index: bool = False, new_agents: bool = False
) -> tuple[float, int, dict[str, object]]:
    """(wall seconds, peak RSS bytes, --json summary) of one `agentlog capture` process
    (`--no-index` unless `index`: history.db catch-up is the projections' cost). Without
    `new_agents` the roots of the agents issue 14 added are a missing folder."""
    cmd = [sys.executable, "-c", PROBE, "--home", str(home), "capture", "--json",
           "--index" if index else "--no-index",
           "--claude-dir", str(roots["claude"]), "--codex-dir", str(roots["codex"]),
           "--opencode-dir", str(roots["opencode"]), "--runs-dir", str(home / "no-runs")]
    if not new_agents:
        for agent in capture_agents.new_agents():
            cmd += [f"--{agent}-dir", str(home / "no-such-folder")]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    out = p.stdout.read() if p.stdout else b""
    p.wait()
    wall = time.perf_counter() - t0
    err = p.stderr.read() if p.stderr else b""
    if p.returncode != 0:
        raise SystemExit(f"capture failed: {err.decode()}")
    hwm_kib = int(err.decode().strip().splitlines()[-1])
    return wall, hwm_kib * 1024, json.loads(out)


# like an installed package: byte code is cached (in a private folder, not in the tree)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (~1 minute)")
    ap.add_argument("--gb", action="store_true", help="about 1 GB of history")
    ap.add_argument("--files", type=int, default=6000)
    ap.add_argument("--index", action="store_true",
                    help="also time capture with history.db catch-up (the projections' cost)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--live-only", action="store_true",
                    help="only the live figures (mcp capturing 2,000 transcripts)")
    args = ap.parse_args()
    if args.gb:
        target, big = 800 << 20, 200
    elif args.quick:
        target, big = 12 << 20, 20
    else:
        target, big = 250 << 20, 200
    tmp = Path(tempfile.mkdtemp(prefix="agentlog-bench-"))
    ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    ENV["HOME"] = str(tmp / "user")  # the new readers' default roots live under HOME
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
                *(v for v, _ in capture_agents.env_vars())):
        ENV.pop(var, None)
    (tmp / "user").mkdir()
    try:
        if not args.live_only:
            capture_figures(args, tmp, target, big)
        capture_live.run(tmp, quick=args.quick)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def capture_figures(args: argparse.Namespace, tmp: Path, target: int, big: int) -> None:
    t0 = time.perf_counter()
    roots = write_home(tmp / "src", args.files, target, big)
    files = all_files(roots)
    total = sum(p.stat().st_size for p in files)
    mb = total / 1e6
    print(f"synthetic home: {len(files)} files, {mb:.1f} MB "
          f"(largest {big} MB), written in {time.perf_counter() - t0:.1f} s")
    base = min(read_and_hash(files) for _ in range(2))
    print(f"baseline read + SHA-256: {base:.2f} s = {mb / base:.0f} MB/s")
    home = tmp / "home"
    wall, rss, summary = run_capture(home, roots)
    print(f"cold capture: {wall:.2f} s = {mb / wall:.0f} MB/s "
          f"(ratio to read+SHA-256: {base / wall:.2f}x), peak RSS {rss / 2**20:.0f} MiB "
          f"(goal < 200 MiB), appended {summary['appended']}, files {summary['files']}")
    assert summary["bytes"] == total, (summary["bytes"], total)
    times = []
    for _ in range(7):
        w, _, s = run_capture(home, roots)
        assert s["appended"] == 0, s
        times.append(w)
    print(f"no-change re-capture of {summary['files']} files: median "
          f"{statistics.median(times):.3f} s, best {min(times):.3f} s (goal <= 0.12 s)")
    capture_agents.figure(run_capture, home, roots, tmp, Path(ENV["HOME"]))
    new = roots["claude"] / "projects" / "-w-new" / "new-session.jsonl"
    new.parent.mkdir(parents=True)
    rng = random.Random(1)
    new.write_bytes(b"".join(_claude_line(rng, "new", j, 60) for j in range(120)))
    w, _, s = run_capture(home, roots)
    print(f"capture of one new session ({new.stat().st_size / 1e3:.0f} KB): {w:.3f} s "
          f"(goal <= 0.2 s), appended {s['appended']}")

    if args.index:
        w, rss2, _ = run_capture(tmp / "home2", roots, index=True)
        print(f"cold capture + history.db indexing (capture --index): {w:.2f} s, "
              f"peak RSS {rss2 / 2**20:.0f} MiB")
        new2 = new.with_name("new-session-2.jsonl")
        new2.write_bytes(new.read_bytes().replace(b'"new"', b'"new2"'))
        w, _, s = run_capture(tmp / "home2", roots, index=True)
        print(f"one new session with history.db catch-up: {w:.3f} s")
    data = home / "log" / "data.mdb"
    st = data.stat()
    print(f"log on disk: {st.st_size / 1e6:.1f} MB file, {st.st_blocks * 512 / 1e6:.1f} MB "
          f"allocated, for {mb:.1f} MB captured (ratio {st.st_blocks * 512 / total:.2f})")


if __name__ == "__main__":
    sys.exit(main())
