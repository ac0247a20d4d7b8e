"""`agentlog serve` as a real process: one URL line, server.json, raw-socket attacks, exit."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import ROOT


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    token: str
    port: int
    home: Path


def start_server(home: Path, *extra: str) -> Served:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(home), "serve", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()
    if not line:
        proc.kill()
        raise AssertionError(f"serve printed nothing: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
    parts = urlsplit(line)
    token = parts.query.removeprefix("token=")
    port = parts.port
    assert port
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the line is printed just before uvicorn starts
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.02)
    return Served(proc, line, token, port, home)


def stop(served: Served) -> int:
    served.proc.send_signal(signal.SIGTERM)
    try:
        return served.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        raise


@pytest.fixture
def served(home: Path) -> Iterator[Served]:
    s = start_server(home)
    yield s
    if s.proc.poll() is None:
        stop(s)


def raw_get(port: int, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """A request with exactly this target and these headers (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def test_one_line_and_server_json(served: Served) -> None:
    assert served.url.startswith(f"http://127.0.0.1:{served.port}/?token=")
    assert len(served.token) >= 40
    info_path = served.home / "server.json"
    assert stat.S_IMODE(info_path.stat().st_mode) == 0o600
    info = json.loads(info_path.read_text())
    assert info == {"url": f"http://127.0.0.1:{served.port}/", "port": served.port,
                    "pid": served.proc.pid, "token": served.token}
    assert stop(served) == 0
    assert not info_path.exists()
    assert served.proc.stdout is not None
    assert served.proc.stdout.read() == b""  # exactly one line on stdout


def test_fresh_token_each_run(home: Path) -> None:
    a = start_server(home)
    b = start_server(home / "other")
    try:
        assert a.token != b.token and a.port != b.port
    finally:
        stop(a)
        stop(b)


def test_auth_flow_over_the_wire(served: Served) -> None:
    host = {"Host": f"127.0.0.1:{served.port}"}
    status, headers, _ = raw_get(served.port, "/api/search?q=quokka", host)
    assert status == 403
    assert "default-src 'self'" in headers["content-security-policy"]
    status, headers, _ = raw_get(served.port, f"/?token={served.token}", host)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"].split(";")[0]
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    status, headers, body = raw_get(served.port, "/", {**host, "Cookie": cookie})
    assert status == 200 and b"/static/app.js" in body
    assert headers["x-content-type-options"] == "nosniff"
    assert "server" not in headers
    bearer = {**host, "Authorization": f"Bearer {served.token}"}
    assert raw_get(served.port, "/api/search?q=a&q=b", bearer)[0] == 400
    assert raw_get(served.port, "/api/search?q=a&nope=1", bearer)[0] == 400


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1",
                                  "localhost.evil.example:{port}"])
def test_dns_rebinding_host_refused(served: Served, host: str) -> None:
    headers = {"Host": host.format(port=served.port),
               "Authorization": f"Bearer {served.token}"}
    status, _, body = raw_get(served.port, "/", headers)
    assert status == 403 and b"host" in body


def test_foreign_origin_refused(served: Served) -> None:
    headers = {"Host": f"127.0.0.1:{served.port}", "Authorization": f"Bearer {served.token}"}
    assert raw_get(served.port, "/", {**headers, "Origin": "http://evil.example"})[0] == 403
    same = f"http://127.0.0.1:{served.port}"
    assert raw_get(served.port, "/", {**headers, "Origin": same})[0] == 200


@pytest.mark.parametrize("target", [
    "/static/../../pyproject.toml", "/static/..%2f..%2fpyproject.toml", "/../../etc/passwd",
    "/static/%2e%2e/%2e%2e/cli/main.py", "/api/runs/..%2F..%2Fetc%2Fpasswd",
    "/api/runs/../../etc/passwd", "/api/history/..%2F..%2Fetc%2Fpasswd",
    "/api/history/%2Fetc%2Fpasswd", "/api/conversations/..%2F..%2Fetc%2Fpasswd",
    "/api/decisions/..%2F..%2Fetc%2Fpasswd/history",
])
def test_path_traversal_reads_nothing(served: Served, target: str) -> None:
    headers = {"Host": f"127.0.0.1:{served.port}", "Authorization": f"Bearer {served.token}"}
    status, _, body = raw_get(served.port, target, headers)
    assert status in (400, 404), (status, body[:200])
    assert b"root:" not in body and b"[project]" not in body and b"import" not in body


def test_non_loopback_refused(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "--home", str(home), "serve", "--host", "0.0.0.0"],
        capture_output=True, timeout=30, cwd=ROOT,
    )
    assert proc.returncode != 0
    assert b"--allow-remote" in proc.stderr
    assert proc.stdout == b""
    assert not (home / "server.json").exists()


def test_port_in_use_is_a_clear_error(served: Served) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "--home", str(served.home / "b"), "serve",
         "--port", str(served.port)],
        capture_output=True, timeout=30, cwd=ROOT, env={**os.environ},
    )
    assert proc.returncode != 0 and b"cannot bind" in proc.stderr


def test_sigint_exits_cleanly(home: Path) -> None:
    s = start_server(home)
    s.proc.send_signal(signal.SIGINT)
    assert s.proc.wait(timeout=30) == 0
    assert not (home / "server.json").exists()
    assert s.proc.stderr is not None and b"Traceback" not in s.proc.stderr.read()


@pytest.mark.parametrize("delay", [0.0, 0.0, 0.01, 0.03, 0.1])
def test_sigint_during_start_up_exits_cleanly(home: Path, delay: float) -> None:
    """QA (flaky in CI): a Ctrl-C right after the URL line, before uvicorn's loop ran, printed
    a BaseEventLoop.__del__ traceback and "coroutine 'Server.serve' was never awaited"."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(home), "serve"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"http://127.0.0.1:")
    time.sleep(delay)  # only spreads the signal over start-up; nothing is timed
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    err = proc.stderr.read()
    assert b"Traceback" not in err and b"never awaited" not in err, err.decode()
    assert not (home / "server.json").exists()
