"""The live half of bench/capture.py: `agentlog mcp` keeping a home of 2,000 transcripts
captured by itself.

Prints, for file events (the default) and for the polling fallback (AGENTLOG_FILE_EVENTS=0)
as the baseline measured in the same run:
- the first pass: spawn → coverage.caughtUp through `search_history`;
- append-to-searchable latency: a line with a fresh word appended to one random transcript
  of the 2,000, until `search_history` (over stdio, the SDK client) returns it, p50/p95
  (goal <= 1 s p95);
- idle CPU of the capturing server while nothing changes, in % of one core (goal < 1 %),
  over a window longer than one 30 s safety pass.

The server gets a throw-away HOME and explicit roots in config.json: it never sees the
real ~/.claude.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _line(sid: str, i: int, text: str) -> bytes:
    rec = {"parentUuid": None, "isSidechain": False, "type": "user", "cwd": "/w/p",
           "sessionId": sid, "uuid": f"{sid[:8]}-{i:06d}",
           "timestamp": "2026-04-07T15:31:35.362Z",
           "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def write_transcripts(base: Path, n: int, lines: int, seed: int = 11) -> list[Path]:
    rng = random.Random(seed)
    words = ("capture", "cursor", "index", "query", "session", "parser", "the", "and", "test")
    out = []
    for i in range(n):
        sid = f"{rng.getrandbits(128):032x}"
        p = base / "projects" / f"-w-proj{i % 50}" / f"{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(
            _line(sid, j, " ".join(rng.choice(words) for _ in range(30))) for j in range(lines)))
        out.append(p)
    return out


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _measure(home: Path, files: list[Path], env: dict[str, str], samples: int,
                   idle_s: float, tag: str) -> dict[str, Any]:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "--home", str(home), "mcp"],
        env=env, cwd=str(ROOT))
    t0 = time.perf_counter()
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]

        async def search(word: str) -> dict[str, Any]:
            res = await client.call_tool("search_history", {"query": word, "detail": "full"})
            assert not res.is_error, res.content
            assert isinstance(res.structured_content, dict)
            return res.structured_content

        deadline = time.perf_counter() + 300
        while not (cov := (await search("capture"))["coverage"]).get("caughtUp"):
            if time.perf_counter() > deadline:
                raise SystemExit(f"never caught up: {cov}; note "
                                 f"{(home / 'log' / 'capture.lock').read_bytes()[:300]!r}")
            await anyio.sleep(0.1)
        first = time.perf_counter() - t0
        note = json.loads((home / "log" / "capture.lock").read_bytes())
        pid, mode = int(note["pid"]), note.get("mode")

        rng = random.Random(5)
        latencies: list[float] = []
        calls: list[float] = []
        for k in range(samples):
            word = f"zq{tag}{k}x{rng.getrandbits(40):x}"  # new to every home of the run
            f = rng.choice(files)
            start = time.perf_counter()
            with open(f, "ab") as fh:
                fh.write(_line("bench", 100000 + k, f"appended {word} now"))
            deadline = time.perf_counter() + 120
            while True:
                c0 = time.perf_counter()
                answer = await search(word)
                found = answer["hits"]
                if not found and time.perf_counter() > deadline:
                    raise SystemExit(f"appended word never found: {answer['coverage']}; note "
                                     f"{(home / 'log' / 'capture.lock').read_bytes()[:300]!r}")
                calls.append(time.perf_counter() - c0)
                if found:
                    break
                await anyio.sleep(0.01)
            latencies.append(time.perf_counter() - start)
            await anyio.sleep(rng.uniform(0.1, 0.4))

        await anyio.sleep(3)  # let the last commit and catch-up finish
        cpu0, w0 = _cpu_s(pid), time.perf_counter()
        await anyio.sleep(idle_s)
        idle = (_cpu_s(pid) - cpu0) / (time.perf_counter() - w0) * 100
    return {"first": first, "mode": mode, "lat": latencies, "call": statistics.median(calls),
            "idle": idle}


def run(tmp: Path, *, quick: bool) -> None:
    import anyio

    n, lines = 2000, (8 if quick else 40)
    samples, idle_s = (20, 35.0) if quick else (60, 65.0)
    user = tmp / "live-user"
    claude = user / ".claude"
    t = time.perf_counter()
    files = write_transcripts(claude, n, lines)
    print(f"live: {n} Claude transcripts of {lines} lines written in "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    for label, events in (("file events", "1"), ("polling (baseline)", "0")):
        home = tmp / f"live-home-{events}"
        home.mkdir()
        (home / "config.json").write_text(json.dumps({
            "claude_dir": str(claude), "codex_dir": str(tmp / "none"),
            "opencode_dir": str(tmp / "none"), "runs_dir": str(tmp / "none")}))
        env = {"HOME": str(user), "PATH": os.environ.get("PATH", ""),
               "AGENTLOG_FILE_EVENTS": events}
        if "PYTHONPYCACHEPREFIX" in os.environ:
            env["PYTHONPYCACHEPREFIX"] = os.environ["PYTHONPYCACHEPREFIX"]
        r = anyio.run(_measure, home, files, env, samples if events == "1" else samples // 2,
                      idle_s, f"e{events}")
        lat = r["lat"]
        print(f"live [{label}, mode {r['mode']}]: first pass of {n} files caught up in "
              f"{r['first']:.1f} s; append-to-searchable through MCP over {len(lat)} appends: "
              f"p50 {_percentile(lat, 50):.3f} s, p95 {_percentile(lat, 95):.3f} s "
              f"(goal <= 1 s p95; one search_history call takes {r['call'] * 1000:.0f} ms, "
              f"so p50 is {_percentile(lat, 50) / r['call']:.0f}x a call); idle CPU "
              f"{r['idle']:.2f} % of a core over {idle_s:.0f} s (goal < 1 %)", flush=True)
