"""Asking the query server of an embedding projection (`serve.py`): where its socket is,
whether it answers, and one question. Imports nothing of numpy or the model."""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

__all__ = ["ask", "serving", "socket_path"]

TIMEOUT_S = 2.0
_dead: set[str] = set()


def socket_path(folder: Path) -> Path | None:
    """Where the folder's server listens; None when the private folder is not ours."""
    base = Path(tempfile.gettempdir()) / f"agentlog-{os.getuid()}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        st = base.stat()
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    from eventlog.digest import blake2b  # (no OpenSSL on the search path)

    digest = blake2b(str(folder.resolve()).encode(), digest_size=12).hexdigest()
    return base / f"meaning-{digest}.sock"


def ask(folder: Path, query: str, k: int, model: str) -> list[tuple[int, str, float]] | None:
    """The server's answer, or None (none runs, or it failed: the caller scans itself)."""
    path = socket_path(folder)
    if path is None or str(path) in _dead or not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(TIMEOUT_S)
            s.connect(str(path))
            s.sendall(json.dumps({"q": query, "k": k, "m": model}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                part = s.recv(65536)
                if not part:
                    break
                data += part
        near = json.loads(data)["near"]
        return [(int(r), str(i), float(v)) for r, i, v in near]
    except (OSError, ValueError, KeyError, TypeError):
        _dead.add(str(path))
        return None


def serving(folder: Path) -> bool:
    """Whether a server answers for the folder now (a connect, no question)."""
    path = socket_path(folder)
    if path is None or not path.exists():
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            s.connect(str(path))
        return True
    except OSError:
        return False
