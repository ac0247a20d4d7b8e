"""MCP over real stdio answers every request: malformed lines get a JSON-RPC error."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from cli.mcp.stdio import _top_level_id, problem
from tests.conftest import ROOT

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


def _call(rid: int, arguments: str) -> str:
    head = '{"jsonrpc":"2.0","id":' + str(rid) + ',"method":"tools/call",'
    return head + '"params":{"name":"search_history","arguments":' + arguments + "}}"


class _Wire:
    def __init__(self, home: Path) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "--home", str(home), "mcp"], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ})
        self.buf = b""

    def send(self, line: str | bytes) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.p.stdin.flush()

    def recv(self, deadline_s: float = 120) -> dict[str, object]:
        """The next reply (a generous deadline: a hang fails, slowness does not)."""
        assert self.p.stdout is not None
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], deadline_s)
            assert ready, "no answer: the server dropped the request"
            chunk = os.read(fd, 65536)
            assert chunk, "server closed stdout"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        out: dict[str, object] = json.loads(line)
        return out

    def close(self) -> bytes:
        assert self.p.stdin is not None and self.p.stderr is not None
        self.p.stdin.close()
        self.p.wait(60)
        return self.p.stderr.read()


def test_every_request_is_answered(home: Path) -> None:
    wire = _Wire(home)
    try:
        wire.send(json.dumps(INIT))
        assert wire.recv()["id"] == 1
        wire.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        cases: list[tuple[str | bytes, object, int]] = [
            (_call(2, '{"query":"a\\ud800b"}'), 2, -32602),  # a valid JSON escape
            ("this is not json", None, -32700),
            (_call(4, '{"query":' + '{"a":' * 5000 + '1' + '}' * 5000 + '}'), 4, -32600),
            ('{"id":5,"foo":1}', 5, -32600),  # JSON, but not JSON-RPC
            (b'{"jsonrpc":"2.0","id":6,"method":"tools/list","x":"\xff\xfe"}', 6, -32602),
            ('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', None, -32600),
            ('{"jsonrpc":"2.0","id":[8],"method":"tools/list"}', None, -32600),
            ('{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', None, -32600),
            ('{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None, -32600),
        ]
        for line, rid, code in cases:
            wire.send(line)
            got = wire.recv()
            assert got["id"] == rid, got
            err = got["error"]
            assert isinstance(err, dict) and err["code"] == code, got
        wire.send('{"jsonrpc":"2.0","id":7,"method":"tools/list"}')  # still serving
        got = wire.recv()
        assert got["id"] == 7 and "result" in got
    finally:
        err = wire.close()
    assert b"Traceback" not in err


@pytest.mark.parametrize("line,expected", [
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', None),
    ('[1,2', (None, -32700)),
    ('{"jsonrpc":"2.0","id":"\\udc00","method":"x"}', (None, -32602)),
    ('{"jsonrpc":"2.0","id":3,"result":' + "[" * 100 + "]" * 100 + "}", (3, -32600)),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', (None, -32600)),
    ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', (None, -32600)),
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', None),
])
def test_problem(line: str, expected: tuple[object, int] | None) -> None:
    got = problem(line)
    assert (got if got is None else got[:2]) == expected


def test_top_level_id_ignores_nested_ids() -> None:
    deep = '{"params":' + '{"id":' * 3000 + '1' + '}' * 3000 + ', "id" : "x"}'
    assert _top_level_id(deep) == "x"
