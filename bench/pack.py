"""Benchmark of `projections.body.pack_many` on real texts, against a baseline revision.

Reads every document text of a history.db (e.g. one `bench/size.py --keep DIR` built from
../shared/corpus and ../shared/corpus-more: DIR/home-0-0/history.db), cuts them into calls
of `--call` texts in their rowid order (~60 a call in a cold capture's parse process, 1-350
in a rebuild of the corpora) and packs them with this tree's `body.py` and, with
`--baseline REV`, with that revision's (its `projections/body.py` alone, imported by path),
interleaved round by round, the order alternating. Prints CPU milliseconds (the best round:
a shared machine only ever adds time), frames, stored bytes, and whether both trees store
the same bodies.

Usage: .venv/bin/python bench/pack.py --db PATH [--baseline REV] [--call N] [--rounds N]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from projections import body, db  # noqa: E402


def texts_of(path: Path) -> list[str]:
    """Every document text of the history.db at `path`, in rowid order."""
    con = db.connect(path, readonly=True)
    try:
        return [row[0] for row in con.execute("SELECT text FROM documents ORDER BY rowid")]
    finally:
        con.close()


def baseline_body(rev: str, folder: Path) -> ModuleType:
    """`projections/body.py` of revision `rev`, imported by path under another name."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:projections/body.py"],
                         check=True, capture_output=True, text=True).stdout
    path = folder / "baseline_body.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_body", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stored_bytes(bodies: list[list[str | bytes]]) -> tuple[int, int]:
    """(frames, bytes stored: a frame's length, a text's UTF-8 length)."""
    frames = size = 0
    for call in bodies:
        for b in call:
            if isinstance(b, bytes):
                frames += 1
                size += len(b)
            else:
                size += len(b.encode("utf-8", "surrogatepass"))
    return frames, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--baseline", default=None, metavar="REV")
    ap.add_argument("--call", type=int, default=60, help="texts per pack_many call")
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args()
    texts = texts_of(args.db)
    calls = [texts[i:i + args.call] for i in range(0, len(texts), args.call)]
    with tempfile.TemporaryDirectory() as tmp:
        trees: dict[str, ModuleType] = {"this tree": body}
        if args.baseline:
            trees[args.baseline[:10]] = baseline_body(args.baseline, Path(tmp))
        out = {name: [mod.pack_many(c) for c in calls] for name, mod in trees.items()}
        best = dict.fromkeys(trees, float("inf"))
        for r in range(args.rounds):
            for name, mod in (list(trees.items()) if r % 2 == 0 else reversed(trees.items())):
                pack_many = mod.pack_many
                t0 = time.process_time()
                for c in calls:
                    pack_many(c)
                best[name] = min(best[name], time.process_time() - t0)
    raw = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    print(f"{len(texts):,} texts, {raw:,} bytes of UTF-8, {len(calls):,} calls of "
          f"<= {args.call}; CPU: the best of {args.rounds} rounds")
    first = next(iter(trees))
    for name in trees:
        frames, size = stored_bytes(out[name])
        print(f"{name:12s} {best[name] * 1000:9.2f} ms  {best[name] / best[first]:5.3f}x  "
              f"frames {frames:,}  stored {size:,} B ({size / raw:.1%} of the texts)")
    if args.baseline:
        same = out[first] == out[args.baseline[:10]]
        print(f"same stored bodies: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
