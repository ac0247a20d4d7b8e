"""Benchmark of `agentlog browse`: a keystroke to the results of the new query drawn.

    .venv/bin/python bench/tui.py --quick   # ~600 files, ~20 MB of history
    .venv/bin/python bench/tui.py           # ~6,000 files, ~250 MB
    .venv/bin/python bench/tui.py --gb      # ~6,000 files + one big session, ~1 GB

Writes a synthetic home (bench/capture.py's Claude Code, Codex and opencode files), captures
it with a real `agentlog capture` (and `agentlog reindex`: the common words' ranking lists),
then drives the browser headless (Textual's pilot, the
real app, search in its worker thread) and types queries one key every `--gap` seconds
(0.1 s, a fast typist; the app is not waited for): for each key, the wall time from the key
event to the results table showing the answer to the query as typed so far, or to a later
prefix of it when typing overtook the search (`BrowseApp.shown`; a labelled first page of
the newest matches, drawn while a slow full ranking runs, counts), and to the full
ranking's answer drawn. Prints p50, p95 and max over all keystrokes, with no filter and
with the agent filter, and the load average (the goal: p95 <= 100 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import time
from pathlib import Path

from common import load_average, pct, workdir

_HERE = Path(__file__).resolve().parent
import capture  # noqa: E402  (takes bench/ off the path: bench/mcp.py shadows the SDK)

sys.path.insert(0, str(_HERE.parent))

QUERIES = ("refactor parser", "lmdb cursor error", "session index", "restore function test",
           "tick", "query file")


async def _type(app: object, queries: tuple[str, ...], agent: str | None,
                gap: float) -> tuple[list[float], list[float], list[str]]:
    """Type each query one key every `gap` seconds (not waiting for the app); for each key,
    the time until the results drawn answer that query or a later one (a first page of the
    newest matches counts), and until the full ranking's answer is drawn."""
    from textual import events
    from textual.widgets import Input, Select

    from cli.tui.app import BrowseApp

    assert isinstance(app, BrowseApp)
    times: list[float] = []
    exact: list[float] = []
    typed: list[str] = []  # the query as typed at each key
    drawn: list[tuple[float, str, bool]] = []  # (when, query, a first page only)
    shown = app._show_rows

    changed = asyncio.Event()  # a drawing happened (the spy runs on the app's loop)

    def spy(rows: object) -> None:
        shown(rows)  # type: ignore[arg-type]
        if app.shown is not None:
            drawn.append((time.perf_counter(), app.shown[0], app.shown_partial))
            changed.set()

    app._show_rows = spy  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        if agent is not None:
            app.query_one("#agent", Select).value = agent
        for query in queries:
            app.query_one("#query", Input).value = ""
            await pilot.pause(1.0)  # the preview of the last query drawn, as a reader waits
            sent: list[tuple[float, int]] = []
            for i, key in enumerate(query):
                name = "space" if key == " " else key
                ev = events.Key(name, key)
                ev.set_sender(app)
                sent.append((time.perf_counter(), i))
                app._driver.send_message(ev)  # type: ignore[union-attr]
                await asyncio.sleep(gap)
            # woken by the drawing, not polling: a loop polling every millisecond took the
            # interpreter from the search thread it measures (the last key of each query ran
            # ~1.5-2x slower than the others)
            deadline = time.perf_counter() + 30
            while not drawn or drawn[-1][1:] != (query, False):
                left = deadline - time.perf_counter()
                assert left > 0, f"never drawn: {query!r}"
                changed.clear()
                if not drawn or drawn[-1][1:] != (query, False):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), left)
            for t0, i in sent:
                # the first drawing after the key that answers this prefix or a longer one
                # (a first page counts), and the first that is the full ranking's answer
                t1 = next(t for t, q, _ in drawn if t >= t0 and len(q) >= i + 1
                          and query.startswith(q))
                t2 = next(t for t, q, part in drawn if t >= t0 and len(q) >= i + 1
                          and query.startswith(q) and not part)
                times.append(t1 - t0)
                exact.append(t2 - t0)
                typed.append(query[: i + 1])
    return times, exact, typed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="~20 MB of history")
    ap.add_argument("--gb", action="store_true", help="~1 GB of history")
    ap.add_argument("--keep", type=Path, default=None, help="keep the work folder here")
    ap.add_argument("--gap", type=float, default=0.1,
                    help="seconds between keys (0.1: a fast typist)")
    ap.add_argument("--no-first-page", action="store_true",
                    help="never draw a first page while a slow full ranking runs (to compare)")
    ap.add_argument("--slowest", type=int, default=5, metavar="N",
                    help="name the N slowest keys (the query as typed) and their times")
    args = ap.parse_args()
    files, target, big = (600, 20 << 20, 0) if args.quick else (
        (6000, 250 << 20, 750) if args.gb else (6000, 250 << 20, 0))
    with workdir(args.keep, "agentlog-bench-tui-") as work:
        home = work / "home"
        if not (home / "history.db").exists():
            roots = capture.write_home(work / "src", files, target, big)
            t0 = time.perf_counter()
            capture.run_capture(home, roots, index=True)
            # the ranking lists of common words, as a home has them after `reindex`
            subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), "reindex"],
                           check=True, capture_output=True, cwd=_HERE.parent)
            print(f"home: {files} files, {target >> 20} MB (+{big} MB), captured and indexed"
                  f" in {time.perf_counter() - t0:.1f} s")
        subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), "search", "tick",
                        "--limit", "1"], check=True, capture_output=True, cwd=_HERE.parent)
        from cli.services.config import Home
        from cli.tui.app import BrowseApp
        from projections.sessions import known_projects
        from readers.registry import search_agents

        h = Home(home)
        if args.no_first_page:
            import cli.tui.app as app_module

            app_module.FIRST_AFTER = 1e6  # (a finite wait: threading refuses inf)
        for agent in (None, "claude"):
            app = BrowseApp(h, projects=known_projects(h.history_db),
                            agents=list(search_agents()))
            times, exact, typed = asyncio.run(_type(app, QUERIES, agent, args.gap))
            ms = [t * 1000 for t in times]
            full = [t * 1000 for t in exact]
            print(f"keystroke -> results drawn (agent={agent or 'any'}, {len(ms)} keys, one"
                  f" every {args.gap * 1000:.0f} ms):"
                  f" p50 {pct(ms, 50):.1f} ms, p95 {pct(ms, 95):.1f} ms, max {max(ms):.1f} ms"
                  f" (goal p95 <= 100 ms); the full ranking's answer: p50"
                  f" {pct(full, 50):.1f} ms, p95 {pct(full, 95):.1f} ms, max {max(full):.1f} ms;"
                  f" searches a newer key stopped:"
                  f" {app.interrupted}")
            slow = sorted(zip(ms, typed, strict=True), reverse=True)[: args.slowest]
            if slow:
                print("  slowest keys: " + ", ".join(f"{q!r} {t:.0f} ms" for t, q in slow))
        print(f"load average: {load_average()}")


if __name__ == "__main__":
    main()
