"""A real, throwaway PostgreSQL server for tests and benchmarks (initdb + pg_ctl in a temp dir).

PostgreSQL refuses to run as root; when we are root the server runs as the `postgres` system
user (Debian's package creates it), else `nobody`, through `runuser`. The data directory
lives in a fresh temporary directory owned by that user; the server listens on 127.0.0.1 at
a free port with scram-sha-256 password authentication, so tests exercise real roles and
passwords. `find_bin()` says why a server cannot start (the caller skips, or fails under CI).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "agentlog_admin"
PASSWORD = "admin-secret-pw"


def find_bin() -> tuple[Path | None, str]:
    """(directory of initdb/pg_ctl, reason when missing)."""
    env = os.environ.get("AGENTLOG_PG_BIN")
    candidates = [env] if env else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).parent))
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c), ""
    return None, ("PostgreSQL server binaries (initdb, pg_ctl) not found;"
                  " run scripts/install-postgres.sh")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) exists")


@dataclass
class PgServer:
    bindir: Path
    root: Path
    port: int
    user: str | None

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    def url(self, user: str = SUPERUSER, password: str | None = PASSWORD,
            dbname: str = "postgres") -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}"

    def _cmd(self, *args: str) -> list[str]:
        base = [str(self.bindir / args[0]), *args[1:]]
        return ["runuser", "-u", self.user, "--", *base] if self.user else base

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self._cmd("pg_ctl", "-D", str(self.datadir), *args),
                              capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> None:
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port}"
                f" -c unix_socket_directories={self.root} -c fsync=off"
                " -c full_page_writes=off -c shared_buffers=64MB -c max_connections=60")
        self._ctl("-w", "-t", "60", "-l", str(self.root / "server.log"), "-o", opts, "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-w", "-t", "60", "-m", mode, "stop", check=False)

    def running(self) -> bool:
        return self._ctl("status", check=False).returncode == 0

    def createdb(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(dbname=name)

    def destroy(self) -> None:
        if self.running():
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def start_server(bindir: Path) -> PgServer:
    """initdb a new cluster in a temp dir and start it; the caller calls `destroy()`."""
    user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="agentlog-pg-"))
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if user is not None:
        ent = pwd.getpwnam(user)
        for p in (root, pwfile):
            os.chown(p, ent.pw_uid, ent.pw_gid)
    root.chmod(0o700)
    server = PgServer(bindir, root, _free_port(), user)
    subprocess.run(
        server._cmd("initdb", "-D", str(server.datadir), "-U", SUPERUSER, "--pwfile", str(pwfile),
                    "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8", "-N"),
        capture_output=True, text=True, check=True, timeout=300)
    pwfile.unlink()
    for _attempt in range(3):
        try:
            server.start()
            return server
        except subprocess.CalledProcessError:
            server.port = _free_port()  # lost a race for the port: try another
            time.sleep(0.2)
    server.start()
    return server
