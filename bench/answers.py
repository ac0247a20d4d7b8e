"""Benchmark of the answer machinery's own overhead, against bare process spawns in the same run.

No real model runs: fake `codex` and `claude` binaries (tests/answer_fakes.py) answer at once,
so what is measured is agentlog's part of an answer.

Prints:
- prompt build + result validation for eight hits, in microseconds (pure Python);
- `answer()` end to end with the fake codex (app-server probe + one exec), median ms;
- the same with codex exhausted, so the answer comes from the fake claude after a skipped
  probe (two probes + one run), median ms;
- the baseline: the median ms of spawning the same fake interpreter script with no work,
  and the ratio answer / (spawns it needs), which shows the overhead beyond process starts.

Usage: .venv/bin/python bench/answers.py [--quick] [--reps R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cli.services.answers import answer  # noqa: E402
from cli.services.answers.prompt import build  # noqa: E402
from cli.services.answers.result import validate  # noqa: E402
from cli.services.config import Home  # noqa: E402
from tests.answer_fakes import Fakes  # noqa: E402


def hits(n: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"message:{i}",
            "kind": "message",
            "agent": "codex",
            "at": 1_790_000_000_000 + i,
            "snippet": ("we chose LMDB for the append-only event log " * 8)[:320],
            "sourceLink": f"/api/history/message%3A{i}",
        }
        for i in range(1, n + 1)
    ]


def median_ms(fn: object, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    reps = args.reps or (5 if args.quick else 20)

    top = hits(10)
    text = "LMDB [message:1] and [message:2, message:3]."
    n_pure = 200 if args.quick else 2000
    t = time.perf_counter()
    for _ in range(n_pure):
        p = build("why lmdb", top)
        validate(text, p.hits, "codex", "gpt-6-luna")
    pure_us = (time.perf_counter() - t) / n_pure * 1e6

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fakes = Fakes(root)
        os.environ.update(fakes.env())
        home_dir = root / "home"
        home_dir.mkdir()
        home = Home(home_dir)
        fakes.set("codex", text="LMDB [{first_id}].")
        fakes.set("claude", text="LMDB [{first_id}].")

        def one() -> None:
            out = answer(home, "why lmdb", top)
            assert "error" not in out, out

        codex_ms = median_ms(one, reps)
        fakes.set(
            "codex",
            limits={"rateLimits": {"primary": {"usedPercent": 100}}, "ordinaryUsageAllowed": None},
        )
        skip_ms = median_ms(one, reps)

        bare = [str(fakes.bin / "opencode"), "nothing"]

        def spawn() -> None:
            subprocess.run(bare, stdin=subprocess.DEVNULL, capture_output=True, check=False)

        spawn_ms = median_ms(spawn, reps)

    print(f"prompt build + validate (8 hits): {pure_us:.1f} us")
    print(f"answer() via fake codex (probe + run): {codex_ms:.1f} ms median of {reps}")
    print(f"answer() codex exhausted -> fake claude (2 probes + run): {skip_ms:.1f} ms")
    print(f"baseline: one bare spawn of the fake script: {spawn_ms:.1f} ms")
    print(f"ratio codex path / 2 spawns: {codex_ms / (2 * spawn_ms):.2f}")
    print(f"ratio fallback path / 3 spawns: {skip_ms / (3 * spawn_ms):.2f}")


if __name__ == "__main__":
    main()
