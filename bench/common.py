"""What the bench scripts share (no measurement of its own): the tree's root, a baseline
revision's tree, venvs with agentlog or claude-session-search installed, child CPU time,
percentiles, the load average, the work folder (temporary, or kept with --keep), and an
embedding projection of random vectors.

Import it from a script in bench/ run directly (`sys.path[0]` is bench/). A script that
takes bench/ off its path (bench/http.py and bench/mcp.py shadow the standard library and
the SDK) or runs a worker with another tree first on the path imports it where bench/ is
on the path again.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def export_rev(rev: str, dest: Path) -> Path:
    """The tree of git revision `rev` (a baseline) in `dest` (emptied first)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    # its bytecode now, as an install has it: else, with PYTHONDONTWRITEBYTECODE set, every
    # process of the baseline compiles its modules again (~0.1 s each) and the ratio flatters
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest)], check=True,
                   stdout=subprocess.DEVNULL)
    return dest


def install_agentlog(venv: Path, tree: Path = ROOT) -> Path:
    """agentlog as a user gets it: a plain (not editable) install of `tree` in a venv."""
    if not (venv / "bin" / "agentlog").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(tree)],
                       check=True, capture_output=True, timeout=900)
    return venv


def css_query(head: int | None = None) -> str:
    """`python -c` code of claude-session-search's query (`cc_search.server.api_search`) of
    argv[1], printing its JSON answer (only the first `head` characters when given)."""
    cut = "" if head is None else f"[:{head}]"
    return ("import json, sys; from cc_search import server;"
            f" print(json.dumps(server.api_search({{'q': sys.argv[1]}})){cut})")


def install_css(venv: Path, timeout: float = 600) -> Path | None:
    """claude-session-search from PyPI in a venv (kept when it is already there): its
    python; None, the reason printed, when it cannot be installed (its column is skipped)."""
    py = venv / "bin" / "python"
    if py.exists():
        return py
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "claude-session-search"],
                       check=True, capture_output=True, timeout=timeout)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"  claude-session-search could not be installed ({exc}): its column is skipped")
        return None
    return py


def children() -> tuple[float, int]:
    """CPU seconds (user + system) of every child waited for so far, and the largest
    child's peak RSS in KiB: take the difference around a run."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def pct(values: list[float], p: float) -> float:
    """The `p`th percentile (nearest rank) of `values`."""
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, e.g. "3.1 2.4 1.9"."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


@contextlib.contextmanager
def workdir(keep: Path | None, prefix: str) -> Iterator[Path]:
    """The work folder: `keep` (created, left in place), else a temporary one removed at
    the end."""
    work = keep or Path(tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    try:
        yield work
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def pg_parser() -> argparse.ArgumentParser:
    """The options both PostgreSQL benches take: --quick, --docs, --queries, --url, --keep."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--url", default=None, help="an existing server (superuser) instead")
    ap.add_argument("--keep", action="store_true", help="leave the server running (debugging)")
    return ap


def pg_start(url: str | None, who: str) -> tuple[str, Any]:
    """(URL, server): `url` as given (an existing server), else a throwaway server started
    with initdb + pg_ctl (tests/pgserver.py) and a database "bench" in it; exits saying why
    when PostgreSQL's binaries are not found. End it with `pg_stop`."""
    if url is not None:
        return url, None
    from tests.pgserver import find_bin, start_server

    bindir, why = find_bin()
    if bindir is None:
        sys.exit(f"{who}: {why}")
    server = start_server(bindir)
    return server.createdb("bench"), server


def pg_stop(server: Any, keep: bool) -> None:
    """Remove the throwaway server of `pg_start`, or say where it stays (`keep`)."""
    if server is None:
        return
    if keep:
        print(f"kept: {server.url(dbname='bench')} (stop: pg_ctl -D {server.datadir} stop)")
    else:
        server.destroy()


def random_projection(folder: Path, rows: int, docs: list[tuple[int, str]]) -> None:
    """`folder` made an embedding projection of `rows` chunks of random unit vectors under
    the default model's id, chunk i belonging to document docs[i % len(docs)] (rowid, id),
    every one of `docs` marked read (what the search latency at a size is timed on)."""
    import numpy as np

    from projections import meaning
    from projections.meaning.store import Store

    meaning.drop(folder)
    store = Store.writable(folder, meaning.model_id())
    rng = np.random.default_rng(7)
    while store.count < rows:
        n = min(50_000, rows - store.count)
        v = rng.standard_normal((n, 512), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        store.append([docs[(store.count + i) % len(docs)] for i in range(n)], v,
                     max(r for r, _ in docs))
    store.close()
