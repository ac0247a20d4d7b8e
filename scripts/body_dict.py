"""Train history.db's body dictionary (projections/body.dict) from this project's own text.

The dictionary is trained ONCE and committed; `projections/body.py` pins its id and SHA-256,
and every compressed body names the id in its zstd frame header. Never retrain it in place:
a file's bodies must stay decodable, so a new dictionary gets a new id and the old one stays
loadable (see body.py). The samples are the docs and Python sources of one git revision of
this repository (never transcripts: a dictionary holds pieces of its samples verbatim), cut
into 1 KiB pieces — the size of most stored texts — so the same revision gives the same bytes.

Usage: python scripts/body_dict.py REV OUT      (the shipped file: REV = 8269a1a)
"""

from __future__ import annotations

import subprocess
import sys

import zstandard

SIZE = 8192  # 4-16 KiB measured alike; 8 KiB was the fastest on both corpora
PIECE = 1024
# In zstd's private range (32768 .. 2**31 - 1) and below 65536, so a frame names it in 2 bytes.
DICT_ID = 32768 + 22


def samples(rev: str) -> list[bytes]:
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev], check=True, capture_output=True, text=True
    ).stdout.split()
    chosen = sorted(n for n in names if n == "README.md" or (n.startswith("docs/") and n.endswith(
        ".md")) or (n.endswith(".py") and n.split("/")[0] in ("eventlog", "projections",
                                                                "readers", "cli")))
    out: list[bytes] = []
    for name in chosen:
        data = subprocess.run(["git", "show", f"{rev}:{name}"], check=True,
                              capture_output=True).stdout
        out += [data[i:i + PIECE] for i in range(0, len(data), PIECE)]
    return out


def main() -> None:
    rev, out = sys.argv[1], sys.argv[2]
    d = zstandard.train_dictionary(SIZE, samples(rev), level=1, threads=1,
                                 dict_id=DICT_ID)
    with open(out, "wb") as f:
        f.write(d.as_bytes())
    print(f"{out}: {len(d.as_bytes())} bytes, dict id {d.dict_id()}")


if __name__ == "__main__":
    main()
