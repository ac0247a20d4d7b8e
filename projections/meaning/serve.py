"""The query server of an embedding projection: one process that keeps the model loaded and
answers `nearest` for a folder over a Unix socket, so a one-shot `agentlog search` asks it
(~ms) instead of loading the model and numpy (~1 s). Started by the terminal's search when
none answers (`agentlog embed --serve`); exits after `idle_s` without a question.

The socket lives in a private folder of this user (`<tmp>/agentlog-<uid>/`, mode 0700,
refused when another user owns it), named by a digest of the projection's folder (a home's
path may be longer than a socket path may be). One request a connection: a JSON line
`{"q": query, "k": k, "m": model id}`, answered by a JSON line `{"near": [[rowid, id,
similarity], ...]}` (document ids and rowids, never text), or `{"error": …}` when the server
runs another model. A server that does not answer within 2 s, or errs, is not asked again by
that process.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projections.meaning.client import TIMEOUT_S, serving, socket_path

__all__ = ["serve"]


def serve(folder: Path, idle_s: float = 900.0, spec: Mapping[str, Any] | None = None) -> int:
    """Answer with the model of `spec` until `idle_s` pass without a question; the questions
    answered. Returns 0 at once when another server holds the socket."""
    from projections.meaning.find import scan
    from projections.meaning.model import load

    path = socket_path(folder)
    if path is None or serving(folder):
        return 0
    model = load(spec)
    scan(folder, "warm", 1, model)  # the first scan loads the search kernels (find.py)
    path.unlink(missing_ok=True)
    answered = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        old = os.umask(0o177)
        try:
            srv.bind(str(path))
        finally:
            os.umask(old)
        srv.listen(16)
        srv.settimeout(idle_s)
        last = time.monotonic()
        try:
            while time.monotonic() - last < idle_s:
                try:
                    conn, _ = srv.accept()
                except TimeoutError:
                    break
                with conn:
                    conn.settimeout(TIMEOUT_S)
                    try:
                        line = conn.makefile("rb").readline(1 << 16)
                        req = json.loads(line)
                        if req.get("m") != model.id:
                            answer: dict[str, Any] = {"error": f"this server runs {model.id}"}
                        else:
                            answer = {"near": scan(folder, str(req["q"]),
                                                   max(1, min(int(req["k"]), 1000)), model)}
                        conn.sendall(json.dumps(answer).encode() + b"\n")
                        answered += 1
                    except (OSError, ValueError, KeyError, TypeError):
                        pass
                last = time.monotonic()
        finally:
            path.unlink(missing_ok=True)
    return answered
