"""`agentlog serve` closes a connection whose request headers do not arrive in time."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.test_http_server import raw_get, start_server, stop


def _closed_by_server(sock: socket.socket, deadline_s: float) -> bool:
    """Poll until the server closes `sock` (recv returns b"") or the deadline passes."""
    sock.settimeout(0.5)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True
    return False


def test_slow_headers_are_cut_off(home: Path) -> None:
    served = start_server(home, "--header-timeout", "1")
    try:
        silent = socket.create_connection(("127.0.0.1", served.port))
        dribble = socket.create_connection(("127.0.0.1", served.port))
        dribble.sendall(b"GET /api/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert _closed_by_server(silent, 60), "a connection that sent nothing stayed open"
        end, closed = time.monotonic() + 60, False
        while time.monotonic() < end and not closed:  # one header line now and then
            try:
                dribble.sendall(b"X-Slow: 1\r\n")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            closed = _closed_by_server(dribble, 0.5)
        assert closed, "a connection dribbling header lines stayed open"
        status, _, _ = raw_get(served.port, "/api/coverage",
                               {"Host": f"127.0.0.1:{served.port}",
                                "Authorization": f"Bearer {served.token}"})
        assert status == 200  # whole requests are still served
    finally:
        stop(served)
