"""Running the dashboard server: bind, announce, record server.json, clean up.

Promises:
- Binds loopback unless `allow_remote` is given; a non-loopback host without it is refused
  before anything is bound.
- A fresh token per run (`secrets.token_urlsafe(32)`); the session cookie value is a
  separate random id, so the token itself never sits in a cookie jar.
- Prints exactly one line (the URL with the token) to stdout, writes `<home>/server.json`
  with mode 0600 ({url, port, pid, token}) and removes it on exit, if it is still ours.
- No access log: query strings hold search words and the token.
- While it runs, the home is kept captured by the shared capture loop (one process per
  home captures; see cli/services/capture/loop.py), unless `capture=False`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from cli.services.config import Home
from cli.services.errors import Failure
from cli.web.guard import loopback_hosts


class ServeError(Failure):
    """The server cannot start as asked."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP lets asyncio set TCP_NODELAY on accepted connections; without it,
    # keep-alive responses wait ~40 ms for delayed ACKs (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot bind {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock


def write_server_json(path: Path, info: dict[str, Any]) -> None:
    from eventlog.files import write_atomic

    write_atomic(path, json.dumps(info).encode(), mode=0o600, fsync=False)


def remove_server_json(path: Path, pid: int) -> None:
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == pid:
            path.unlink()


def serve(home: Home, host: str = "127.0.0.1", port: int = 0, allow_remote: bool = False,
          *, capture: bool = True, header_timeout: float | None = None) -> None:
    """Serve until interrupted (SIGINT/SIGTERM); with `capture`, run the home's capture
    loop (cli/services/capture/loop.py) in a thread meanwhile. A connection whose request headers do
    not arrive within `header_timeout` seconds is closed (`cli.web.slow`).

    Our signal handlers only ask the server to exit (they never raise): a Ctrl-C that lands
    anywhere in start-up, before uvicorn installs its own handlers, ends the run as cleanly
    as one that lands while serving.
    """
    stop = _StopRequest()
    previous = {sig: signal.signal(sig, stop.handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    loop = None
    try:
        if capture:
            from cli.services.capture.loop import CaptureLoop

            if home.has_log():
                # Open it for writing now: opened read-only by a request first, the capture
                # loop's writable open would have to close that environment under the request.
                home.log()
            loop = CaptureLoop(home).start()
        _serve(home, host, port, allow_remote, stop, header_timeout)
    finally:
        if loop is not None:
            loop.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(home: Home, host: str, port: int, allow_remote: bool, stop: _StopRequest,
           header_timeout: float | None = None) -> None:
    import uvicorn

    from cli.web import slow
    from cli.web.app import create_app

    if not is_loopback(host) and not allow_remote:
        raise ServeError(
            f"refusing to listen on non-loopback host {host!r}: the history is private "
            "(pass --allow-remote to do it anyway)"
        )
    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    allowed = loopback_hosts(port)
    any_host = False
    if not is_loopback(host):
        allowed.add(f"{url_host(host)}:{port}")
        any_host = host in ("0.0.0.0", "::")
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else url_host(host)
    if shown == "localhost":
        shown = "127.0.0.1"
    url = f"http://{shown}:{port}/"
    app = create_app(home, token=token, session=secrets.token_urlsafe(32), port=port,
                     allowed_hosts=allowed, any_host=any_host)
    home.root.mkdir(parents=True, exist_ok=True)
    info_path = home.root / "server.json"
    pid = os.getpid()
    write_server_json(info_path, {"url": url, "port": port, "pid": pid, "token": token})
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            server_header=False,
                            http=slow.protocol(header_timeout or slow.HEADER_TIMEOUT_S))
    server = uvicorn.Server(config)
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal with the
    # handlers it found (ours, which only set should_exit again), so run() returns normally
    # and server.json is removed.
    stop.server = server
    try:
        sys.stdout.write(f"{url}?token={token}\n")
        sys.stdout.flush()
        if not stop.requested:
            server.run(sockets=[sock])
    finally:
        remove_server_json(info_path, pid)
        sock.close()


class _StopRequest:
    """A SIGINT/SIGTERM seen by `serve`: remembered, and passed on to the server once it
    exists (uvicorn checks `should_exit` before and while it serves)."""

    def __init__(self) -> None:
        self.requested = False
        self.server: Any = None

    def handle(self, signum: int, frame: Any) -> None:
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True
