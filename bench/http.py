"""Benchmark of the HTTP API: /api/search throughput with concurrent clients.

Builds (or reuses, with --home) the same history as bench/mcp.py, starts `agentlog serve`
as a real process, and drives GET /api/search with C concurrent keep-alive clients (one
thread and one connection each) for a fixed time. Prints requests/s and latency p50/p99
per concurrency, against the baseline of `projections.query.search` called in a loop in
this process (one thread), measured in the same run.

Usage: .venv/bin/python bench/http.py [--quick] [--docs N] [--seconds S] [--home DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named like the standard library's `http`: keep its directory off the path.
_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import http.client  # noqa: E402
import importlib.util  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from urllib.parse import urlencode, urlsplit  # noqa: E402


def _bench_mcp():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_mcp", _HERE / "mcp.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def drive(port: int, token: str, paths: list[str], clients: int, seconds: float
          ) -> tuple[int, int, list[float]]:
    stop = time.monotonic() + seconds
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()

    def worker(offset: int) -> None:
        nonlocal errors
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Authorization": f"Bearer {token}", "Host": f"127.0.0.1:{port}"}
        mine: list[float] = []
        bad = 0
        i = offset
        while time.monotonic() < stop:
            t = time.perf_counter()
            conn.request("GET", paths[i % len(paths)], headers=headers)
            resp = conn.getresponse()
            resp.read()
            mine.append((time.perf_counter() - t) * 1000)
            if resp.status != 200:
                bad += 1
            i += 1
        conn.close()
        with lock:
            lat.extend(mine)
            errors += bad

    threads = [threading.Thread(target=worker, args=(k * 7,)) for k in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return len(lat), errors, lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5k docs, 2 s per concurrency")
    ap.add_argument("--docs", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--home", type=Path, default=None)
    args = ap.parse_args()
    bm = _bench_mcp()
    n = args.docs or (5_000 if args.quick else 100_000)
    seconds = args.seconds or (2.0 if args.quick else 8.0)
    tmp = tempfile.TemporaryDirectory(prefix="agentlog-bench-http-")
    home = args.home or Path(tmp.name) / "home"
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "history.db").exists():
        print(f"history: {n} messages recorded and projected in "
              f"{bm.build_history(home, n):.1f} s")
    else:
        print(f"history: reusing {home}")
    qs = bm.queries(200)
    paths = []
    for q in qs:
        params = {"q": q["query"], **q.get("filters", {})}
        if "limit" in q:
            params["limit"] = str(q["limit"])
        paths.append("/api/search?" + urlencode(params))

    # Baseline: the query API in one thread of this process, for the same time.
    from projections import query

    db = home / "history.db"
    done = 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        q = qs[done % len(qs)]
        query.search(db, q["query"], q.get("filters"), q.get("limit"))
        done += 1
    base_rps = done / seconds
    print(f"baseline query.search in-process, 1 thread: {base_rps:.0f} searches/s")

    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "--home", str(home), "serve"],
                            stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert proc.stdout is not None
        url = urlsplit(proc.stdout.readline().decode().strip())
        port, token = url.port or 0, url.query.removeprefix("token=")
        drive(port, token, paths[:20], 1, 0.5)  # warm-up
        for clients in (1, 4, 16):
            count, errors, lat = drive(port, token, paths, clients, seconds)
            lat.sort()
            rps = count / seconds
            print(f"HTTP /api/search, {clients:2d} client(s): {rps:6.0f} req/s  "
                  f"p50 {bm.percentile(lat, 50):6.2f} ms  p99 {bm.percentile(lat, 99):6.2f} ms  "
                  f"errors {errors}  ratio to baseline {rps / base_rps:.2f}x")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    tmp.cleanup()


if __name__ == "__main__":
    main()
