"""Benchmark of the pure parsers against bare JSON decoding, measured in the same run.

Builds synthetic Claude Code and Codex transcripts in memory (compact JSON like the real
files: short turns, tool calls with outputs of a few KB, one base64 image line of ~600 KB
per session) and prints, per agent:
- parse throughput in MB/s and records/s through `readers.parse.parse_line`;
- the baseline: splitting the same bytes into lines and `msgspec.json.decode` of each;
- their ratio (parse time / baseline time, for information: parsing is Python per record);
- goal: parse >= 20 MB/s and >= 20,000 records/s on each agent's transcripts.

Usage: .venv/bin/python bench/parse.py [--quick] [--sessions N]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from readers import parse  # noqa: E402
from readers.records import SourceInfo  # noqa: E402

IMAGE = base64.b64encode(bytes(range(256)) * 1800).decode()  # ~600 KB of base64
OUTPUT = "\n".join(
    f"line {i}: some tool output with words and paths /src/x{i}.py" for i in range(60)
)


def _j(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def claude_session(n: int, turns: int) -> bytes:
    sid = f"00000000-0000-4000-8000-{n:012d}"
    out = bytearray()
    for t in range(turns):
        base = {
            "sessionId": sid,
            "cwd": "/home/dev/project",
            "version": "2.1.90",
            "timestamp": "2026-04-02T02:09:01.832Z",
            "isSidechain": False,
        }
        out += _j(
            {
                **base,
                "type": "user",
                "uuid": f"{sid}-u{t}",
                "message": {"role": "user", "content": f"Please refactor module {t} 请重构"},
            }
        )
        out += _j(
            {
                **base,
                "type": "assistant",
                "uuid": f"{sid}-t{t}",
                "message": {
                    "id": f"msg_{t}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [
                        {"type": "thinking", "thinking": "Considering the module layout. " * 8}
                    ],
                },
            }
        )
        out += _j(
            {
                **base,
                "type": "assistant",
                "uuid": f"{sid}-c{t}",
                "message": {
                    "id": f"msg_{t}",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{t}",
                            "name": "Bash",
                            "input": {"command": f"pytest -q tests/{t}"},
                        }
                    ],
                },
            }
        )
        out += _j(
            {
                **base,
                "type": "user",
                "uuid": f"{sid}-r{t}",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": OUTPUT}
                    ],
                },
            }
        )
        out += _j({**base, "type": "progress", "uuid": f"{sid}-p{t}", "data": {"type": "hook"}})
        out += _j(
            {
                **base,
                "type": "assistant",
                "uuid": f"{sid}-a{t}",
                "message": {
                    "id": f"msg_{t}",
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Done: the module now has smaller functions."}
                    ],
                },
            }
        )
    out += _j(
        {
            "type": "user",
            "sessionId": sid,
            "uuid": f"{sid}-img",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": IMAGE},
                    },
                    {"type": "text", "text": "see image"},
                ],
            },
        }
    )
    return bytes(out)  # fmt: skip


def codex_rollout(n: int, turns: int) -> bytes:
    sid = f"019d0000-0000-7000-8000-{n:012d}"
    out = bytearray(
        _j(
            {
                "timestamp": "2026-04-08T14:03:02.439Z",
                "type": "session_meta",
                "payload": {"id": sid, "cwd": "/srv/app", "cli_version": "0.118.0"},
            }
        )
    )
    ts = "2026-04-08T14:03:05.000Z"
    for t in range(turns):
        text = f"Check the design of part {t} 检查设计"
        out += _j(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            }
        )
        out += _j(
            {
                "timestamp": ts,
                "type": "event_msg",
                "payload": {"type": "user_message", "message": text},
            }
        )
        out += _j(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "**Planning** the review"}],
                    "encrypted_content": "gAAAA" + "x" * 800,
                },
            }
        )
        out += _j(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": f"call_{n}_{t}",
                    "arguments": json.dumps({"command": ["bash", "-lc", f"rg part{t}"]}),
                },
            }
        )
        out += _j(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "function_call_output",
                    "call_id": f"call_{n}_{t}",
                    "output": json.dumps({"output": OUTPUT, "metadata": {"exit_code": 0}}),
                },
            }
        )
        out += _j(
            {
                "timestamp": ts,
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {"total_token_usage": {"input_tokens": 100 * t}},
                },
            }
        )
        out += _j(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Reviewed."}],
                },
            }
        )
    return bytes(out)  # fmt: skip


def lines_of(data: bytes) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    while (end := data.find(b"\n", offset)) >= 0:
        out.append((offset, data[offset:end]))
        offset = end + 1
    return out


def baseline(files: list[bytes]) -> float:
    start = time.perf_counter()
    for data in files:
        for _offset, line in lines_of(data):
            msgspec.json.decode(line)
    return time.perf_counter() - start


def parse_all(layout: str, agent: str, files: list[bytes]) -> tuple[float, int]:
    records = 0
    start = time.perf_counter()
    for i, data in enumerate(files):
        path = f"f{i}.jsonl"
        source = SourceInfo(source=f"{agent}:r:{path}", agent=agent, root="/r", path=path,
                            layout=layout)  # fmt: skip
        state: dict[str, Any] = {}
        for offset, line in lines_of(data):
            records += len(parse.parse_line(source, state, line, offset, 0).records)
    return time.perf_counter() - start, records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (a few seconds)")
    ap.add_argument("--sessions", type=int, default=None)
    args = ap.parse_args()
    sessions = args.sessions or (20 if args.quick else 200)
    turns = 30
    for agent, layout, make in (
        ("claude", "claude.session", claude_session),
        ("codex", "codex.rollout", codex_rollout),
    ):
        files = [make(n, turns) for n in range(sessions)]
        size = sum(len(f) for f in files) / 1e6
        base = min(baseline(files) for _ in range(3))
        took, records = min(parse_all(layout, agent, files) for _ in range(3))
        print(
            f"{agent:7} {size:7.1f} MB  parse {size / took:7.1f} MB/s  {records / took:9.0f} rec/s"
            f"  baseline decode {size / base:7.1f} MB/s  ratio {took / base:5.2f}"
        )


if __name__ == "__main__":
    main()
